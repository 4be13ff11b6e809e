"""The lease engine and ``Jobs`` on the real store, both engines: a job runs once per attempt, held by one
worker at a time; a lapsed lease is taken over with a greater attempt; what a rolled-back transaction queued
never runs; cancelled operations stop their running jobs."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, update

from convener.api.names import LocationName
from convener.api.paging import PageTokens
from convener.auth.caller import Caller
from convener.jobs.leases import LeaseEngine
from convener.jobs.model import Attempt, Payload, Task
from convener.jobs.queue import Jobs
from convener.jobs.tables import jobs
from convener.longrunning.service import OperationService
from convener.store.database import Database

OWNER = Caller("users/ana")
LOCATION = LocationName("p", "global")


class Note(Payload):
    text: str


class Recorder:
    """A task that records each attempt it is given, and can hold a job until told to let go."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, str]] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.release.set()
        self.started = threading.Event()
        self.attempts: list[Attempt] = []

    def __call__(self, note: Note, attempt: Attempt) -> None:
        with self.lock:
            self.seen.append((note.text, attempt.number, attempt.worker))
            self.attempts.append(attempt)
        self.started.set()
        while not self.release.wait(0.02):
            if attempt.should_stop():
                return


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    database = Database(database_url)
    yield database
    database.dispose()


@pytest.fixture
def operations(database: Database) -> OperationService:
    return OperationService(database, PageTokens(database.installation_secret()))


def queue(database: Database, operations: OperationService, recorder: Recorder, lease: float = 30.0,
          queue_name: str = "notes") -> tuple[Jobs, Task[Note]]:
    jobs_ = Jobs(LeaseEngine(database, lease_seconds=lease, poll_seconds=0.05), operations.is_cancelled,
                 concurrency=2, run_here=False)
    task = Task(name="test.note", queue=queue_name, payload=Note, run=recorder)
    jobs_.register(task)
    return jobs_, task


def start_operation(operations: OperationService, database: Database) -> str:
    with database.transaction() as connection:
        return str(operations.start(connection, LOCATION, OWNER, {}).name)


