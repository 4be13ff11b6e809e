"""Smoke runs of benchmarks/adk_parity.py at a tiny size (no timing is asserted; agreement is)."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.conftest import ROOT, RunBenchmark

TINY = ["--cases", "8", "--backend", "sqlite"]
ADK_PYTHON = ROOT / ".venv-adk" / "bin" / "python"


@pytest.mark.slow
def test_the_convener_side_runs_without_adk(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("adk_parity", *TINY, "--adk-python", str(ROOT / "no-such-venv" / "python"))
    assert "ADK side skipped:" in output
    for criteria in ("default", "in-order", "any-order"):
        assert re.search(rf"\| {criteria} \| 8 \| skipped \| \d+ \| skipped \| \d+ \| skipped \|", output), output


@pytest.mark.slow
@pytest.mark.skipif(not ADK_PYTHON.exists(), reason="google-adk[eval] lives in .venv-adk "
                    "(make .venv-adk/.installed), not in the project's venv: its openai<3 pin conflicts")
def test_convener_reaches_adks_verdict_on_every_case(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("adk_parity", *TINY)
    assert "ADK side skipped" not in output
    for criteria in ("default", "in-order", "any-order"):
        assert re.search(rf"\| {criteria} \| 8 \| \d+ \| \d+ \| \d+/8 \| \d+ \| 8/8 \|", output), output
    assert "| all | 24 |" in output and "24/24 (100%)" in output
    assert "disagreement" not in output
