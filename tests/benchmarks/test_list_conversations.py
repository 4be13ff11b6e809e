"""Smoke run of benchmarks/list_conversations.py: a thousand conversations, two runs a case, no timings checked."""

from __future__ import annotations

import pytest

from tests.benchmarks.conftest import RunBenchmark, backend_arguments


@pytest.mark.slow
def test_the_list_conversations_benchmark_prints_its_ratios(run_benchmark: RunBenchmark) -> None:
    # 1,000: enough for a full page of the rarest matching filter (about 5% of conversations) with the
    # budget under it, so the budget is exercised on the no-match case only.
    output = run_benchmark("list_conversations", "--count", "1000", "--repeat", "2", "--scan-rows", "600",
                           *backend_arguments())
    engines = 2 if "--backend" in backend_arguments() and "both" in backend_arguments() else 1
    assert output.count("service / raw (pages that match):") == engines
    assert output.count("tool / raw (pages that match):") == engines
    assert output.count("unindexed filter matching nothing (inputTypes:INPUT_TYPE_BLOB)") == engines
    assert output.count("scan budget 600 rows") == engines
    assert output.count("deep page / page 1:") == engines
