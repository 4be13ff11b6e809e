"""Smoke runs of ``benchmarks/*.py`` at tiny sizes, so a benchmark cannot rot unnoticed.

Each benchmark runs as the script it is (``make bench`` runs them so), on SQLite and, when the suite has a
PostgreSQL database, on PostgreSQL too. Nothing about timings is asserted: a smoke run checks that the
script finishes, prints its ratio lines and reports no error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POSTGRES_URL = os.environ.get("CONVENER_TEST_DATABASE_URL")
TIMEOUT_SECONDS = 300

RunBenchmark = Callable[..., str]


def backend_arguments() -> list[str]:
    """``--backend`` and ``--postgres-url`` as the suite is configured: both engines when PostgreSQL is set."""
    if POSTGRES_URL:
        return ["--backend", "both", "--postgres-url", POSTGRES_URL]
    return ["--backend", "sqlite"]


@pytest.fixture
def run_benchmark(tmp_path: Path) -> RunBenchmark:
    """Run ``benchmarks/<name>.py`` with ``arguments`` in a fresh data dir; its standard output."""

    def run(name: str, *arguments: str, timeout: float = TIMEOUT_SECONDS) -> str:
        env = {**os.environ, "CONVENER_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT / "src")}
        completed = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *arguments],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert completed.returncode == 0, f"{name}.py exited {completed.returncode}:\n{completed.stderr[-4000:]}"
        return completed.stdout

    return run
