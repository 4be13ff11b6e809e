"""benchmarks/workers.py at smoke size: worker processes playing a run, against one worker."""

from __future__ import annotations

import pytest

from tests.benchmarks.conftest import RunBenchmark, backend_arguments


@pytest.mark.slow
def test_workers_benchmark_prints_its_speed_ups(run_benchmark: RunBenchmark) -> None:
    out = run_benchmark("workers", "--evaluations", "6", "--workers", "1", "2", "--concurrency", "2",
                        "--latency", "0.01", *backend_arguments())
    assert "speed-up over 1 worker" in out
    assert "| 1 | 2 |" in out and "1.00x" in out
