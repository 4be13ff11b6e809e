"""Jobs on PostgreSQL with procrastinate: the queue lives in the store's own database, no extra service.

Every Convener job is one procrastinate job of one task, ``convener.job``, whose arguments carry the Convener
task's name, the operation and the payload; the procrastinate queue is the Convener queue. Jobs are deferred with
procrastinate's own SQL on the caller's connection, inside its transaction, so a job exists exactly when the rows
it concerns were committed. Workers are procrastinate workers run on this thread's own event loop.

A job is held by a procrastinate worker, which beats its heartbeat in ``procrastinate_workers``. Procrastinate
itself never takes a job back from a dead worker; every running worker of this engine does: every few seconds
one of them (under an advisory lock, so two cannot interleave) sends the jobs of workers silent for longer than
``stall_seconds`` back to the queue with ``retry_job`` and prunes those workers. ``retry_job`` adds one to the
job's ``attempts`` and fetching it does not, so while a job runs its attempts count the earlier runs that were
taken back: the attempt number is ``attempts + 1``, 1 the first time and greater after each take-over.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

import psycopg
import psycopg.conninfo
from procrastinate import App, JobContext, PsycopgConnector, RetryStrategy, SyncPsycopgConnector
from procrastinate import exceptions as procrastinate_errors
from procrastinate import jobs as procrastinate_jobs
from procrastinate.manager import JobManager
from procrastinate.schema import SchemaManager
from procrastinate.worker import Worker
from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

from convener.api.errors import FailedPrecondition
from convener.api.protojson import Timestamp
from convener.jobs.model import Attempt, ClaimedJob, Execute, Holding, QueuedJob, Unrunnable
from convener.store.database import Database

logger = logging.getLogger(__name__)

TASK: Final = "convener.job"
"""The one procrastinate task: it hands each job to ``Jobs.execute``, which finds the Convener task by name."""

_SCHEMA_LOCK: Final = 0x636F6E76_6A6F6273  # "convjobs": serialises schema creation between processes
_RECOVERY_LOCK: Final = 0x636F6E76_73746C6C  # "convstll": one worker at a time takes stalled jobs back
_FETCH_POLLING_SECONDS: Final = 0.5
"""Notifications wake workers at once; polling is the fallback when one was missed (a reconnecting listener)."""
_TICK_SECONDS: Final = 0.1
"""How often a worker looks at ``stopping`` and at abort requests of its running jobs (in memory, no query)."""

# What this engine keeps beside procrastinate's schema: procrastinate's workers table has only an ID and a
# heartbeat, and ``convener jobs`` shows workers by their name. A row goes when its worker does.
_WORKER_NAMES = """
CREATE TABLE IF NOT EXISTS convener_job_workers (
    worker_id bigint PRIMARY KEY REFERENCES procrastinate_workers(id) ON DELETE CASCADE,
    name text NOT NULL
)
"""
_NEEDED_FUNCTIONS = ("procrastinate_fetch_job_v2", "procrastinate_retry_job_v2", "procrastinate_register_worker_v1")
"""Functions of procrastinate 3.10's schema that an older schema lacks."""


class _Args(BaseModel):
    """A procrastinate job's arguments: what ``QueuedJob`` holds besides its queue."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str
    operation: str
    payload: dict[str, Any]


def conninfo(database: Database) -> str:
    """A libpq connection string for ``database``, made by SQLAlchemy's own psycopg dialect from its URL."""
    if database.dialect != "postgresql":
        raise FailedPrecondition(
            f"CONVENER_JOBS=procrastinate needs a PostgreSQL store; this store is {database.dialect} "
            "(use CONVENER_JOBS=inline, or a postgresql:// database URL)")
    _, options = database.engine.dialect.create_connect_args(make_url(database.url))
    # ``context`` is psycopg's adapters map, an object of this process rather than a connection parameter.
    return psycopg.conninfo.make_conninfo("", **{k: v for k, v in options.items() if k != "context"})


