"""Smoke run of benchmarks/changelogs.py: a few updates and a thousand entries, no timings checked."""

from __future__ import annotations

import pytest

from tests.benchmarks.conftest import RunBenchmark, backend_arguments


@pytest.mark.slow
def test_the_changelogs_benchmark_prints_its_ratios(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("changelogs", "--updates", "20", "--entries", "1000", "--repeat", "2", *backend_arguments())
    engines = 2 if "both" in backend_arguments() else 1
    assert output.count("recorded / not recorded:") == engines
    assert output.count("deep page / first page:") == engines
