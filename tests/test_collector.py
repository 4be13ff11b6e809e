"""The collector in a command's own process: paused for start-up, what start-up and each service build made
frozen afterwards, running again for the command's own work (``convener.collector``); untouched anywhere else.

Freezing is process-wide and cannot be undone for what it froze, so the command's cases run in a fresh
interpreter."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from convener import collector
from convener.built_once import BuiltOnce

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import gc, json, sys
from convener import collector
from convener.built_once import BuiltOnce
seen = {}
collector.start_up()
seen["paused for start-up"] = not gc.isenabled()
collector.started()
seen["running after start-up"] = gc.isenabled()
seen["start-up frozen"] = gc.get_freeze_count() > 0
before = gc.get_freeze_count()
built = BuiltOnce()
def build():
    seen["paused while building"] = not gc.isenabled()
    return [[index] for index in range(1000)]  # containers: tracked by the collector
built.get("service", build)
seen["build frozen"] = gc.get_freeze_count() >= before + 1000
seen["running after the build"] = gc.isenabled()
collector.started()  # a second call changes nothing
seen["still running"] = gc.isenabled()
print(json.dumps(seen))
"""


def test_a_command_process_pauses_the_collector_for_start_up_and_builds_then_freezes_what_they_made() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    completed = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr[-2000:]
    seen = json.loads(completed.stdout.strip().splitlines()[-1])
    assert seen == {key: True for key in seen} and len(seen) == 7, seen


def test_a_real_command_leaves_the_collector_running(tmp_path: Path) -> None:
    """`convener jobs` (opens the store, lists nothing) as its own process: the collector runs again at the end."""
    probe = ("import gc, runpy, sys\nsys.argv = ['convener', 'jobs']\n"
             "try:\n    runpy.run_module('convener', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(gc.isenabled(), gc.get_freeze_count() > 0)")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONVENER_")}
    env.update(CONVENER_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT / "src"))
    completed = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.strip().splitlines()[-1] == "True True"


def test_in_a_process_that_imports_convener_nothing_is_paused_or_frozen() -> None:
    """As in these tests, where services are opened and closed by the thousand: nothing may be frozen."""
    frozen = gc.get_freeze_count()
    enabled = []
    BuiltOnce().get("service", lambda: enabled.append(gc.isenabled()))
    with collector.long_lived():
        enabled.append(gc.isenabled())
    assert enabled == [True, True] and gc.isenabled()
    assert gc.get_freeze_count() == frozen
