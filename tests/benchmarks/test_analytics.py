"""Smoke run of ``benchmarks/analytics.py``: a few questions, once each, on the suite's engines."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.conftest import RunBenchmark, backend_arguments


@pytest.mark.slow
def test_the_analytics_benchmark_prints_its_budget_and_accuracy_lines(run_benchmark: RunBenchmark) -> None:
    arguments = backend_arguments()
    output = run_benchmark("analytics", "--limit", "4", "--repeat", "1", *arguments)

    engines = ["sqlite", "postgresql"] if "both" in arguments else ["sqlite"]
    assert re.findall(r"^=== (\w+): 4 questions", output, re.MULTILINE) == engines
    assert len(re.findall(r"^offline execution accuracy through the pipeline: [\d.]+ \(\d+/4\)$", output,
                          re.MULTILINE)) == len(engines)
    per_question = re.findall(r"^ +[\d.]+ ms  budget +[\d.]+ ms \( *[\d.]+ ms direct, +\d+x\)  (within|OVER)",
                              output, re.MULTILINE)
    assert per_question
    assert len(re.findall(r"^pipeline per question: median [\d.]+ ms, p90 [\d.]+ ms; the same SQL on DuckDB: "
                          r"median [\d.]+ ms", output, re.MULTILINE)) == len(engines)
    budget_lines = re.findall(r"^budget \(DuckDB x 1.2 \+ 50 ms\): .* within budget (\d+)/(\d+) questions; "
                              r"median question (within|OVER) budget$", output, re.MULTILINE)
    assert len(budget_lines) == len(engines)
    assert all(int(within) <= int(total) for within, total, _ in budget_lines)