def apply_schema(info: str) -> None:
    """Create procrastinate's schema (and our worker names) unless there; two processes starting at once wait
    for each other on an advisory lock, and the second finds the schema made."""
    with psycopg.connect(info) as connection, connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        present = connection.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()
        if present is None or not present[0]:
            connection.execute(SchemaManager.get_schema())
        else:
            missing = [name for name in _NEEDED_FUNCTIONS
                       if connection.execute("SELECT to_regproc(%s) IS NULL", (name,)).fetchone() == (True,)]
            if missing:
                raise FailedPrecondition(
                    "the procrastinate schema in this database is older than procrastinate 3.10 (it lacks "
                    f"{', '.join(missing)}): apply procrastinate's migrations before starting Convener")
        connection.execute(_WORKER_NAMES)


@dataclass
class _Running:
    """A job running in a thread of this worker: its attempt, to stop it, and procrastinate's context."""

    attempt: Attempt
    context: JobContext


class ProcrastinateEngine:
    name = "procrastinate"

    def __init__(self, database: Database, *, stall_seconds: float = 30.0) -> None:
        self._database = database
        self._conninfo = conninfo(database)
        self.stall_seconds = stall_seconds
        # Deferring only ever runs on the caller's connection: this connector never opens a pool of its own.
        self._defer = JobManager(SyncPsycopgConnector())
        apply_schema(self._conninfo)

    # -- submitting -------------------------------------------------------------------------------------------

    def submit(self, connection: Connection, jobs: Sequence[QueuedJob]) -> None:
        if not jobs:
            return
        # The psycopg connection under the caller's SQLAlchemy connection, in its transaction: procrastinate's
        # defer query runs there and commits or rolls back with the caller's rows.
        driver = connection.connection.driver_connection
        self._defer.batch_defer_jobs(
            [procrastinate_jobs.Job(
                queue=job.queue, lock=None, queueing_lock=None, task_name=TASK,
                task_kwargs=_Args(task=job.task, operation=job.operation, payload=job.payload).model_dump(mode="json"))
             for job in jobs],
            connection=driver)

    def wake(self) -> None:
        """Nothing to do: inserting a job NOTIFYs every listening worker once the transaction commits."""

    # -- working ----------------------------------------------------------------------------------------------

    def work(self, execute: Execute, *, worker: str, concurrency: int, queues: frozenset[str] | None,
             stopping: threading.Event) -> None:
        run = _WorkerRun(self, execute, worker=worker, concurrency=concurrency, queues=queues, stopping=stopping)
        asyncio.run(run.main())

    # -- observing --------------------------------------------------------------------------------------------

    def holdings(self, limit: int) -> list[Holding]:
        query = text("""
            SELECT job.id, job.queue_name, job.args, job.status::text AS status, job.attempts,
                   named.name AS worker,
                   job.status = 'doing' AND (worker.id IS NULL
                       OR worker.last_heartbeat < now() - make_interval(secs => :stall)) AS stalled,
                   (SELECT (extract(epoch FROM max(event.at)) * 1000000)::bigint FROM procrastinate_events event
                     WHERE event.job_id = job.id
                       AND event.type IN ('deferred', 'started', 'deferred_for_retry')) AS since_us
              FROM procrastinate_jobs job
              LEFT JOIN procrastinate_workers worker ON worker.id = job.worker_id
              LEFT JOIN convener_job_workers named ON named.worker_id = job.worker_id
             WHERE job.status IN ('todo', 'doing')
             ORDER BY job.id
             LIMIT :limit""")
        with self._database.reading() as connection:
            rows = connection.execute(query, {"stall": self.stall_seconds, "limit": limit}).all()
        holdings = []
        for row in rows:
            args = _Args.model_validate(row.args)
            running = row.status == "doing"
            holdings.append(Holding(
                id=str(row.id), task=args.task, queue=row.queue_name, operation=args.operation,
                state="stalled" if row.stalled else "running" if running else "queued",
                # Attempts started so far: a running job is on its ``attempts + 1``-th (see the module's doc).
                attempts=row.attempts + (1 if running else 0),
                worker=row.worker if running else None,
                since=Timestamp.from_micros(row.since_us) if row.since_us is not None else None))
        return holdings

    def close(self) -> None:
        """Nothing is held between calls: ``submit`` borrows the caller's connection, ``holdings`` the store's
        pool, and each ``work`` closes its own pool when it returns."""


