"""The child side of :mod:`convener.analytics.sandbox`: runs one piece of generated Python over query results.

Started as ``python -I -B sandbox_child.py`` (isolated mode: no user site, no ``PYTHON*`` variables, no script
folder on ``sys.path``), in a fresh temporary folder, with an emptied environment and, where the host allows
it, in its own network and PID namespaces. It reads one JSON request on standard input, then, before any user
code runs: points file descriptor 1 at ``/dev/null`` (so nothing the code prints can corrupt the reply),
lowers its resource limits, fences itself in the kernel (Landlock and seccomp, by the fence module whose path
the request names; if that fails it writes ``<sentinel>unfenced:<why>`` and exits, running nothing), points
``sys.stdout``/``sys.stderr`` at a bounded in-memory buffer, and installs an audit hook that refuses network,
process, ``ctypes`` and out-of-bounds file operations. On a private duplicate of the original standard output
it writes ``<sentinel>started`` once it is fenced, and at the end its single reply,
``<sentinel>reply:<json>``.

Standard library only, and no import of ``convener`` (the fence module is loaded by its path, and is standard
library only too): the child must start fast and must not hand the user code anything of the host's.
"""

from __future__ import annotations

import csv
import gc
import importlib.util
import io
import itertools
import json
import os
import resource
import stat
import sys
import sysconfig
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any

FILENAME = "<analysis>"
OUTPUT_LIMIT = 20_000  # characters of captured print output
TEXT_LIMIT = 20_000  # characters of answer()
CSV_ROW_LIMIT = 10_000  # rows of show_table()
CHART_LIMIT = 4_000_000  # characters of show_chart()'s JSON
WRITTEN_FILES_LIMIT = 32  # files the code may open for writing, all inside its folder

# Audit events refused outright (prefix match): the network, other processes, signals, native code, and ways
# to loosen the limits or the guard itself.
REFUSED_PREFIXES = (
    "socket.", "subprocess.", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty",
    "pty.", "os.kill", "os.killpg", "signal.pthread_kill", "ctypes.", "resource.setrlimit",
    "resource.prlimit", "sys.addaudithook", "os.link", "os.symlink", "os.startfile", "winreg.", "_winapi.",
    "webbrowser.",
    "sqlite3.",  # SQLite opens files itself (ATTACH, VACUUM INTO), out of the hook's sight
)
# Audit events that change the file system, with the positions of their path arguments: allowed only inside
# the run's own folder.
MUTATIONS: Mapping[str, tuple[int, ...]] = {
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1), "os.chmod": (0,),
    "os.chown": (0,), "os.truncate": (0,), "os.utime": (0,), "os.chflags": (0,), "os.lchflags": (0,),
    "os.lchmod": (0,), "os.lchown": (0,), "os.setxattr": (0,), "os.removexattr": (0,),
    "shutil.rmtree": (0,), "shutil.copyfile": (1,), "shutil.copymode": (1,), "shutil.copystat": (1,),
    "shutil.copytree": (1,), "shutil.move": (0, 1), "shutil.chown": (0,),
}
# Audit events that read a folder: allowed where reading is.
READS: Mapping[str, tuple[int, ...]] = {"os.listdir": (0,), "os.scandir": (0,)}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
READABLE_FILES = frozenset({os.devnull, "/dev/urandom", "/dev/random"})


