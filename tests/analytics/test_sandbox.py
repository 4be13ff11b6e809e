"""convener.analytics.sandbox: generated analysis code runs in a fenced child process. What it may do (read
its tables, print, answer, show a table or a chart, use numpy) works; what it may not (the network, the host's
files and environment, other processes, unbounded time, memory or output) fails inside the run, never in the
server."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import subprocess
import sys
import time
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from convener.analytics import charts, sandbox
from convener.analytics.sandbox import AnalysisRun, run_analysis
from convener.analytics.shapes import QueryResult, ResultColumn
from convener.api.errors import InvalidArgument, Unavailable

ORDERS = QueryResult(
    columns=(ResultColumn("region", "STRING"), ResultColumn("amount", "NUMERIC"),
             ResultColumn("day", "DATE")),
    rows=[("North", Decimal("10.5"), date(2025, 1, 1)), ("South", Decimal(20), date(2025, 1, 2)),
          ("North", Decimal(30), date(2025, 1, 3)), ("East", None, date(2025, 1, 4))],
)
TABLES = {"orders": ORDERS}


def run(code: str, **kwargs: float) -> AnalysisRun:
    return run_analysis(code, TABLES, **kwargs)  # type: ignore[arg-type]


def refused(outcome: AnalysisRun, *fragments: str) -> None:
    """The run failed with a PermissionError from the guard (or the kernel), naming the user's line."""
    assert outcome.error is not None, outcome
    assert any(fragment in outcome.error for fragment in fragments), outcome.error