class _WorkerRun:
    """One call of ``work``: a procrastinate worker on this thread's event loop, and its keeper beside it."""

    def __init__(self, engine: ProcrastinateEngine, execute: Execute, *, worker: str, concurrency: int,
                 queues: frozenset[str] | None, stopping: threading.Event) -> None:
        self.engine = engine
        self.execute = execute
        self.name = worker
        self.concurrency = concurrency
        self.queues = sorted(queues) if queues is not None else None
        self.stopping = stopping
        self.stall = engine.stall_seconds
        # Heartbeats four times within the stall time: a worker is taken for dead only after missing several.
        self.heartbeat = self.stall / 4
        self.maintenance = min(max(self.stall / 4, 0.25), 5.0)
        self._running: dict[int, _Running] = {}
        self._lock = threading.Lock()
        self._named: set[int] = set()
        self.app = App(connector=PsycopgConnector(
            conninfo=engine._conninfo, min_size=1, max_size=4,
            kwargs={"application_name": f"convener worker {worker}"[:63]}))
        # A job this process cannot run (another version's) is given back, to be taken again after a pause.
        self.app.task(name=TASK, pass_context=True, retry=RetryStrategy(
            retry_exceptions={Unrunnable}, wait=max(1, round(self.stall))))(self._run_job)

    async def main(self) -> None:
        loop = asyncio.get_running_loop()
        # Procrastinate runs sync tasks in the loop's default executor, whose default size (cores + 4) would cap
        # the concurrency asked for; a few threads more serve psycopg's own calls to it.
        executor = ThreadPoolExecutor(max_workers=self.concurrency + 2, thread_name_prefix=f"job-{self.name}")
        loop.set_default_executor(executor)
        async with self.app.open_async():
            while not self.stopping.is_set():
                worker = Worker(
                    app=self.app, queues=self.queues, name=self.name, concurrency=self.concurrency,
                    fetch_job_polling_interval=_FETCH_POLLING_SECONDS, abort_job_polling_interval=1.0,
                    install_signal_handlers=False, update_heartbeat_interval=self.heartbeat,
                    stalled_worker_timeout=self.stall, shutdown_graceful_timeout=None,
                    delete_jobs=procrastinate_jobs.DeleteJobCondition.SUCCESSFUL,
                    worker_middleware=[self._named_worker])
                ended = asyncio.Event()
                keeper = asyncio.create_task(self._keep(worker, ended), name="convener keeper")
                try:
                    await worker.run()  # type: ignore[no-untyped-call]
                except Exception as error:
                    # The worker stops when it loses the database or was pruned while cut off (its jobs went to
                    # other workers): its running jobs have returned by now; start afresh under a new ID.
                    logger.warning("worker %s stopped (%s); starting again", self.name, error)
                    await _sleep_unless(self.stopping, 1.0)
                finally:
                    # Ended by the event, not by cancelling it: a cancellation arriving while psycopg's pool
                    # waits for a connection can be lost (asyncio.wait_for in Python 3.11), the event cannot.
                    ended.set()
                    await asyncio.gather(keeper, return_exceptions=True)
        executor.shutdown(wait=True)

    # -- the procrastinate task -------------------------------------------------------------------------------

    def _run_job(self, context: JobContext, /, **kwargs: Any) -> None:
        """Runs in a thread of the loop's executor, once per attempt."""
        job = context.job
        assert job.id is not None
        args = _Args.model_validate(kwargs)
        number = job.attempts + 1
        claimed = ClaimedJob(id=str(job.id), attempt=number, job=QueuedJob(
            task=args.task, queue=job.queue, operation=args.operation, payload=args.payload))
        attempt = Attempt(number=number, operation=args.operation, worker=self.name)
        with self._lock:
            self._running[job.id] = _Running(attempt, context)
        try:
            self.execute(claimed, attempt)
        finally:
            with self._lock:
                del self._running[job.id]
        if context.should_abort():
            raise procrastinate_errors.JobAborted(attempt.reason)

    async def _named_worker(self, call_next: Callable[[], Awaitable[Any]], context: JobContext,
                            worker: Worker) -> Any:
        """Before a worker's first job, its name goes beside its ID, for ``holdings``."""
        worker_id = worker.worker_id
        if worker_id is not None and worker_id not in self._named:
            try:
                await self.app.connector.execute_query_async(
                    "INSERT INTO convener_job_workers (worker_id, name) VALUES (%(worker_id)s, %(name)s)"
                    " ON CONFLICT (worker_id) DO NOTHING", worker_id=worker_id, name=self.name)
                self._named.add(worker_id)
            except procrastinate_errors.ConnectorException as error:
                # Only ``holdings`` misses the name (the worker was pruned meanwhile): the job still runs.
                logger.warning("worker %s could not record its name: %s", self.name, error)
        return await call_next()

    # -- the keeper -------------------------------------------------------------------------------------------

    async def _keep(self, worker: Worker, ended: asyncio.Event) -> None:
        """Beside the worker: passes on ``stopping`` and abort requests, takes stalled jobs back, and stops the
        attempts this worker no longer holds."""
        next_maintenance = 0.0
        last_contact = time.monotonic()
        while not ended.is_set():
            if self.stopping.is_set():
                worker.stop()  # type: ignore[no-untyped-call]  # idempotent; repeated in case run() reset it
            with self._lock:
                running = dict(self._running)
            for job in running.values():
                if job.context.should_abort():
                    job.attempt.stop("the job was aborted")
            now = time.monotonic()
            if now >= next_maintenance and worker.worker_id is not None:
                next_maintenance = now + self.maintenance
                try:
                    await self._recover_stalled()
                    await self._check_holds(worker.worker_id, running)
                    last_contact = time.monotonic()
                except Exception as error:  # the keeper must live on: it passes ``stopping`` to the worker
                    logger.warning("worker %s could not reach the job store: %s", self.name, error)
            if running and time.monotonic() - last_contact > self.stall:
                # Out of touch for longer than the stall time: other workers are taking these jobs over.
                for job in running.values():
                    job.attempt.lose("the worker lost contact with the job store")
            try:
                await asyncio.wait_for(ended.wait(), _TICK_SECONDS)
            except TimeoutError:
                pass

    async def _recover_stalled(self) -> None:
        """Send the jobs of workers silent for longer than the stall time back to the queue, then forget those
        workers. One worker at a time does it, so that a job retried and fetched again by a live worker is never
        retried a second time by a worker that listed it before."""
        connector = self.app.connector
        assert isinstance(connector, PsycopgConnector)
        manager = self.app.job_manager
        try:
            async with connector.pool.connection() as connection, connection.transaction():
                cursor = await connection.execute("SELECT pg_try_advisory_xact_lock(%s)", (_RECOVERY_LOCK,))
                if await cursor.fetchone() != (True,):
                    return
                for job in await manager.get_stalled_jobs(seconds_since_heartbeat=self.stall):
                    logger.warning("job %s (%s) stalled in worker %s: queued again", job.id,
                                   job.task_kwargs.get("operation"), job.worker_id)
                    try:
                        await manager.retry_job(job)
                    except procrastinate_errors.ConnectorException as error:
                        # Its worker finished it after all, between the listing and now.
                        logger.info("stalled job %s was not queued again: %s", job.id, error)
                await manager.prune_stalled_workers(self.stall)
        except psycopg.Error as error:
            raise procrastinate_errors.ConnectorException(str(error)) from error

    async def _check_holds(self, worker_id: int, running: dict[int, _Running]) -> None:
        """Stop the attempts of jobs this worker no longer holds (taken back while it was cut off)."""
        if not running:
            return
        rows = await self.app.connector.execute_query_all_async(
            "SELECT id FROM procrastinate_jobs WHERE id = ANY(%(ids)s) AND status = 'doing'"
            " AND worker_id = %(worker_id)s", ids=list(running), worker_id=worker_id)
        held = {row["id"] for row in rows}
        with self._lock:
            # A job that returned since the snapshot is finished, not taken over.
            lost = [job for job_id, job in running.items() if job_id not in held and job_id in self._running]
        for job in lost:
            job.attempt.lose("another worker took the job over")


async def _sleep_unless(event: threading.Event, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not event.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(_TICK_SECONDS)
