"""Smoke run of benchmarks/run_session.py at tiny sizes: it finishes and prints its ratio lines."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.conftest import POSTGRES_URL, RunBenchmark, backend_arguments


@pytest.mark.slow
def test_run_session_prints_turn_n_over_turn_1_on_each_engine(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("run_session", "--sessions", "2", "--turns", "4", "--at", "2,4", *backend_arguments())
    engines = ["sqlite", "postgresql"] if POSTGRES_URL else ["sqlite"]
    assert re.findall(r"^=== (\w+): 2 sessions x 4 turns", output, re.MULTILINE) == engines
    for layer in ("service", "tool"):
        for n in (2, 4):
            ratios = re.findall(rf"^  {layer}: turn {n} ÷ turn 1 of a session = (\d+\.\d\d)", output, re.MULTILINE)
            assert len(ratios) == len(engines) and all(float(ratio) > 0 for ratio in ratios)
    assert len(re.findall(r"^  service +[\d,]+ +[\d.]+ +[\d,]+ +1\.00$", output, re.MULTILINE)) == len(engines)
