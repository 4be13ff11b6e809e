"""Smoke run of benchmarks/console.py: a conversation of two pages of turns, an evaluation of a dozen results in
three runs, one run each; no timings checked."""

from __future__ import annotations

import pytest

from convener.console.present import TURNS_PER_PAGE
from tests.benchmarks.conftest import RunBenchmark


@pytest.mark.slow
def test_the_console_benchmark_prints_its_ratios(run_benchmark: RunBenchmark) -> None:
    turns = TURNS_PER_PAGE + 5
    output = run_benchmark("console", "--turns", str(turns), "--results", "12", "--run-results", "5",
                           "--evaluations", "3", "--repeat", "1")
    assert "load average" in output and "page/floor" in output
    assert f"\n{turns:>6} " in output
    assert "an evaluation of 12 results in 3 runs, among 3 evaluations" in output
    for page in ("evaluation", "results, halfway", "run", "compare"):
        assert f"{page:>20} " in output, page