def postgres_listens() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def started_sessions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sessions of the sandboxes the test starts: each sandbox leads a session of its own, which
    everything it forks stays in."""
    started: list[int] = []
    start = sandbox.start_isolated

    def recorded(argv: list[str], folder: str) -> subprocess.Popen[bytes]:
        process = start(argv, folder)
        started.append(process.pid)
        return process

    monkeypatch.setattr(sandbox, "start_isolated", recorded)
    return started


def _alive_in(sessions: list[int]) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                # /proc/<pid>/stat: pid (comm) state ppid pgrp session …; comm may hold spaces and parentheses.
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] not in ("Z", "X") and int(fields[3]) in sessions:
                    found.append(entry.name)
        except (OSError, IndexError, ValueError):
            continue
    return found


def sandbox_processes(sessions: list[int]) -> list[str]:
    """Processes alive in the sessions of the test's own sandboxes (other tests may be running sandboxes
    beside it, in other pytest-xdist workers). A killed process may take a moment to go: it gets half a
    second, well under the seconds after which the sandbox's own CPU limit would end a leaked one."""
    deadline = time.monotonic() + 0.5
    while (found := _alive_in(sessions)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return found


# --- What the code may do -----------------------------------------------------------------------------------


def test_a_mean_over_the_tables_comes_back_as_the_answer() -> None:
    code = (
        "import statistics\n"
        "amounts = [row['amount'] for row in tables['orders'] if row['amount'] is not None]\n"
        "answer(f'mean amount: {statistics.mean(amounts):.2f}')\n"
    )
    outcome = run(code)
    assert outcome == AnalysisRun(output="", error=None, result_text="mean amount: 20.17", result_csv=None,
                                  vega_chart_json=None)


def test_rows_are_json_safe_and_schemas_are_given() -> None:
    outcome = run("print(tables['orders'][0]); print(schemas['orders'])")
    assert outcome.error is None
    assert outcome.output == ("{'region': 'North', 'amount': 10.5, 'day': '2025-01-01'}\n"
                              "{'region': 'STRING', 'amount': 'NUMERIC', 'day': 'DATE'}\n")


def test_print_is_captured_and_result_text_may_be_assigned() -> None:
    outcome = run("import sys\nprint('hello')\nprint('to stderr', file=sys.stderr)\nresult_text = 'done'")
    assert outcome.output == "hello\nto stderr\n"
    assert outcome.result_text == "done"


def test_numpy_is_available() -> None:
    outcome = run("import numpy as np\n"
                  "answer(float(np.median([r['amount'] or 0 for r in tables['orders']])))")
    assert (outcome.error, outcome.result_text) == (None, "15.25")


def test_show_table_and_show_chart_round_trip() -> None:
    code = (
        "from collections import defaultdict\n"
        "totals = defaultdict(float)\n"
        "for row in tables['orders']:\n"
        "    totals[row['region']] += row['amount'] or 0\n"
        "rows = [{'region': k, 'total': v} for k, v in sorted(totals.items())]\n"
        "show_table(rows)\n"
        "show_chart({'data': {'values': rows}, 'mark': 'bar',\n"
        "            'encoding': {'x': {'field': 'region', 'type': 'nominal'},\n"
        "                         'y': {'field': 'total', 'type': 'quantitative'}}})\n"
    )
    outcome = run(code)
    assert outcome.error is None
    assert outcome.result_csv is not None and outcome.vega_chart_json is not None
    assert list(csv.reader(io.StringIO(outcome.result_csv))) == [
        ["region", "total"], ["East", "0.0"], ["North", "40.5"], ["South", "20.0"]]
    spec = json.loads(outcome.vega_chart_json)
    assert spec["data"]["values"][1] == {"region": "North", "total": 40.5}
    charts.validate_spec(spec)


def test_show_table_takes_columns_and_lists() -> None:
    outcome = run("show_table({'a': [1, 2], 'b': ['x', None]})")
    assert outcome.result_csv == "a,b\n1,x\n2,\n"
    outcome = run("show_table([(1, 2.5), (3, 4.5)], columns=['n', 'v'])")
    assert outcome.result_csv == "n,v\n1,2.5\n3,4.5\n"


def test_the_code_may_use_its_own_folder_which_is_removed_afterwards() -> None:
    code = "import os\nopen('notes.txt', 'w').write('kept')\nprint(open('notes.txt').read(), os.getcwd())"
    outcome = run(code)
    assert outcome.error is None
    text, folder = outcome.output.split()
    assert text == "kept"
    assert not Path(folder).exists()


def test_exit_zero_is_not_an_error() -> None:
    assert run("print('bye'); raise SystemExit(0)").error is None
    assert run("import sys; sys.exit(3)").error == "the code exited with status 3"


# --- Failures of the code are values ------------------------------------------------------------------------


def test_an_exception_is_reported_with_the_users_line() -> None:
    code = "def share(part, whole):\n    return part / whole\n\nprint('before')\nshare(1, 0)\n"
    outcome = run(code)
    assert outcome.output == "before\n"
    assert outcome.error == ("Traceback (most recent call last):\n"
                             "  line 5, in <module>: share(1, 0)\n"
                             "  line 2, in share: return part / whole\n"
                             "ZeroDivisionError: division by zero")
    assert "sandbox_child" not in outcome.error


def test_a_syntax_error_names_the_line() -> None:
    outcome = run("x = 1\ny = (2 +\n")
    assert outcome.error is not None and outcome.error.startswith("SyntaxError:")
    assert "line 2" in outcome.error


def test_an_infinite_loop_times_out_and_leaves_no_process(started_sessions: list[int]) -> None:
    started = time.monotonic()
    outcome = run("while True:\n    pass", timeout_seconds=1)
    assert time.monotonic() - started < 1 + 3
    assert outcome.error == "timed out after 1 s"
    assert started_sessions and sandbox_processes(started_sessions) == []


@pytest.mark.parametrize("code", [
    "x = bytearray(10**10)",
    "chunks = []\nwhile True:\n    chunks.append(bytearray(10**6))",
    "import numpy as np\nx = np.ones((50_000, 50_000))",
])
def test_memory_bombs_run_out_of_memory(code: str) -> None:
    outcome = run(code, memory_bytes=256 * 2**20)
    assert outcome.error == "ran out of memory (the limit is 256 MiB)"


def test_an_output_flood_is_truncated() -> None:
    started = time.monotonic()
    outcome = run("for i in range(300_000):\n    print('line', i)")
    assert time.monotonic() - started < 5
    assert outcome.error is None
    assert len(outcome.output) < 20_200
    assert outcome.output.startswith("line 0\nline 1\n")
    assert "[output truncated:" in outcome.output


def test_writing_to_the_raw_stdout_cannot_forge_a_reply() -> None:
    outcome = run("import os\nos.write(1, b'{\"error\": null}\\n' * 1000)\nanswer('real')")
    assert (outcome.error, outcome.result_text) == (None, "real")


# --- The fence ----------------------------------------------------------------------------------------------


def test_isolation_says_which_fence_is_active() -> None:
    assert sandbox.isolation() in (sandbox.FULL, sandbox.NAMESPACES, sandbox.GUARD_ONLY)


def test_connecting_to_postgres_fails() -> None:
    code = "import socket\nsocket.create_connection(('127.0.0.1', 5432), timeout=2)"
    refused(run(code), "socket", "Network is unreachable", "Connection refused")


def test_the_network_namespace_holds_without_the_audit_hook() -> None:
    """The kernel's fence alone: a plain Python in the namespaces cannot reach a port the host can."""
    if sandbox.isolation() == sandbox.GUARD_ONLY:
        pytest.skip("no network namespace on this machine")
    if not postgres_listens():
        pytest.skip("nothing listens on 127.0.0.1:5432 to be kept from")
    probe = ("import socket\ntry:\n    socket.create_connection(('127.0.0.1', 5432), timeout=2)\n"
             "    print('connected')\nexcept OSError as error:\n    print('refused', error.errno)")
    done = subprocess.run(sandbox.isolated_argv([sys.executable, "-I", "-c", probe]), capture_output=True,
                          text=True, timeout=20, env={}, check=False)
    assert done.stdout.startswith("refused"), done


def test_the_hosts_files_cannot_be_read() -> None:
    refused(run("print(open('/etc/passwd').read())"), "reading '/etc/passwd' is not allowed")
    refused(run(f"print(open('/proc/{os.getpid()}/environ').read())"), "is not allowed")
    refused(run("import os\nprint(os.listdir('/etc'))"), "os.listdir")
    refused(run("import convener"), "is not allowed")


def test_nothing_outside_the_folder_can_be_written_or_removed(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("intact")
    outside = str(tmp_path / "new.txt")
    refused(run(f"open({outside!r}, 'w').write('x')"), "only the current folder is writable")
    refused(run(f"import os\nos.remove({str(target)!r})"), "os.remove outside")
    refused(run(f"import shutil\nshutil.rmtree({str(tmp_path)!r})"), "outside")
    refused(run(f"import os\nos.symlink({str(target)!r}, 'link')"), "os.symlink")
    assert target.read_text() == "intact"
    assert not (tmp_path / "new.txt").exists()


def test_a_large_file_hits_the_file_size_limit() -> None:
    outcome = run("open('big.bin', 'wb').write(b'x' * (4 * 2**20))")
    assert outcome.error is not None and "File too large" in outcome.error


def test_no_process_can_be_started() -> None:
    refused(run("import subprocess\nsubprocess.run(['id'])"), "subprocess.Popen is not allowed")
    refused(run("import os\nos.system('id')"), "os.system is not allowed")
    refused(run("import os\nos.execv('/bin/sh', ['sh'])"), "os.exec")
    refused(run("import os\nos.posix_spawn('/bin/sh', ['sh'], {})"), "os.posix_spawn")
    refused(run("import ctypes"), "ctypes")


def test_a_fork_bomb_is_stopped_at_the_first_fork(started_sessions: list[int]) -> None:
    started = time.monotonic()
    outcome = run("import os\nwhile True:\n    os.fork()", timeout_seconds=5)
    assert time.monotonic() - started < 3
    refused(outcome, "os.fork is not allowed")
    refused(run("import multiprocessing\nmultiprocessing.Process(target=print).start()"), "not allowed")
    assert started_sessions and sandbox_processes(started_sessions) == []


def test_device_nodes_cannot_be_made_or_opened() -> None:
    """Without capabilities the kernel refuses mknod; without namespaces the hook refuses opening a device."""
    code = ("import os, stat\nos.mknod('mem', stat.S_IFCHR | 0o600, os.makedev(1, 1))\n"
            "open('mem', 'rb').read(16)")
    refused(run(code), "Operation not permitted", "opening the device")


def test_sqlite_which_opens_files_unaudited_is_refused() -> None:
    refused(run("import sqlite3"), "sqlite3")
    refused(run("import importlib\nimportlib.import_module('_sqlite3')"), "sqlite3")


def test_threads_left_running_do_not_hold_the_reply() -> None:
    started = time.monotonic()
    code = "import threading, time\nthreading.Thread(target=time.sleep, args=(30,)).start()\nanswer('quick')"
    outcome = run(code, timeout_seconds=10)
    assert outcome.result_text == "quick"
    assert time.monotonic() - started < 3


def test_the_servers_environment_is_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET", "hunter2-do-not-leak")
    outcome = run("import os\nprint(sorted(os.environ))\nprint(os.environ.get('SECRET'))")
    assert outcome.error is None
    assert "hunter2" not in outcome.output
    assert outcome.output.splitlines()[-1] == "None"


def test_limits_cannot_be_raised() -> None:
    refused(run("import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))"), "resource.setrlimit")


# --- Failures of the host raise -----------------------------------------------------------------------------


def test_bad_limits_are_invalid_arguments() -> None:
    with pytest.raises(InvalidArgument):
        run("pass", timeout_seconds=0)
    with pytest.raises(InvalidArgument):
        run("pass", memory_bytes=2**20)


def test_a_child_that_cannot_start_is_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "CHILD_SCRIPT", tmp_path / "missing.py")
    with pytest.raises(Unavailable, match="could not start"):
        run("pass")