def until(condition: Callable[[], bool], seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def submit(database: Database, jobs_: Jobs, task: Task[Note], operation: str, *texts: str) -> None:
    with database.transaction() as connection:
        jobs_.submit(connection, task, [Note(text=text) for text in texts], operation)
    jobs_.submitted()


def test_each_committed_job_runs_once_and_a_rolled_back_one_never(database: Database,
                                                                   operations: OperationService) -> None:
    recorder = Recorder()
    jobs_, task = queue(database, operations, recorder)
    operation = start_operation(operations, database)
    submit(database, jobs_, task, operation, *[f"n{i}" for i in range(6)])
    with pytest.raises(RuntimeError), database.transaction() as connection:
        jobs_.submit(connection, task, [Note(text="rolled back")], operation)
        raise RuntimeError("the transaction fails after queueing")
    assert [held.state for held in jobs_.holdings()] == ["queued"] * 6
    jobs_.start()
    try:
        until(lambda: len(recorder.seen) == 6 and not jobs_.holdings())
    finally:
        jobs_.stop()
    assert sorted(text for text, _, _ in recorder.seen) == [f"n{i}" for i in range(6)]
    assert {number for _, number, _ in recorder.seen} == {1}
    assert {worker for _, _, worker in recorder.seen} == {jobs_.worker}


def test_a_held_job_is_not_taken_and_a_lapsed_one_is_with_the_next_attempt(database: Database,
                                                                            operations: OperationService) -> None:
    recorder = Recorder()
    first, task = queue(database, operations, recorder, lease=1.0)
    second, _ = queue(database, operations, recorder, lease=1.0)
    operation = start_operation(operations, database)
    recorder.release.clear()
    submit(database, first, task, operation, "long")
    first.start()
    second.start()
    try:
        until(recorder.started.is_set)
        time.sleep(2.5)  # more than two leases: the first worker renews its hold meanwhile
        assert [(text, number) for text, number, _ in recorder.seen] == [("long", 1)]
        [held] = first.holdings()
        assert (held.state, held.attempts, held.worker) == ("running", 1, recorder.seen[0][2])
        # The holder is cut off: its lease lapses as if it had died; the other worker takes the job over.
        with database.transaction() as connection:
            connection.execute(update(jobs).values(lease_until_us=1, worker="gone:1:x"))
        until(lambda: len(recorder.seen) == 2)
        assert recorder.seen[1][1] == 2, "taken over with the next attempt number"
        until(lambda: recorder.attempts[0].lost, 5)  # the first attempt learns at its next renewal
        recorder.release.set()
        until(lambda: not first.holdings())
    finally:
        recorder.release.set()
        first.stop()
        second.stop()


def test_a_worker_takes_only_its_queues(database: Database, operations: OperationService) -> None:
    recorder = Recorder()
    jobs_, notes = queue(database, operations, recorder)
    other = Task(name="test.other", queue="others", payload=Note, run=recorder)
    jobs_.register(other)
    operation = start_operation(operations, database)
    submit(database, jobs_, notes, operation, "note")
    submit(database, jobs_, other, operation, "other")
    stopping = threading.Event()
    worker = threading.Thread(target=jobs_.work, kwargs={"queues": frozenset({"others"}), "stopping": stopping})
    worker.start()
    try:
        until(lambda: [h.task for h in jobs_.holdings()] == ["test.note"])
    finally:
        stopping.set()
        jobs_.engine.wake()
        worker.join(10)
    assert [text for text, _, _ in recorder.seen] == ["other"]


def test_cancelling_the_operation_stops_its_running_job(database: Database, operations: OperationService) -> None:
    recorder = Recorder()
    jobs_, task = queue(database, operations, recorder)
    operation = start_operation(operations, database)
    recorder.release.clear()
    submit(database, jobs_, task, operation, "long")
    jobs_.start()
    try:
        until(recorder.started.is_set)
        operations.cancel(operation, OWNER)
        until(lambda: recorder.attempts[0].should_stop(), 5)
        assert recorder.attempts[0].reason == "its operation was cancelled" and not recorder.attempts[0].lost
        until(lambda: not jobs_.holdings())
    finally:
        recorder.release.set()
        jobs_.stop()


def test_a_job_this_process_cannot_run_is_given_back_for_a_worker_that_can(
        database: Database, operations: OperationService, caplog: pytest.LogCaptureFixture) -> None:
    """A worker of an older version meets a task it does not know (or a payload it cannot read): it gives the
    job back, with its attempt undone, and a worker that knows the task runs it after the pause."""
    recorder = Recorder()
    old, task = queue(database, operations, recorder, lease=1.0)
    operation = start_operation(operations, database)
    submit(database, old, task, operation, "fine")
    with database.transaction() as connection:
        connection.execute(jobs.insert(), [
            {"task": "test.newer", "queue": "notes", "operation": operation, "payload": {"text": "newer"},
             "attempts": 0, "worker": None, "lease_until_us": 0, "since_us": 0},
            {"task": "test.note", "queue": "notes", "operation": operation, "payload": {"txt": 1}, "attempts": 0,
             "worker": None, "lease_until_us": 0, "since_us": 0},
        ])
    with caplog.at_level(logging.INFO, logger="convener.jobs"):
        old.start()
        try:  # each job tried once: the fine one run, the other two given back
            until(lambda: len(recorder.seen) == 1 and sum(
                "given back" in record.getMessage() for record in caplog.records) == 2)
        finally:
            old.stop()
    assert sorted((held.task, held.state, held.attempts) for held in old.holdings()) == [
        ("test.newer", "queued", 0), ("test.note", "queued", 0)]
    messages = " | ".join(record.getMessage() for record in caplog.records)
    assert "names the task test.newer, which this process does not know; given back for another worker" in messages
    assert "has a payload this version cannot read" in messages
    assert f"job started: test.note for {operation} (attempt 1)" in messages
    assert f"job finished: test.note for {operation} (attempt 1)" in messages

    newer, _ = queue(database, operations, recorder, lease=1.0)
    newer.register(Task(name="test.newer", queue="notes", payload=Note, run=recorder))
    newer.start()
    try:
        until(lambda: [text for text, _, _ in recorder.seen] == ["fine", "newer"])
    finally:
        newer.stop()
    assert recorder.seen[1][1] == 1, "the attempt the old worker gave back is not counted"
    assert [(held.task, held.attempts) for held in newer.holdings()] == [("test.note", 0)], (
        "a payload no version can read stays, to be seen with convener jobs")


def test_two_tasks_cannot_share_a_name(database: Database, operations: OperationService) -> None:
    jobs_, task = queue(database, operations, Recorder())
    with pytest.raises(ValueError, match="already registered"):
        jobs_.register(Task(name=task.name, queue="x", payload=Note, run=Recorder()))
    with database.reading() as connection:
        assert connection.execute(select(jobs)).all() == []
