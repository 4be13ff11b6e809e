"""benchmarks/judge_agreement.py at smoke size: the offline judge against the hand labels."""

from __future__ import annotations

import pytest

from tests.benchmarks.conftest import RunBenchmark


@pytest.mark.slow
def test_judge_agreement_benchmark_prints_agreement(run_benchmark: RunBenchmark) -> None:
    out = run_benchmark("judge_agreement", "--limit", "12")
    assert "== judge: offline" in out
    assert "exact" in out and "within ±1" in out
