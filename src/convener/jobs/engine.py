"""What an engine does for ``Jobs``: keep jobs, hand each to one worker at a time, take it back from a dead one."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from sqlalchemy import Connection

from convener.jobs.model import Execute, Holding, QueuedJob


class Engine(Protocol):
    name: str
    """The ``CONVENER_JOBS`` value that chooses it."""

    def submit(self, connection: Connection, jobs: Sequence[QueuedJob]) -> None:
        """Queue ``jobs`` in the caller's transaction: they exist exactly when the rows they concern do."""

    def wake(self) -> None:
        """After a commit that queued jobs: workers of this process look for them at once."""

    def work(self, execute: Execute, *, worker: str, concurrency: int, queues: frozenset[str] | None,
             stopping: threading.Event) -> None:
        """Run jobs with ``execute`` in up to ``concurrency`` threads until ``stopping`` is set; blocks.

        Every job is held by one worker at a time and taken again, with a greater attempt number, when the
        worker holding it stops answering (killed, or cut off for longer than the hold). A job whose ``execute``
        returns, or raises, is finished and not run again, except when it raises ``Unrunnable``: then it is given
        back, to be taken again after a pause (by a worker that can run it). Returns once the jobs it was running
        have returned.
        """

    def holdings(self, limit: int) -> list[Holding]:
        """Unfinished jobs, oldest first: queued, running (and by whom) and stalled."""

    def close(self) -> None:
        """Release what the engine holds open (connections); workers are stopped first."""
