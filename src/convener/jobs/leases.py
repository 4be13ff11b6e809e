"""The embedded engine: jobs in a table of the store, each held by one worker under a lease.

A worker claims the oldest job that is queued or whose lease lapsed, in one conditional update that counts the
attempt; it renews the leases of the jobs it runs every third of the lease; when it finishes a job it deletes the
row, if it still holds it. A worker killed mid-job stops renewing: after the lease lapses another worker (in any
process on the store) takes the job with the next attempt number, and the task's writes, fenced by that number,
keep the first worker's late writes out. Processes on one SQLite file, or on PostgreSQL, cooperate this way with
nothing but the store; on PostgreSQL a claim skips rows another worker has locked.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import Connection, FromClause, Select, Update, bindparam, delete, insert, select, update

from convener.api.protojson import Timestamp
from convener.jobs.model import Attempt, ClaimedJob, Execute, Holding, QueuedJob, Unrunnable
from convener.jobs.tables import jobs
from convener.store.database import Database
from convener.store.expressions import one_of

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.5
"""How often an idle worker looks for work queued by another process (work queued by its own is seen at once)."""


_PEEKS: dict[frozenset[str] | None, Select[tuple[int]]] = {}
_TAKES: dict[frozenset[str] | None, Update] = {}
"""The claim's statements by a worker's queues, built once: a claim is on every job's path, and building and
keying a statement costs more than running it."""
_FINISH = delete(jobs).where(jobs.c.id == bindparam("pk"), jobs.c.worker == bindparam("worker"),
                             jobs.c.attempts == bindparam("attempts"))


def _now_us() -> int:
    return time.time_ns() // 1000


def _oldest_claimable(table: FromClause, queues: frozenset[str] | None) -> Select[tuple[int]]:
    """The ID of the oldest job of ``table`` (the jobs, or an alias of them) that is queued or whose lease lapsed
    before ``now`` (bound at execution), in one of ``queues`` (any, if None)."""
    statement = select(table.c.id).where(table.c.lease_until_us < bindparam("now"))
    if queues is not None:
        statement = statement.where(one_of(table.c.queue, sorted(queues)))
    return statement.order_by(table.c.id).limit(1)


class LeaseEngine:
    name = "inline"

    def __init__(self, database: Database, *, lease_seconds: float = 30.0, poll_seconds: float = POLL_SECONDS) -> None:
        self.database = database
        self.lease_us = int(lease_seconds * 1_000_000)
        self.poll_seconds = poll_seconds
        self._queued = threading.Condition()

    def submit(self, connection: Connection, queued: Sequence[QueuedJob]) -> None:
        if not queued:
            return
        now = _now_us()
        connection.execute(insert(jobs), [
            {"task": job.task, "queue": job.queue, "operation": job.operation, "payload": job.payload,
             "attempts": 0, "worker": None, "lease_until_us": 0, "since_us": now} for job in queued
        ])

    def wake(self) -> None:
        with self._queued:
            self._queued.notify_all()

    # -- a worker --------------------------------------------------------------------------------------

    def work(self, execute: Execute, *, worker: str, concurrency: int, queues: frozenset[str] | None,
             stopping: threading.Event) -> None:
        # The attempts this worker runs, by job and attempt: a worker may hold a job again after losing it.
        held: dict[tuple[int, int], tuple[ClaimedJob, Attempt]] = {}
        # Jobs this worker finished, by job and attempt, deleted in the transaction of its next claim (or when it
        # stops): a transaction a job fewer. One the worker dies holding is taken again after its lease, and finds
        # its work recorded, as a job finished a moment before its worker died always could.
        done: list[tuple[int, int]] = []
        lock = threading.Lock()
        free = threading.Semaphore(concurrency)

        def run(claimed: ClaimedJob, attempt: Attempt) -> None:
            given_back = False
            try:
                execute(claimed, attempt)
            except Unrunnable:
                given_back = True
            except Exception:
                logger.exception("job %s (%s) failed", claimed.id, claimed.job.task)
            finally:
                with lock:
                    held.pop((int(claimed.id), claimed.attempt), None)
                if given_back:
                    self._give_back(claimed, worker)
                else:
                    with lock:
                        done.append((int(claimed.id), claimed.attempt))
                free.release()
                self.wake()

        finished = threading.Event()
        renewing = threading.Thread(target=self._renew, args=(worker, held, lock, finished),
                                    name="convener-job-leases", daemon=True)
        renewing.start()
        with ThreadPoolExecutor(concurrency, thread_name_prefix="convener-job") as pool:
            peek = True  # until a claim finds a job, and again once one finds none
            while not stopping.is_set():
                if not free.acquire(timeout=self.poll_seconds):
                    continue
                try:
                    with lock:
                        forgetting = list(done)
                    claimed = self._claim(worker, queues, peek=peek, finished=forgetting)
                    with lock:  # forgotten: the claim's transaction committed
                        del done[:len(forgetting)]
                    peek = claimed is None
                except Exception:  # the store is away for a moment (restarting, locked): try again shortly
                    logger.exception("could not look for jobs")
                    claimed = None
                if claimed is None:
                    free.release()
                    with self._queued:
                        if not stopping.is_set():
                            self._queued.wait(self.poll_seconds)
                    continue
                attempt = Attempt(number=claimed.attempt, operation=claimed.job.operation, worker=worker)
                with lock:
                    held[(int(claimed.id), claimed.attempt)] = (claimed, attempt)
                pool.submit(run, claimed, attempt)
        self._finish(worker, done)  # the pool has waited for the running jobs
        finished.set()  # nothing is left to renew
        renewing.join()

    @staticmethod
    def _peek(queues: frozenset[str] | None) -> Select[tuple[int]]:
        """Whether a job is claimable (``now`` bound at execution), read by an idle worker without a lock."""
        cached = _PEEKS.get(queues)
        if cached is None:
            cached = _PEEKS[queues] = _oldest_claimable(jobs, queues)
        return cached

    @staticmethod
    def _take(queues: frozenset[str] | None) -> Update:
        """Take the oldest claimable job in one statement, counting the attempt: the job the subquery finds is
        locked (PostgreSQL: skipping those other workers hold; SQLite: the transaction holds the write lock), so
        nothing can change it between the look and the update."""
        cached = _TAKES.get(queues)
        if cached is not None:
            return cached
        oldest = _oldest_claimable(jobs.alias("claimable"), queues).with_for_update(skip_locked=True)
        statement = update(jobs).where(jobs.c.id == oldest.scalar_subquery()).values(
            worker=bindparam("worker"), attempts=jobs.c.attempts + 1, lease_until_us=bindparam("lease_until_us"),
            since_us=bindparam("since_us")).returning(*jobs.c)
        _TAKES[queues] = statement
        return statement

    def _claim(self, worker: str, queues: frozenset[str] | None, *, peek: bool = True,
               finished: Sequence[tuple[int, int]] = ()) -> ClaimedJob | None:
        """Claim the oldest claimable job, deleting first the ``finished`` ones (job, attempt) this worker holds."""
        # An idle worker (``peek``) looks first in a snapshot, which takes no lock: polling SQLite must not take the
        # write lock every half second. One that has just found a job goes straight on: there are likely more, and
        # the look would cost a transaction per job.
        if peek and not finished:
            with self.database.reading() as connection:
                if connection.execute(self._peek(queues), {"now": _now_us()}).first() is None:
                    return None
        with self.database.transaction() as connection:
            if finished:
                self._forget(connection, worker, finished)
            now = _now_us()
            row = connection.execute(self._take(queues), {
                "now": now, "worker": worker, "lease_until_us": now + self.lease_us, "since_us": now}).first()
            if row is None:
                return None
        return ClaimedJob(id=str(row.id), job=QueuedJob(task=row.task, queue=row.queue, operation=row.operation,
                                                       payload=dict(row.payload)), attempt=row.attempts)

    def _finish(self, worker: str, finished: Sequence[tuple[int, int]]) -> None:
        """Forget finished jobs now (see ``_forget``)."""
        if not finished:
            return
        try:
            with self.database.transaction() as connection:
                self._forget(connection, worker, finished)
        except Exception:  # left in place, they are taken again once their leases lapse, and find nothing to do
            logger.exception("could not finish jobs %s", ", ".join(str(pk) for pk, _ in finished))

    @staticmethod
    def _forget(connection: Connection, worker: str, finished: Sequence[tuple[int, int]]) -> None:
        """Delete finished jobs (job, attempt), unless another worker took one over meanwhile (then it is theirs)."""
        connection.execute(_FINISH, [{"pk": pk, "worker": worker, "attempts": attempt} for pk, attempt in finished])

    def _give_back(self, claimed: ClaimedJob, worker: str) -> None:
        """Queue again a job this worker cannot run, after a lease's pause, with the attempt it never made undone."""
        try:
            with self.database.transaction() as connection:
                connection.execute(update(jobs).where(
                    jobs.c.id == int(claimed.id), jobs.c.worker == worker, jobs.c.attempts == claimed.attempt,
                ).values(worker=None, attempts=claimed.attempt - 1, lease_until_us=_now_us() + self.lease_us))
        except Exception:  # left held, it is taken again once its lease lapses
            logger.exception("could not give job %s back", claimed.id)

    def _renew(self, worker: str, held: dict[tuple[int, int], tuple[ClaimedJob, Attempt]], lock: threading.Lock,
               finished: threading.Event) -> None:
        """Every third of a lease, until the worker has finished: extend the leases of the jobs it runs, and stop
        those it lost."""
        while not finished.wait(self.lease_us / 3_000_000):
            with lock:
                running = dict(held)
            if running:
                try:
                    self._extend(worker, running)
                except Exception:
                    logger.exception("could not renew the leases of %d jobs", len(running))

    def _extend(self, worker: str, running: dict[tuple[int, int], tuple[ClaimedJob, Attempt]]) -> None:
        ids = sorted({pk for pk, _ in running})
        with self.database.transaction() as connection:
            connection.execute(update(jobs).where(jobs.c.id.in_(ids), jobs.c.worker == worker).values(
                lease_until_us=_now_us() + self.lease_us))
            kept = {(row.id, row.attempts) for row in connection.execute(
                select(jobs.c.id, jobs.c.attempts).where(jobs.c.id.in_(ids), jobs.c.worker == worker))}
        for key, (_, attempt) in running.items():
            if key not in kept:
                attempt.lose("another worker took the job over after its lease lapsed")

    # -- a view ----------------------------------------------------------------------------------------

    def holdings(self, limit: int) -> list[Holding]:
        now = _now_us()
        with self.database.reading() as connection:
            rows = connection.execute(select(jobs).order_by(jobs.c.id).limit(limit)).all()
        return [Holding(
            id=str(row.id), task=row.task, queue=row.queue, operation=row.operation, attempts=row.attempts,
            state="queued" if row.worker is None else "running" if row.lease_until_us >= now else "stalled",
            worker=row.worker, since=Timestamp.from_micros(row.since_us),
        ) for row in rows]

    def close(self) -> None:
        self.wake()
