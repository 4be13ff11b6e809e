"""Smoke runs of benchmarks/adk_compare.py at tiny sizes (no timing is asserted)."""

from __future__ import annotations

import pytest

from tests.benchmarks.conftest import ROOT, RunBenchmark, backend_arguments

TINY = ["--evaluations", "4", "--warmup", "2", "--list-evaluations", "2", "--list-results", "2", "5",
        "--list-repeat", "2", "--completion-runs", "1", "50"]
ADK_PYTHON = ROOT / ".venv-adk" / "bin" / "python"


def assert_convener_rows(output: str) -> None:
    for backend in ("sqlite", "postgresql") if "--backend" in backend_arguments() and "both" in backend_arguments() \
            else ("sqlite",):
        assert f"| {backend} | " in output
    assert "list_evaluations, a page of 2 evaluations" in output
    assert "| sqlite | 5 | " in output  # the page at 5 results, with its ratio to the page at 2
    assert "| sqlite | 50 | " in output  # a result completing after 50 runs, with its ratio to after 1


@pytest.mark.slow
def test_the_convener_side_runs_without_adk(run_benchmark: RunBenchmark) -> None:
    """CI has no ADK venv: the Convener side still runs, and the ADK side says why it is skipped."""
    output = run_benchmark("adk_compare", *TINY, "--adk-python", str(ROOT / "no-such-venv" / "python"),
                           *backend_arguments())
    assert "ADK side skipped:" in output
    assert_convener_rows(output)
    assert "| skipped | skipped |" in output


@pytest.mark.slow
@pytest.mark.skipif(not ADK_PYTHON.exists(), reason="google-adk[eval] lives in .venv-adk "
                    "(make .venv-adk/.installed), not in the project's venv: its openai<3 pin conflicts")
def test_against_adk(run_benchmark: RunBenchmark) -> None:
    output = run_benchmark("adk_compare", *TINY, *backend_arguments())
    assert "ADK side skipped" not in output
    assert_convener_rows(output)
    assert "× |" in output  # the ratios to ADK's evaluations/s and whole process
