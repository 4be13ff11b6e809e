"""benchmarks/job_engines.py at smoke size: procrastinate on PostgreSQL against Celery on Redis."""

from __future__ import annotations

import pytest

from tests.benchmarks.conftest import POSTGRES_URL, RunBenchmark


@pytest.mark.slow
@pytest.mark.skipif(not POSTGRES_URL, reason="the procrastinate engine needs PostgreSQL (CONVENER_TEST_DATABASE_URL)")
def test_job_engines_benchmark_compares_the_engines(run_benchmark: RunBenchmark) -> None:
    out = run_benchmark("job_engines", "--jobs", "20", "--brokers", "redis")
    assert "| procrastinate (PostgreSQL) |" in out
    assert "| celery (redis) |" in out
