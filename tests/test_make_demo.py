"""``make demo`` says what it does before each long step, and lets pip show its progress."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_announces_each_step_and_pip_is_not_silenced(tmp_path: Path) -> None:
    # -n prints the recipe without running it; a venv that does not exist yet makes it the first run's.
    planned = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True,
                             text=True, timeout=30, check=True).stdout.splitlines()

    def first(fragment: str) -> int:
        return next(index for index, line in enumerate(planned) if fragment in line)

    install = first('pip install --progress-bar on -e ".[dev]"')
    assert "--quiet" not in planned[install]
    assert planned[install - 2].startswith('echo "==> Installing Convener'), planned
    assert planned[first("-m venv")].endswith("/venv") and planned[first("-m venv") - 1].startswith("echo")
    assert planned[first("convener serve --demo") - 1].startswith('echo "==> Loading the demo workspace')
