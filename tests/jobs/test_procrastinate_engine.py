"""The procrastinate engine against a real PostgreSQL: transactional submit, workers in threads and in a process
killed with SIGKILL, queues, holdings, aborts and a graceful stop."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from procrastinate import SyncPsycopgConnector
from procrastinate.manager import JobManager
from sqlalchemy import text

from convener.api.errors import FailedPrecondition
from convener.jobs.model import Attempt, ClaimedJob, QueuedJob, Unrunnable
from convener.jobs.procrastinate_engine import ProcrastinateEngine
from convener.store.database import Database
from tests.conftest import POSTGRES_URL, private_database

SRC = Path(__file__).resolve().parents[2] / "src"
CHILD = Path(__file__).with_name("procrastinate_child.py")
DEADLINE = 15.0
"""Seconds any awaited event may take before the test fails (each takes well under a few seconds)."""
STALL = 2.0

needs_postgres = pytest.mark.skipif(not POSTGRES_URL, reason="CONVENER_TEST_DATABASE_URL names no PostgreSQL")


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    if not POSTGRES_URL:
        pytest.skip("CONVENER_TEST_DATABASE_URL names no PostgreSQL")
    with private_database("postgresql", tmp_path) as url:
        store = Database(url)
        try:
            yield store
        finally:
            store.dispose()


@pytest.fixture
def engine(database: Database) -> Iterator[ProcrastinateEngine]:
    made = ProcrastinateEngine(database, stall_seconds=STALL)
    try:
        yield made
    finally:
        made.close()


def job(operation: str, queue: str = "work") -> QueuedJob:
    return QueuedJob(task="tests.task", queue=queue, operation=operation, payload={"n": operation, "deep": [1, 2]})


def submit(engine: ProcrastinateEngine, database: Database, *jobs: QueuedJob) -> None:
    with database.transaction() as connection:
        engine.submit(connection, jobs)


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)


class Recorder:
    """An ``execute`` that records each call; jobs whose operation is in ``blocking`` wait for ``release``."""

    def __init__(self, blocking: frozenset[str] = frozenset()) -> None:
        self.calls: list[tuple[ClaimedJob, Attempt]] = []
        self.finished: list[str] = []
        self.blocking = blocking
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, claimed: ClaimedJob, attempt: Attempt) -> None:
        with self._lock:
            self.calls.append((claimed, attempt))
        if claimed.job.operation in self.blocking:
            while not self.release.is_set() and not attempt.should_stop():
                time.sleep(0.02)
        with self._lock:
            self.finished.append(claimed.job.operation)

    def operations(self) -> list[str]:
        with self._lock:
            return sorted(claimed.job.operation for claimed, _ in self.calls)


@contextmanager
def working(engine: ProcrastinateEngine, execute: Recorder, *, name: str = "tester", concurrency: int = 2,
            queues: frozenset[str] | None = None) -> Iterator[threading.Thread]:
    stopping = threading.Event()
    thread = threading.Thread(target=engine.work, args=(execute,), daemon=True, kwargs={
        "worker": name, "concurrency": concurrency, "queues": queues, "stopping": stopping})
    thread.start()
    try:
        yield thread
    finally:
        stopping.set()
        execute.release.set()
        thread.join(DEADLINE)
        assert not thread.is_alive(), "work() did not return after stopping"


def procrastinate_rows(database: Database) -> list[tuple[str, str]]:
    with database.reading() as connection:
        return [(row.status, row.queue_name) for row in connection.execute(
            text("SELECT status::text AS status, queue_name FROM procrastinate_jobs ORDER BY id"))]


def test_a_sqlite_store_is_refused(tmp_path: Path) -> None:
    store = Database(f"sqlite:///{tmp_path / 'convener.db'}")
    try:
        with pytest.raises(FailedPrecondition, match="needs a PostgreSQL store"):
            ProcrastinateEngine(store)
    finally:
        store.dispose()


@needs_postgres
def test_engines_starting_at_once_make_the_schema_once(database: Database) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    def construct() -> None:
        start.wait()
        try:
            ProcrastinateEngine(database).close()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=construct) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE)
    assert errors == []
    assert procrastinate_rows(database) == []


@needs_postgres
def test_committed_jobs_run_exactly_once_with_attempt_one(engine: ProcrastinateEngine, database: Database) -> None:
    submit(engine, database, *(job(f"operations/{n}") for n in range(6)))
    queued = engine.holdings(10)
    assert [h.operation for h in queued] == [f"operations/{n}" for n in range(6)]
    assert {(h.state, h.attempts, h.worker, h.task, h.queue) for h in queued} == {
        ("queued", 0, None, "tests.task", "work")}
    assert all(h.since is not None for h in queued)
    recorder = Recorder()
    with working(engine, recorder):
        until(lambda: len(recorder.finished) == 6 and engine.holdings(10) == [], "six jobs to finish")
    assert recorder.operations() == [f"operations/{n}" for n in range(6)]
    assert {(claimed.attempt, attempt.number, attempt.worker) for claimed, attempt in recorder.calls} == {
        (1, 1, "tester")}
    claimed, attempt = recorder.calls[0]
    assert claimed.job.payload == {"n": claimed.job.operation, "deep": [1, 2]}
    assert (claimed.job.task, claimed.job.queue, attempt.operation) == ("tests.task", "work", claimed.job.operation)
    assert len({claimed.id for claimed, _ in recorder.calls}) == 6
    assert procrastinate_rows(database) == []  # succeeded jobs are deleted


@needs_postgres
def test_a_rolled_back_submit_leaves_no_job(engine: ProcrastinateEngine, database: Database) -> None:
    with pytest.raises(RuntimeError), database.transaction() as connection:
        engine.submit(connection, [job("operations/rolled-back")])
        raise RuntimeError("the caller's transaction fails after submitting")
    assert engine.holdings(10) == []
    assert procrastinate_rows(database) == []
    # A worker running afterwards runs the committed job only.
    submit(engine, database, job("operations/committed"))
    recorder = Recorder()
    with working(engine, recorder):
        until(lambda: recorder.finished == ["operations/committed"] and engine.holdings(10) == [], "the job")
    assert recorder.operations() == ["operations/committed"]


@needs_postgres
def test_a_worker_takes_only_its_queues(engine: ProcrastinateEngine, database: Database) -> None:
    submit(engine, database, job("operations/a1", "a"), job("operations/b1", "b"), job("operations/a2", "a"))
    recorder = Recorder()
    with working(engine, recorder, queues=frozenset({"a"})):
        until(lambda: len(recorder.finished) == 2, "the jobs of queue a")
        until(lambda: [h.queue for h in engine.holdings(10)] == ["b"], "queue a's jobs to be gone")
    assert recorder.operations() == ["operations/a1", "operations/a2"]
    [left] = engine.holdings(10)
    assert (left.operation, left.state) == ("operations/b1", "queued")
    others = Recorder()
    with working(engine, others, queues=None):
        until(lambda: others.finished == ["operations/b1"], "queue b's job, by a worker of every queue")


@needs_postgres
def test_holdings_show_the_worker_and_stopping_waits_for_running_jobs(
        engine: ProcrastinateEngine, database: Database) -> None:
    submit(engine, database, job("operations/long"))
    recorder = Recorder(blocking=frozenset({"operations/long"}))
    stopping = threading.Event()
    thread = threading.Thread(target=engine.work, args=(recorder,), daemon=True, kwargs={
        "worker": "host-1/worker-7", "concurrency": 1, "queues": None, "stopping": stopping})
    thread.start()
    try:
        until(lambda: len(recorder.calls) == 1, "the job to start")
        [held] = engine.holdings(10)
        assert (held.operation, held.state, held.worker, held.attempts) == (
            "operations/long", "running", "host-1/worker-7", 1)
        stopping.set()
        thread.join(1.0)
        assert thread.is_alive(), "work() returned while its job was still running"
        assert recorder.finished == []
        recorder.release.set()
        thread.join(DEADLINE)
        assert not thread.is_alive()
    finally:
        stopping.set()
        recorder.release.set()
        thread.join(DEADLINE)
    assert recorder.finished == ["operations/long"]
    [(_, attempt)] = recorder.calls
    assert not attempt.should_stop()  # a graceful stop lets the job finish, it does not stop it
    assert engine.holdings(10) == []


@needs_postgres
def test_an_abort_request_stops_the_attempt(engine: ProcrastinateEngine, database: Database) -> None:
    submit(engine, database, job("operations/aborted"))
    recorder = Recorder(blocking=frozenset({"operations/aborted"}))
    with working(engine, recorder):
        until(lambda: len(recorder.calls) == 1, "the job to start")
        [(claimed, attempt)] = recorder.calls
        with database.transaction() as connection:
            assert JobManager(SyncPsycopgConnector()).cancel_job_by_id(
                int(claimed.id), abort=True, connection=connection.connection.driver_connection)
        until(attempt.should_stop, "the attempt to be told to stop")
        until(lambda: engine.holdings(10) == [], "the job to end")
    assert attempt.reason == "the job was aborted"
    assert procrastinate_rows(database) == [("aborted", "work")]


def child_worker(database: Database, name: str) -> subprocess.Popen[str]:
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.Popen([sys.executable, str(CHILD), database.url, str(STALL), name],
                            stdout=subprocess.PIPE, text=True, env=environment)


def stop(child: subprocess.Popen[str]) -> None:
    child.kill()
    child.wait(DEADLINE)
    if child.stdout is not None:
        child.stdout.close()


def started_job(child: subprocess.Popen[str]) -> dict[str, object]:
    """What the child says once its job started, waiting at most ``DEADLINE``."""
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], DEADLINE)
    assert ready, "the child worker started no job"
    found: dict[str, object] = json.loads(child.stdout.readline())
    return found


@needs_postgres
def test_a_job_of_a_killed_worker_is_taken_over_with_a_greater_attempt(
        engine: ProcrastinateEngine, database: Database) -> None:
    submit(engine, database, job("operations/survivor"))
    child = child_worker(database, "doomed")
    try:
        started = started_job(child)  # its job will never end
        assert (started["attempt"], started["worker"]) == (1, "doomed")
        [held] = engine.holdings(10)
        assert (held.id, held.state, held.worker, held.attempts) == (started["id"], "running", "doomed", 1)
        child.send_signal(signal.SIGKILL)
        assert child.wait(DEADLINE) == -signal.SIGKILL
    finally:
        stop(child)
    until(lambda: [h.state for h in engine.holdings(10)] == ["stalled"], "the job to show as stalled")
    recorder = Recorder()
    with working(engine, recorder, name="survivor"):
        until(lambda: recorder.finished == ["operations/survivor"], "another worker to run the job")
        until(lambda: engine.holdings(10) == [], "the job to finish")
    [(claimed, attempt)] = recorder.calls
    assert claimed.id == started["id"]
    assert claimed.attempt == attempt.number == 2
    assert attempt.worker == "survivor"


@needs_postgres
def test_each_take_over_has_a_greater_attempt(engine: ProcrastinateEngine, database: Database) -> None:
    """Two workers killed one after the other: the job runs with attempts 1, 2, then 3."""
    submit(engine, database, job("operations/twice-orphaned"))
    attempts = []
    for name in ("first", "second"):
        child = child_worker(database, name)
        try:
            attempts.append(started_job(child)["attempt"])
            child.send_signal(signal.SIGKILL)
            child.wait(DEADLINE)
        finally:
            stop(child)
    recorder = Recorder()
    with working(engine, recorder, name="third"):
        until(lambda: len(recorder.finished) == 1, "the third worker to run the job")
    attempts.append(recorder.calls[0][1].number)
    assert attempts == [1, 2, 3]



@needs_postgres
def test_a_job_this_worker_cannot_run_is_given_back_and_taken_again(engine: ProcrastinateEngine,
                                                                    database: Database) -> None:
    class OnceUnrunnable(Recorder):
        def __call__(self, claimed: ClaimedJob, attempt: Attempt) -> None:
            super().__call__(claimed, attempt)
            if len(self.calls) == 1:
                raise Unrunnable(claimed.job.task)

    execute = OnceUnrunnable()
    submit(engine, database, job("newer"))
    with working(engine, execute):
        until(lambda: len(execute.finished) == 2, "the job to be given back and run again")
        until(lambda: engine.holdings(10) == [], "the job to be finished")
    assert [attempt.number for _, attempt in execute.calls] == [1, 2]
