"""A worker process for tests/jobs/test_procrastinate_engine.py: runs one procrastinate engine worker whose jobs
never end, and says on stdout which job and attempt it started, so that the test can kill it mid-job.

Usage: procrastinate_child.py DATABASE_URL STALL_SECONDS WORKER_NAME
"""

from __future__ import annotations

import json
import sys
import threading

from convener.jobs.model import Attempt, ClaimedJob
from convener.jobs.procrastinate_engine import ProcrastinateEngine
from convener.store.database import Database


def main() -> None:
    url, stall, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    engine = ProcrastinateEngine(Database(url), stall_seconds=stall)
    forever = threading.Event()

    def execute(claimed: ClaimedJob, attempt: Attempt) -> None:
        print(json.dumps({"id": claimed.id, "attempt": attempt.number, "worker": attempt.worker}), flush=True)
        forever.wait()

    engine.work(execute, worker=name, concurrency=1, queues=None, stopping=threading.Event())


if __name__ == "__main__":
    main()