class Capture(io.TextIOBase):
    """``sys.stdout`` and ``sys.stderr`` of the user code: keeps the first ``limit`` characters, counts the
    rest, so a flood of prints costs time (bounded by the timeout) but not memory."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self._limit = limit
        self._parts: list[str] = []
        self._size = 0
        self._dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        room = self._limit - self._size
        kept = text[:room] if room > 0 else ""
        if kept:
            self._parts.append(kept)
            self._size += len(kept)
        self._dropped += len(text) - len(kept)
        return len(text)

    def text(self) -> str:
        joined = "".join(self._parts)
        if self._dropped:
            joined += f"\n[output truncated: {self._dropped} more characters not shown]"
        return joined


class Outcome:
    """What the helpers offered to the user code have recorded."""

    def __init__(self) -> None:
        self.text: str | None = None
        self.csv: str | None = None
        self.chart: str | None = None


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    sys.stdin = io.StringIO()
    reply_fd = _private_stdout()
    _set_limits(request["limits"])  # first: once fenced, no limit can be set
    why = _fence(request["fence"])
    if why is not None:
        _write_all(reply_fd, (request["sentinel"] + "unfenced:" + " ".join(why.split()) + "\n").encode())
        os._exit(3)
    # "started" lets the host tell a crash of the code from a child that could not start.
    _write_all(reply_fd, (request["sentinel"] + "started\n").encode())
    capture = Capture(OUTPUT_LIMIT)
    sys.stdout = sys.stderr = capture
    outcome = Outcome()
    namespace = _namespace(request["tables"], outcome, capture)
    _hide_native_modules()
    sys.addaudithook(_guard(request["folder"]))
    error = _execute(request["code"], namespace, request["limits"]["memory_bytes"])
    if outcome.text is None and isinstance(namespace.get("result_text"), str):
        outcome.text = namespace["result_text"][:TEXT_LIMIT]
    namespace.clear()
    gc.collect()
    reply = {"output": capture.text(), "error": error, "result_text": outcome.text,
             "result_csv": outcome.csv, "vega_chart_json": outcome.chart}
    _write_all(reply_fd, (request["sentinel"] + "reply:" + json.dumps(reply) + "\n").encode())
    os._exit(0)  # without waiting for threads or atexit handlers the code may have left behind


def _private_stdout() -> int:
    """Keeps the real standard output for the reply and sends file descriptor 1 to /dev/null, so that C-level
    writes and ``os.write(1, …)`` cannot interleave with it."""
    reply_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    return reply_fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _set_limits(limits: Mapping[str, int]) -> None:
    """The kernel-enforced part of the fence: address space, CPU seconds, file size, open files, no core."""
    cpu = limits["cpu_seconds"]
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"], limits["open_files"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Not enforced for root (the kernel exempts it); the audit hook's refusal of fork is the guard there.
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))


def _fence(spec: Mapping[str, Any]) -> str | None:
    """Puts up the kernel's fence (``convener/outside/fence.py``, loaded by its path); returns why it could
    not, or None once it stands."""
    name = "_convener_fence"
    try:
        loader = importlib.util.spec_from_file_location(name, spec["module"])
        if loader is None or loader.loader is None:
            return f"the fence module {spec['module']!r} cannot be loaded"
        module = importlib.util.module_from_spec(loader)
        sys.modules[name] = module  # dataclasses look their module up there
        loader.loader.exec_module(module)
        module.apply(module.Fence(readable=tuple(spec["readable"]), writable=tuple(spec["writable"])))
    except Exception as error:  # noqa: BLE001 - whatever stops the fence stops the run, with its reason
        return str(error) if type(error).__name__ == "Unfenced" else f"{type(error).__name__}: {error}"
    finally:
        sys.modules.pop(name, None)
    return None


def _hide_native_modules() -> None:
    """``import ctypes`` raises ImportError (which numpy, for one, expects and tolerates) rather than handing
    the code a way to poke memory; likewise the modules whose C libraries open files unaudited (SQLite, dbm).
    The audit hook refuses the ``ctypes.*`` and ``sqlite3.*`` events besides."""
    for name in ("ctypes", "_ctypes", "sqlite3", "_sqlite3", "dbm.gnu", "dbm.ndbm", "_gdbm", "_dbm"):
        sys.modules[name] = None  # type: ignore[assignment]


# --- The helpers the user code sees -------------------------------------------------------------------------


def _namespace(tables: Mapping[str, Any], outcome: Outcome, capture: Capture) -> dict[str, Any]:
    """The globals of the user code: ``tables`` (name → list of row dicts), ``schemas`` (name → {column:
    type}), and ``answer``, ``show_table`` and ``show_chart``."""

    def answer(text: object) -> None:
        """Records the natural-language result of the analysis (the last call wins)."""
        outcome.text = str(text)[:TEXT_LIMIT]

    def show_table(data: object, columns: Iterable[str] | None = None) -> None:
        """Records a table as CSV: a list of dicts, a list of rows (with ``columns``) or a dict of columns."""
        names, rows = _tabulate(_plain(data), columns)
        outcome.csv = _csv(names, rows, capture)

    def show_chart(spec: object) -> None:
        """Records a Vega-Lite spec (a dict) as the chart of the analysis."""
        if not isinstance(spec, dict):
            raise TypeError("show_chart() takes a Vega-Lite spec as a dict")
        text = json.dumps(spec, default=_jsonable)
        if len(text) > CHART_LIMIT:
            raise ValueError(f"the chart spec is {len(text)} characters long; the limit is {CHART_LIMIT}")
        outcome.chart = text

    return {
        "__name__": "__main__",
        "tables": {name: table["rows"] for name, table in tables.items()},
        "schemas": {name: {c["name"]: c["type"] for c in table["columns"]} for name, table in tables.items()},
        "answer": answer,
        "show_table": show_table,
        "show_chart": show_chart,
    }


def _jsonable(value: object) -> object:
    """numpy scalars and arrays (``tolist``), anything else as text."""
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else str(value)


def _plain(data: object) -> object:
    tolist = getattr(data, "tolist", None)
    return tolist() if callable(tolist) else data


def _tabulate(data: object, columns: Iterable[str] | None) -> tuple[list[str], Iterable[Iterable[object]]]:
    if isinstance(data, Mapping):
        names = [str(name) for name in data]
        values = [_plain(column) for column in data.values()]
        return names, itertools.zip_longest(*(v if isinstance(v, list | tuple) else [v] for v in values))
    if not isinstance(data, list | tuple):
        raise TypeError("show_table() takes a list of dicts, a list of rows or a dict of columns")
    if data and all(isinstance(row, Mapping) for row in data):
        keys = list(dict.fromkeys(key for row in data for key in row))
        return [str(k) for k in keys], ([row.get(k) for k in keys] for row in data)
    rows = [_row(_plain(row)) for row in data]
    width = max((len(row) for row in rows), default=0)
    names = list(columns) if columns is not None else [f"column_{i + 1}" for i in range(width)]
    return [str(name) for name in names], rows


def _row(row: object) -> list[object]:
    return list(row) if isinstance(row, list | tuple) else [row]


def _csv(names: list[str], rows: Iterable[Iterable[object]], capture: Capture) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names)
    for count, row in enumerate(rows):
        if count == CSV_ROW_LIMIT:
            capture.write(f"[show_table: only the first {CSV_ROW_LIMIT} rows are kept]\n")
            break
        writer.writerow(["" if value is None else _plain(value) for value in row])
    return out.getvalue()


# --- Running the code ---------------------------------------------------------------------------------------


def _execute(code: str, namespace: dict[str, Any], memory_bytes: int) -> str | None:
    """Runs the code; returns None or what went wrong, in terms of the user's own lines."""
    try:
        compiled = compile(code, FILENAME, "exec")
    except SyntaxError as error:
        return _describe_syntax(error)
    out_of_memory = False
    try:
        exec(compiled, namespace)  # noqa: S102 - running this code is the point; the process is the fence
        return None
    except SystemExit as error:
        return None if error.code in (None, 0) else f"the code exited with status {error.code}"
    except MemoryError:
        out_of_memory = True  # described below, once the traceback and its frames are released
    except BaseException as error:  # noqa: BLE001 - anything the user code raises is reported, not raised
        return _describe(error, code)
    if out_of_memory:
        namespace.clear()
        gc.collect()
    return f"ran out of memory (the limit is {memory_bytes // 2**20} MiB)"


