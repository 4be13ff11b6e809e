"""Job engines compared on this machine: Convener's procrastinate engine on PostgreSQL against Celery on Redis
or RabbitMQ, for the jobs Convener runs (an evaluation result, an ingest: seconds to minutes each).

Run from the repository root (Celery is in the ``bench`` extra; PostgreSQL, Redis and RabbitMQ on loopback)::

    .venv/bin/python benchmarks/job_engines.py [--jobs 2000] [--concurrency 4] [--brokers redis,amqp]

Each engine gets one worker process (procrastinate: a thread of this process running ``ProcrastinateEngine.work``;
Celery: a ``celery worker`` subprocess, thread pool) with ``--concurrency`` threads, and empty jobs:

* enqueue  - one job queued, median and p95 ms over 300: procrastinate in its own committed transaction (what a
             service pays to queue a job with its rows), Celery by ``apply_async`` (after the rows' commit).
* pickup   - an idle worker: from the enqueue's return to the job's start, median ms over 50 one after another
             (procrastinate wakes on LISTEN/NOTIFY, Celery on the broker's push).
* drain    - ``--jobs`` jobs queued beforehand, then a worker started: jobs per second between the first job's
             start and the last's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

POSTGRES = os.environ.get("CONVENER_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
BROKERS = {"redis": "redis://127.0.0.1:6379/14", "amqp": "amqp://guest:guest@127.0.0.1:5672//"}
TALLY = "redis://127.0.0.1:6379/15"
"""Where Celery tasks write when they started, for this process to read (a Redis database of its own)."""


def summary(values_ms: list[float]) -> str:
    ordered = sorted(values_ms)
    return f"median {statistics.median(ordered):.2f} ms, p95 {ordered[int(len(ordered) * 0.95) - 1]:.2f} ms"


# -------------------------------------------------------------------------------------------------- procrastinate


def bench_procrastinate(jobs: int, concurrency: int) -> dict[str, str]:
    from sqlalchemy import create_engine

    from convener.jobs.model import Attempt, ClaimedJob, QueuedJob
    from convener.jobs.procrastinate_engine import ProcrastinateEngine
    from convener.store.database import Database

    name = f"bench_jobs_{uuid.uuid4().hex[:8]}"
    admin = create_engine(POSTGRES, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    database = Database(POSTGRES.rsplit("/", 1)[0] + f"/{name}")
    try:
        engine = ProcrastinateEngine(database)
        started: list[float] = []
        lock = threading.Lock()

        def execute(claimed: ClaimedJob, attempt: Attempt) -> None:
            with lock:
                started.append(time.perf_counter())

        def submit(count: int) -> None:
            with database.transaction() as connection:
                engine.submit(connection, [QueuedJob(task="bench", queue="bench", operation=f"op-{n}", payload={})
                                           for n in range(count)])

        def run_worker() -> tuple[threading.Event, threading.Thread]:
            stopping = threading.Event()
            thread = threading.Thread(target=engine.work, args=(execute,), kwargs={
                "worker": "bench", "concurrency": concurrency, "queues": None, "stopping": stopping})
            thread.start()
            return stopping, thread

        def wait_for(count: int) -> None:
            deadline = time.monotonic() + 300
            while len(started) < count:
                assert time.monotonic() < deadline, "procrastinate: jobs did not run"
                time.sleep(0.001)

        enqueue = []
        for _ in range(300):
            begin = time.perf_counter()
            submit(1)
            enqueue.append((time.perf_counter() - begin) * 1000)
        stopping, thread = run_worker()
        wait_for(300)  # the enqueue test's jobs
        pickup = []
        for n in range(50):
            submit(1)
            returned = time.perf_counter()
            wait_for(301 + n)
            pickup.append((started[-1] - returned) * 1000)
        stopping.set()
        thread.join()
        started.clear()
        submit(jobs)
        stopping, thread = run_worker()
        wait_for(jobs)
        stopping.set()
        thread.join()
        engine.close()
        return {"enqueue": summary(enqueue), "pickup": summary(pickup),
                "drain": f"{jobs / (started[-1] - started[0]):.0f} jobs/s"}
    finally:
        database.dispose()
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


# --------------------------------------------------------------------------------------------------------- celery


def celery_app(broker: str):  # type: ignore[no-untyped-def]
    import redis
    from celery import Celery

    app = Celery("job_engines", broker=broker)
    # What Convener would need: a job acknowledged only when done, so that a dead worker's job is delivered again.
    app.conf.update(task_acks_late=True, worker_prefetch_multiplier=1, task_reject_on_worker_lost=True,
                    broker_connection_retry_on_startup=True, worker_hijack_root_logger=False)
    tally = redis.Redis.from_url(TALLY)

    @app.task(name="bench.empty", ignore_result=True)
    def empty() -> None:
        tally.rpush("bench:started", repr(time.time()))

    return app, empty, tally


def celery_worker(broker: str, concurrency: int) -> None:
    app, _, _ = celery_app(broker)
    app.worker_main(["worker", "--pool=threads", f"--concurrency={concurrency}", "--loglevel=WARNING",
                     "--without-gossip", "--without-mingle", "--without-heartbeat", "--queues=bench"])


def bench_celery(broker_name: str, jobs: int, concurrency: int) -> dict[str, str]:
    broker = BROKERS[broker_name]
    app, empty, tally = celery_app(broker)
    tally.delete("bench:started")
    app.control.purge()

    def start_worker() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, __file__, "--celery-worker", broker_name,
                                 "--concurrency", str(concurrency)])

    def wait_for(count: int) -> None:
        deadline = time.monotonic() + 300
        while tally.llen("bench:started") < count:
            assert time.monotonic() < deadline, "celery: jobs did not run"
            time.sleep(0.001)

    def send() -> None:
        empty.apply_async(queue="bench")

    def stop(worker: subprocess.Popen[bytes]) -> None:
        worker.terminate()
        worker.wait(60)

    enqueue = timed(send, 300)
    worker = start_worker()
    try:
        wait_for(300)
        pickup = []
        for n in range(50):
            send()
            returned = time.time()
            wait_for(301 + n)
            pickup.append((float(tally.lindex("bench:started", -1) or 0) - returned) * 1000)
    finally:
        stop(worker)
    tally.delete("bench:started")
    for _ in range(jobs):
        send()
    worker = start_worker()
    try:
        wait_for(jobs)
    finally:
        stop(worker)
    times = [float(value) for value in tally.lrange("bench:started", 0, -1)]
    tally.delete("bench:started")
    return {"enqueue": summary(enqueue), "pickup": summary(pickup),
            "drain": f"{jobs / (max(times) - min(times)):.0f} jobs/s"}


def timed(call: Callable[[], None], times: int) -> list[float]:
    found = []
    for _ in range(times):
        begin = time.perf_counter()
        call()
        found.append((time.perf_counter() - begin) * 1000)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--brokers", default="redis,amqp")
    parser.add_argument("--celery-worker", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.celery_worker:
        celery_worker(BROKERS[arguments.celery_worker], arguments.concurrency)
        return
    results = {"procrastinate (PostgreSQL)": bench_procrastinate(arguments.jobs, arguments.concurrency)}
    for broker in arguments.brokers.split(","):
        results[f"celery ({broker})"] = bench_celery(broker, arguments.jobs, arguments.concurrency)
    print(f"| engine | enqueue one job | pickup by an idle worker | drain {arguments.jobs} empty jobs "
          f"({arguments.concurrency} threads) |")
    print("| --- | --- | --- | --- |")
    for engine, found in results.items():
        print(f"| {engine} | {found['enqueue']} | {found['pickup']} | {found['drain']} |")


if __name__ == "__main__":
    main()
