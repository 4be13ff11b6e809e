"""Real ``convener`` processes on one store, for the tests of the job guarantees and the workers' benchmark.

A ``Fleet`` starts ``convener worker`` and ``convener serve`` processes (this checkout's source, ``python -m
convener``) on a store, each logging to a file of its own, and kills every one it started when it closes. Each
process says its worker's name when it starts (``host:pid:suffix``), so a test can tell which process holds a job.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).parents[2]
"""The checkout: its ``src`` is the processes' source, and it is their working directory (``tests`` importable)."""
STARTED = re.compile(r"convener worker (\S+) taking jobs")
SERVING = re.compile(r"Convener serving")
FINISHED = "job finished: "
STARTED_JOB = "job started: "

ENGINES = ("inline", "procrastinate")


def engines_on(backend: str) -> list[str]:
    """The job engines a store of ``backend`` can run: procrastinate needs PostgreSQL (and its module)."""
    if backend != "postgresql" or importlib.util.find_spec("convener.jobs.procrastinate_engine") is None:
        return ["inline"]
    return list(ENGINES)


@dataclass
class Process:
    """One process of a fleet: its command, its log, and (once it said so) its worker's name."""

    kind: str
    popen: subprocess.Popen[bytes]
    log: Path
    port: int | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def worker(self) -> str | None:
        """The name this process's worker holds jobs under, once it is known (``convener worker`` prints it)."""
        found = STARTED.search(self.text())
        return found.group(1) if found else None

    def finished_jobs(self) -> int:
        return self.text().count(FINISHED)

    def started_jobs(self) -> int:
        return self.text().count(STARTED_JOB)

    def alive(self) -> bool:
        return self.popen.poll() is None


@dataclass
class Fleet:
    """Processes on one store; ``environment`` is what they all get besides the store's settings."""

    directory: Path
    environment: dict[str, str]
    processes: list[Process] = field(default_factory=list)

    def _start(self, kind: str, arguments: list[str], port: int | None = None) -> Process:
        log = self.directory / f"{kind}-{len(self.processes)}.log"
        with log.open("wb") as sink:
            popen = subprocess.Popen([sys.executable, "-m", "convener", *arguments], env=self.environment, cwd=ROOT,
                                     stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        process = Process(kind, popen, log, port)
        self.processes.append(process)
        return process

    def worker(self, *arguments: str) -> Process:
        return self._start("worker", ["worker", *arguments])

    def serve(self, port: int, *arguments: str) -> Process:
        return self._start("serve", ["serve", "--host", "127.0.0.1", "--port", str(port), *arguments], port)

    def run(self, *arguments: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A command to its end (``convener jobs``), its output as text."""
        return subprocess.run([sys.executable, "-m", "convener", *arguments], env=self.environment, cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def live(self) -> list[Process]:
        return [process for process in self.processes if process.alive()]

    def kill(self, process: Process) -> None:
        """``kill -9``: the process gets no chance to finish anything."""
        process.popen.kill()
        process.popen.wait(timeout=30)

    def stop(self, process: Process, timeout: float = 30) -> int:
        """SIGTERM, as an operator stops a process: it finishes its running jobs first."""
        process.popen.send_signal(signal.SIGTERM)
        return process.popen.wait(timeout=timeout)

    def ready(self, process: Process, timeout: float = 60) -> None:
        """Wait until ``process`` takes jobs (a worker says so) or answers /healthz (a server)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert process.alive(), f"{process.kind} exited ({process.popen.returncode}):\n{process.text()[-3000:]}"
            if process.kind == "worker" and process.worker() is not None:
                return
            if process.kind == "serve" and process.port is not None and _healthy(process.port):
                return
            time.sleep(0.05)
        raise AssertionError(f"{process.kind} did not get ready within {timeout} s:\n{process.text()[-3000:]}")

    def close(self) -> None:
        for process in self.processes:
            if process.alive():
                process.popen.kill()
        for process in self.processes:
            try:
                process.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:  # pragma: no cover - a process that outlives SIGKILL
                pass


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as response:  # noqa: S310
            return bool(response.status == 200)
    except OSError:
        return False


def environment(database_url: str, data_dir: Path, jobs: str, **settings: str) -> dict[str, str]:
    """The environment of a fleet's processes: this checkout's source, the store, the engine, and ``settings``
    (``CONVENER_`` + the upper-cased key)."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "CONVENER_DATABASE_URL": database_url,
        "CONVENER_DATA_DIR": str(data_dir),
        "CONVENER_JOBS": jobs,
        "COLUMNS": "400",  # tables (convener jobs) are not cut to a terminal's width
        **{f"CONVENER_{key.upper()}": value for key, value in settings.items()},
    }


@contextmanager
def fleet(directory: Path, env: dict[str, str]) -> Iterator[Fleet]:
    """A fleet whose processes are all killed on exit, whatever happened."""
    directory.mkdir(parents=True, exist_ok=True)
    started = Fleet(directory, env)
    try:
        yield started
    finally:
        started.close()
