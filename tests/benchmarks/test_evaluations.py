"""benchmarks/evaluations.py at smoke size: golden and scenario evaluations against plain turns."""

from __future__ import annotations

import pytest

from tests.benchmarks.conftest import RunBenchmark, backend_arguments


@pytest.mark.slow
def test_evaluations_benchmark_prints_its_ratios(run_benchmark: RunBenchmark) -> None:
    out = run_benchmark("evaluations", "--evaluations", "6", "--scenarios", "4", "--parallelism", "1", "2",
                        "--baseline-evaluations", "4", *backend_arguments())
    assert "seconds per evaluation ÷ baseline" in out
    assert "baseline: plain turns, one at a time" in out and "baseline: the same inputs as plain turns" in out
    assert "| sqlite | 2 |" in out
