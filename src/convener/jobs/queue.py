"""``Jobs``: the tasks of this installation, the engine that keeps their jobs, and a worker in this process.

Services register their tasks and submit jobs in their own transactions; after the commit, ``submitted`` wakes
the workers (and, when this process runs jobs, starts its worker on first use, so a single ``convener serve`` or
a CLI command does its own work with no configuration). ``convener worker`` runs the same worker in the foreground.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Connection

from convener.jobs.engine import Engine
from convener.jobs.model import Attempt, ClaimedJob, Holding, P, QueuedJob, Task, Unrunnable

logger = logging.getLogger("convener.jobs")

Cancelled = Callable[[str], bool]
"""Whether the operation of the given name was cancelled (read from the store)."""


def worker_name() -> str:
    """This process as the jobs it holds name it: host, process ID, and a random suffix (PIDs are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Jobs:
    def __init__(self, engine: Engine, cancelled: Cancelled, *, concurrency: int, run_here: bool) -> None:
        self.engine = engine
        self.cancelled = cancelled
        self.concurrency = concurrency
        self.run_here = run_here
        """Whether this process runs jobs in a worker of its own (``convener serve --no-worker`` says no)."""
        self.worker = worker_name()
        self._tasks: dict[str, Task[Any]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def register(self, task: Task[Any]) -> None:
        if self._tasks.setdefault(task.name, task) is not task:
            raise ValueError(f"a task named {task.name} is already registered")

    @property
    def queues(self) -> frozenset[str]:
        """The queues of the registered tasks."""
        return frozenset(task.queue for task in self._tasks.values())

    # -- submitting --------------------------------------------------------------------------------------

    def submit(self, connection: Connection, task: Task[P], payloads: Iterable[P], operation: str) -> None:
        """Queue a job per payload, in the caller's transaction; call ``submitted`` after the commit."""
        self.engine.submit(connection, [QueuedJob(task=task.name, queue=task.queue, operation=operation,
                                                  payload=payload.model_dump(mode="json")) for payload in payloads])

    def submitted(self) -> None:
        """Jobs were committed: wake the workers, and start this process's own if it runs jobs."""
        if self.run_here:
            self.start()
        self.engine.wake()

    # -- working -----------------------------------------------------------------------------------------

    def start(self, queues: frozenset[str] | None = None) -> None:
        """Run a worker in a background thread of this process, if none runs yet."""
        with self._lock:
            if self._thread is not None:
                return
            self._stopping.clear()
            self._thread = threading.Thread(target=self.work, kwargs={"queues": queues}, name="convener-worker",
                                            daemon=True)
            self._thread.start()

    def work(self, queues: frozenset[str] | None = None, concurrency: int | None = None,
             stopping: threading.Event | None = None) -> None:
        """Run jobs until ``stop`` (or ``stopping``); blocks. ``convener worker`` calls this in the foreground."""
        self.engine.work(self.execute, worker=self.worker, concurrency=concurrency or self.concurrency,
                         queues=queues, stopping=stopping or self._stopping)

    def stop(self) -> None:
        """Stop this process's worker: it takes no more jobs and returns once the running ones have returned."""
        with self._lock:
            thread, self._thread = self._thread, None
        self._stopping.set()
        self.engine.wake()
        if thread is not None:
            thread.join()

    def close(self) -> None:
        self.stop()
        self.engine.close()

    def execute(self, claimed: ClaimedJob, attempt: Attempt) -> None:
        """Run one job a worker claimed: its task, with its payload read back into the task's model."""
        job = claimed.job
        task = self._tasks.get(job.task)
        if task is None:
            logger.error("job %s names the task %s, which this process does not know; given back for another worker",
                         claimed.id, job.task)
            raise Unrunnable(job.task)
        try:
            payload = task.payload.model_validate(job.payload)
        except ValidationError as error:
            logger.error("job %s of %s has a payload this version cannot read (%s); given back for another worker",
                         claimed.id, job.task, error.errors()[0]["msg"] if error.errors() else error)
            raise Unrunnable(job.task) from None
        attempt.cancelled = lambda: self.cancelled(job.operation)
        logger.info("job started: %s for %s (attempt %d) on %s", job.task, job.operation, attempt.number,
                    self.worker)
        started = time.monotonic()
        outcome = "finished"
        try:
            task.run(payload, attempt)
            if attempt.should_stop():
                outcome = f"stopped ({attempt.reason})"
        except BaseException:
            outcome = "failed"
            raise
        finally:
            logger.info("job %s: %s for %s (attempt %d) in %.2f s", outcome, job.task, job.operation,
                        attempt.number, time.monotonic() - started)

    def holdings(self, limit: int = 100) -> list[Holding]:
        return self.engine.holdings(limit)
