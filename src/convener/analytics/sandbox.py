"""Generated Python analysis, run out of process.

A data agent may answer with code over the rows its queries returned ("compute the month-over-month growth").
That code is the model's, so it is treated as hostile: :func:`run_analysis` runs it in a child Python
(``sandbox_child.py``) and never in the server. The fence, from strongest to weakest:

* **Landlock and seccomp** (:mod:`convener.outside.fence`), put up by the child on itself before any of the
  code runs, and kept by everything it could start: it may read Python's own installation and the shared
  libraries, read and write its temporary folder, and nothing else on disk (not the store, not ``/proc``, not
  ``/etc``), whatever its uid; it may make no socket, bind or connect no TCP port, reach no abstract UNIX
  socket, start no process (no fork, no exec), signal no process but itself, raise no limit, and use none of
  ``ptrace``, ``mount``, ``unshare``, ``bpf``, ``io_uring`` and the like. This fence is required: when the
  kernel offers none (:func:`convener.outside.fence.missing`), or the child cannot put it up, the analysis is
  not run and the caller gets FAILED_PRECONDITION saying what is missing.
* **Namespaces and capabilities** (when ``unshare``/``setpriv`` work, see :func:`isolation`): the child has
  its own network namespace — only a downed loopback — and its own PID namespace, so it can see no host
  process and all it starts dies with it; and it holds no capability, so although it runs as root it cannot
  make device nodes, mount, chroot or raise its hard limits.
* **Resource limits** set in the child before the code runs: address space (``memory_bytes``), CPU seconds,
  1 MiB per written file, 64 open files, no core dump; plus a wall-clock deadline in the parent, which kills
  the child's whole process group. Output is bounded in the child (20,000 characters kept) and in the parent
  (:data:`REPLY_LIMIT` bytes read at most).
* **What the child is given**: an emptied environment (no variable of the server's, so no secret), a fresh
  temporary folder as its working directory, removed afterwards, and the tables as JSON on standard input.
* **An audit hook** (``sys.addaudithook``) refusing sockets, processes (fork, exec, spawn, ``os.system``,
  ``subprocess``), signals, ``ctypes``, SQLite, raising the limits, writing or deleting outside the temporary
  folder (32 files at most), opening devices, and reading outside Python's own installation. Audit hooks are a
  guard, not a sandbox: the code can switch this one off (it lives in the same interpreter), native code
  doing its own I/O is not audited, and ``os.stat`` is not either. The hook turns honest mistakes and casual
  attempts into readable errors; the kernel's fence above is what holds when it is switched off
  (``tests/security/test_sandbox_fence.py`` switches it off and tries).

The server runs as root on its machines, and dropping to an unprivileged user is not possible there (the
interpreter lives under ``/root``, mode 700); Landlock binds root as any other user, and the seccomp filter
refuses fork, which ``RLIMIT_NPROC`` (not enforced for root) cannot.

The code sees (the whole API, documented for prompts in :data:`API`): ``tables`` (name → list of row dicts,
values JSON-safe: dates and times as ISO 8601 text, decimals as floats), ``schemas`` (name → {column: type}),
``answer(text)``, ``show_table(data, columns=None)``, ``show_chart(spec)``; its ``print`` output is captured.
numpy and the standard library (``statistics``, ``math``, ``json``, ``csv``, ``datetime``, ``collections``,
``itertools``, ``decimal``…) import; pandas is not installed.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any, Literal

from convener.analytics.shapes import QueryResult
from convener.api.errors import FailedPrecondition, Internal, InvalidArgument, Unavailable
from convener.outside import fence

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
FENCE_MODULE = Path(fence.__file__)  # loaded by the child by its path: the child imports nothing of convener
# Beyond Python's installation (fence.runtime_paths): what the hook has always let the code read.
READABLE_EXTRA = ("/usr/share/zoneinfo", "/dev/urandom", "/dev/random")
FILE_BYTES = 2**20  # largest file the code may write
OPEN_FILES = 64
PROCESSES = 64
REPLY_LIMIT = 16 * 2**20  # bytes the parent reads from the child before giving up on it
MAX_TIMEOUT_SECONDS = 300.0

API = """\
tables: dict[str, list[dict]]  # the query results, by name; values are JSON-safe (dates as ISO text)
schemas: dict[str, dict[str, str]]  # name -> {column: BigQuery type}
answer(text)  # the analysis's answer, in words (or assign a str to result_text)
show_table(data, columns=None)  # a list of dicts, a list of rows (with columns) or a dict of columns
show_chart(spec)  # a Vega-Lite v5 spec, as a dict
print(...)  # captured, first 20,000 characters
"""

FULL = "network and PID namespaces without capabilities (unshare, setpriv), resource limits, audit hook"
NAMESPACES = "network and PID namespaces (unshare), resource limits, audit hook"
GUARD_ONLY = "resource limits and audit hook only (unshare is unavailable)"


@dataclass(frozen=True)
class AnalysisRun:
    """What a run of generated analysis code produced. A failure of the code is a value here, not an
    exception: the agent shows it as ``executionError`` and may try again."""

    output: str  # captured stdout and stderr, at most 20,000 characters, with a note when cut
    error: str | None  # last line of the exception after the user's own frames, or a timeout / memory note
    result_text: str | None  # from answer(text), or a str assigned to result_text
    result_csv: str | None  # from show_table(...)
    vega_chart_json: str | None  # from show_chart(spec), as JSON text


# --- Isolation shared with the chart renderer ---------------------------------------------------------------


def isolation() -> str:
    """Which fence is active on this machine: :data:`FULL`, :data:`NAMESPACES` or :data:`GUARD_ONLY`."""
    return _isolation()[0]


@cache
def _isolation() -> tuple[str, tuple[str, ...]]:
    """The strongest launcher that works here, probed once by running ``true`` through it.

    ``unshare`` gives new network and PID namespaces (it needs root, or user namespaces); ``--kill-child``
    ends the child if ``unshare`` itself is killed, and the end of the PID namespace's first process ends all
    of it. ``setpriv`` then drops every capability, so that even as root the code cannot make device nodes,
    mount, chroot or raise its hard limits, and ``--no-new-privs`` keeps it from regaining any.
    """
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    namespaces = (unshare, "--net", "--pid", "--fork", "--kill-child") if unshare else None
    no_capabilities = (setpriv, "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs") \
        if setpriv else None
    candidates = [(FULL, namespaces and no_capabilities and (*namespaces, *no_capabilities)),
                  (NAMESPACES, namespaces)]
    for name, prefix in candidates:
        if prefix and _runs([*prefix, "true"]):
            return name, prefix
    return GUARD_ONLY, ()


def _runs(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=10, env={}, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def isolated_argv(argv: Sequence[str]) -> list[str]:
    """A command line run inside the namespaces, when they are available."""
    return [*_isolation()[1], *argv]


def child_environment(folder: str) -> dict[str, str]:
    """The whole environment of a child: nothing of the server's. One thread per numeric library, so the
    address-space limit is not eaten by thread stacks."""
    return {"HOME": folder, "TMPDIR": folder, "LC_ALL": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def start_isolated(argv: Sequence[str], folder: str) -> subprocess.Popen[bytes]:
    """Starts a child in the namespaces, in its own session (so its process group can be killed whole),
    with standard error merged into standard output."""
    try:
        return subprocess.Popen(isolated_argv(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, cwd=folder, env=child_environment(folder),
                                start_new_session=True)
    except OSError as error:
        raise Unavailable(f"cannot start a sandboxed process: {error.strerror or error}") from error


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kills the child and everything in its process group, and reaps it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


def json_value(value: Any) -> Any:
    """A query value as JSON: dates and times as ISO 8601 text, decimals as floats, NaN and infinities as
    null, bytes as hex, anything else unknown as its text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return json_value(float(value))
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, list | tuple):
        return [json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    return str(value)


# --- run_analysis -------------------------------------------------------------------------------------------


def run_analysis(code: str, tables: Mapping[str, QueryResult], *, timeout_seconds: float = 10,
                 memory_bytes: int = 512 * 2**20) -> AnalysisRun:
    """Runs generated Python over ``tables`` in a fenced child process (see the module docstring).

    Never raises for a failure of the code (exception, timeout, memory, refused operation): that comes back
    in ``AnalysisRun.error``. Raises InvalidArgument for unusable limits, FailedPrecondition when the child
    cannot be fenced (nothing of the code has run then) and Unavailable/Internal when the sandbox itself
    cannot run.
    """
    if not 0 < timeout_seconds <= MAX_TIMEOUT_SECONDS:
        raise InvalidArgument(f"timeout_seconds must be in (0, {MAX_TIMEOUT_SECONDS:g}]")
    if memory_bytes < 64 * 2**20:
        raise InvalidArgument("memory_bytes must be at least 64 MiB")
    _require_fence()
    sentinel = f"\n\x00convener-analysis-{uuid.uuid4().hex}\x00"
    with tempfile.TemporaryDirectory(prefix="convener-analysis-", ignore_cleanup_errors=True) as folder:
        request = _request(code, tables, folder, sentinel, timeout_seconds, memory_bytes)
        process = start_isolated([sys.executable, "-I", "-B", str(CHILD_SCRIPT)], folder)
        try:
            raw, ending = _exchange(process, request, time.monotonic() + timeout_seconds, sentinel)
        finally:
            kill_group(process)
    return _interpret(raw, ending, sentinel, timeout_seconds, process.returncode)


def _require_fence() -> None:
    """Refuses, before anything starts, on a machine whose kernel cannot fence the child."""
    problems = fence.missing()
    if problems:
        raise FailedPrecondition("Python analysis runs only inside an operating-system fence, and this "
                                 f"machine cannot give one: {'; '.join(problems)}. The analysis was not run.")


def fence_request(folder: str) -> dict[str, Any]:
    """What the child fences itself with: this file's fence module, what it may read (Python's installation,
    the shared libraries, time zones, the random devices) and write (its folder, and ``/dev/null``)."""
    return {"module": str(FENCE_MODULE),
            "readable": [*fence.runtime_paths(), *fence.allowed(READABLE_EXTRA)],
            "writable": list(fence.allowed([folder, os.devnull]))}


def _request(code: str, tables: Mapping[str, QueryResult], folder: str, sentinel: str,
             timeout_seconds: float, memory_bytes: int) -> bytes:
    payload = {
        "code": code,
        "tables": {name: _table(result) for name, result in tables.items()},
        "folder": folder,
        "sentinel": sentinel,
        "fence": fence_request(folder),
        "limits": {"memory_bytes": memory_bytes, "cpu_seconds": math.ceil(timeout_seconds) + 1,
                   "file_bytes": FILE_BYTES, "open_files": OPEN_FILES, "processes": PROCESSES},
    }
    try:
        return json.dumps(payload).encode()
    except (TypeError, ValueError) as error:
        raise Internal(f"the tables could not be handed to the sandbox: {error}") from error


def _table(result: QueryResult) -> dict[str, Any]:
    names = [column.name for column in result.columns]
    return {"columns": [{"name": c.name, "type": c.type} for c in result.columns],
            "rows": [dict(zip(names, (json_value(v) for v in row), strict=False)) for row in result.rows]}


def _exchange(process: subprocess.Popen[bytes], request: bytes, deadline: float,
              sentinel: str) -> tuple[bytes, Literal["ended", "timeout", "overflow"]]:
    """Feeds the request (in a thread, so a child that stops reading cannot block us) and reads the child's
    output until its reply is complete or it ends, the deadline passes, or it has written more than
    :data:`REPLY_LIMIT`."""
    feeder = threading.Thread(target=_feed, args=(process, request), daemon=True)
    feeder.start()
    assert process.stdout is not None
    fd = process.stdout.fileno()
    marker = (sentinel + "reply:").encode()
    received = bytearray()
    reply_at = -1
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(received), "timeout"
            if not selector.select(left):
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return bytes(received), "ended"
            received += chunk
            if len(received) > REPLY_LIMIT:
                return bytes(received), "overflow"
            if reply_at < 0:
                reply_at = received.find(marker, max(0, len(received) - len(chunk) - len(marker)))
            if reply_at >= 0 and received.find(b"\n", reply_at + len(marker)) >= 0:
                return bytes(received), "ended"


def _feed(process: subprocess.Popen[bytes], request: bytes) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(request)
        process.stdin.close()
    except (BrokenPipeError, OSError, ValueError):
        pass  # the child died or was killed; its output tells why


def _interpret(raw: bytes, ending: str, sentinel: str, timeout_seconds: float,
               returncode: int | None) -> AnalysisRun:
    if ending == "timeout":
        return _failed(f"timed out after {timeout_seconds:g} s")
    if ending == "overflow":
        return _failed(f"the analysis wrote more than {REPLY_LIMIT // 2**20} MiB to its output streams")
    text = raw.decode("utf-8", errors="replace")
    unfenced = text.find(sentinel + "unfenced:")
    if unfenced >= 0:
        why = text[unfenced + len(sentinel + "unfenced:"):].split("\n", 1)[0].strip()[:500]
        raise FailedPrecondition(f"the analysis sandbox could not fence itself, so the analysis was not run: "
                                 f"{why}")
    if sentinel + "started" not in text:
        detail = text[-500:].strip()
        raise Unavailable(f"the analysis sandbox could not start (exit status {returncode}): {detail}")
    start = text.rfind(sentinel + "reply:")
    if start < 0:
        return _failed(f"the analysis process stopped without a result (exit status {returncode})")
    try:
        reply = json.loads(text[start + len(sentinel) + len("reply:"):])
    except ValueError:
        return _failed("the analysis process returned an unreadable result")
    return AnalysisRun(output=_text(reply.get("output")) or "", error=_text(reply.get("error")),
                       result_text=_text(reply.get("result_text")), result_csv=_text(reply.get("result_csv")),
                       vega_chart_json=_text(reply.get("vega_chart_json")))


def _failed(error: str, output: str = "") -> AnalysisRun:
    return AnalysisRun(output=output, error=error, result_text=None, result_csv=None, vega_chart_json=None)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
