"""The typed job model shared by the services that submit work and the engines that run it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from convener.api.protojson import Timestamp

CANCEL_CHECK_SECONDS = 0.25
"""How stale a running job's view of its operation's cancellation may be: one small read each time at most."""


class Payload(BaseModel):
    """What a job needs to run, decided when it is submitted and stored as JSON until a worker takes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")


P = TypeVar("P", bound=Payload)


@dataclass
class Attempt:
    """One run of a job by one worker.

    ``number`` is 1 the first time a job runs and strictly greater each time it is taken again (after its worker
    died or lost its hold): a task writes its outcome only if the number it claimed with is still the latest,
    so a worker that lost its hold can never record over the one that took the job over.
    """

    number: int
    operation: str
    worker: str
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    reason: str = ""
    lost: bool = False
    """Set when another worker took the job over: this attempt must write nothing more."""
    cancelled: Callable[[], bool] | None = field(default=None, repr=False)
    """Reads whether the job's operation was cancelled (set by ``Jobs``); asked every CANCEL_CHECK_SECONDS at most."""
    _asked: float = field(default=0.0, repr=False)

    def should_stop(self) -> bool:
        """True once the job's operation was cancelled, its hold was lost, or its worker is stopping hard.

        Tasks ask between steps (a turn, a file); the store is read at most every CANCEL_CHECK_SECONDS, so asking often is cheap."""
        if not self._stop.is_set() and self.cancelled is not None and time.monotonic() - self._asked >= CANCEL_CHECK_SECONDS:
            self._asked = time.monotonic()
            if self.cancelled():
                self.stop("its operation was cancelled")
        return self._stop.is_set()

    def saw(self, cancelled: bool) -> None:
        """The operation's cancellation as just read by the task (in a transaction of its own): ``should_stop``
        need not read it again for CANCEL_CHECK_SECONDS."""
        self._asked = time.monotonic()
        if cancelled:
            self.stop("its operation was cancelled")

    def stop(self, reason: str) -> None:
        if not self._stop.is_set():
            self.reason = reason
            self._stop.set()

    def lose(self, reason: str) -> None:
        """The job was taken over by another worker; stop, and write nothing more."""
        self.lost = True
        self.stop(reason)


class Unrunnable(Exception):
    """Raised by ``Jobs.execute`` for a job this process cannot run: a task it does not know, or a payload it
    cannot read (a worker of another version, during a rolling upgrade). The engine gives the job back, to be
    taken again after a pause by a worker that can run it; it is never dropped."""


@dataclass(frozen=True)
class Task(Generic[P]):
    """A kind of job: ``run`` is called with the typed payload of each job, once per attempt."""

    name: str
    """Unique among tasks, e.g. ``ces.play_evaluation_result``; stored with every job."""
    queue: str
    """Workers may serve some queues only (``convener worker --queues``)."""
    payload: type[P]
    run: Callable[[P, Attempt], None]
    """Runs the job; it must be safe to run again after an interruption (it checks and fences with the attempt)."""


@dataclass(frozen=True)
class QueuedJob:
    """A job as an engine stores it: the task's name and queue, the payload as JSON, the operation it serves."""

    task: str
    queue: str
    operation: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class ClaimedJob:
    """A job a worker of this process took: its engine's ID, what was queued, and the attempt it is on."""

    id: str
    job: QueuedJob
    attempt: int


Execute = Callable[[ClaimedJob, Attempt], None]
"""Run one claimed job (``Jobs.execute``): the engine calls it in a worker thread and owns nothing else of it."""


@dataclass(frozen=True)
class Holding:
    """A job not yet finished, as ``convener jobs`` shows it: who holds it and until when."""

    id: str
    task: str
    queue: str
    operation: str
    state: str
    """``queued`` (no worker yet), ``running`` (held by ``worker``), or ``stalled`` (its worker stopped answering;
    another will take it over)."""
    attempts: int
    worker: str | None = None
    since: Timestamp | None = None
    """When it was queued, or when its current attempt started."""