def _describe_syntax(error: SyntaxError) -> str:
    where = f" (line {error.lineno})" if error.lineno else ""
    text = f"\n    {error.text.strip()}" if error.text else ""
    return f"SyntaxError: {error.msg}{where}{text}"


def _describe(error: BaseException, code: str) -> str:
    """The exception's last line, after the frames of the user's own code (none of the sandbox's)."""
    lines = code.splitlines()
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == FILENAME][-5:]
    shown = []
    for frame in frames:
        number = frame.lineno or 0
        source = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        shown.append(f"  line {number}, in {frame.name}: {source}")
    last = "".join(traceback.format_exception_only(type(error), error)).strip()
    head = "Traceback (most recent call last):\n" + "\n".join(shown) + "\n" if shown else ""
    return (head + last)[:4000]


# --- The audit hook -----------------------------------------------------------------------------------------


def _guard(folder: str) -> Callable[[str, tuple[Any, ...]], None]:
    """An audit hook refusing what the analysis has no business doing. It is a guard, not a sandbox: native
    code that does its own I/O (a C extension, sqlite's ATTACH) is not audited; the namespaces and the
    resource limits are the fence, this hook keeps honest mistakes and casual attempts out."""
    own = os.path.realpath(folder)
    readable = tuple(sorted({own, *_python_roots(), "/usr/share/zoneinfo"}))
    written = [0]

    def inside(path: object, roots: tuple[str, ...]) -> bool:
        real = os.path.realpath(_text(path))
        return any(real == root or real.startswith(root + os.sep) for root in roots)

    def check_open(path: object, mode: object, flags: object) -> None:
        if isinstance(path, int):
            return  # an already open descriptor: it was checked when it was opened
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and bool(flags & WRITE_FLAGS))
        real = os.path.realpath(_text(path))
        if real in READABLE_FILES:
            return
        if _is_device(real):
            raise PermissionError(f"opening the device {path!r} is not allowed in the analysis sandbox")
        if not writing:
            if not inside(path, readable):
                raise PermissionError(f"reading {path!r} is not allowed in the analysis sandbox")
        else:
            if not inside(path, (own,)):
                raise PermissionError(f"writing {path!r} is not allowed: only the current folder is writable")
            written[0] += 1
            if written[0] > WRITTEN_FILES_LIMIT:
                raise PermissionError(f"the analysis may write at most {WRITTEN_FILES_LIMIT} files")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            check_open(*args[:3])
        elif event.startswith(REFUSED_PREFIXES):
            raise PermissionError(f"{event} is not allowed in the analysis sandbox")
        elif event in MUTATIONS:
            for index in MUTATIONS[event]:
                path = args[index] if index < len(args) else None
                if path is not None and not isinstance(path, int) and not inside(path, (own,)):
                    raise PermissionError(f"{event} outside the current folder is not allowed")
        elif event in READS:
            for index in READS[event]:
                path = args[index] if index < len(args) else None
                if isinstance(path, str | bytes | os.PathLike) and _text(path) not in (":memory:", "") \
                        and not inside(path, readable):
                    raise PermissionError(f"{event} of {path!r} is not allowed in the analysis sandbox")

    return hook


def _is_device(path: str) -> bool:
    """A device node (one made with ``os.mknod``, which has no audit event, say)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISBLK(mode) or stat.S_ISCHR(mode)


def _text(path: object) -> str:
    """An audited path argument as text (str, bytes or path-like)."""
    if isinstance(path, str | bytes | os.PathLike):
        return os.fsdecode(path)
    return str(path)


def _python_roots() -> set[str]:
    """Where Python itself and its installed packages live: readable, so that imports work."""
    paths = sysconfig.get_paths()
    return {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}


if __name__ == "__main__":
    main()
