"""Run in a child process by test_analytics_limits.py, so that the test process's own memory does not count:
open a data source with a small budget, warm it up, note the idle RSS, run one hostile query with a short
deadline, wait for the interrupted engine to stop, and print what happened as JSON.

    python rss_probe.py <duckdb|sqlite> <folder> <seconds> <sql>
"""

from __future__ import annotations

import gc
import json
import sys
import time
from pathlib import Path

from convener.analytics.budget import Budget
from convener.analytics.deadline import queries_running
from convener.analytics.spill import SpillFolder
from convener.analytics.engines import open_engine
from convener.api.errors import ApiError

SETTLE_SECONDS = 20.0


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def main() -> None:
    kind, folder, seconds, sql = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    budget = Budget(memory_mb=256, threads=1, spill=SpillFolder(folder), spill_mb=64)
    engine = open_engine(str(folder / ("data.sqlite" if kind == "sqlite" else "data")), budget)
    for _ in range(5):  # warm up: the engine's caches, the threads' stacks, the modules a query imports
        engine.execute("SELECT * FROM t ORDER BY 1", row_limit=100, timeout_seconds=10)
    gc.collect()
    idle = rss_mb()
    started = time.monotonic()
    try:
        result = engine.execute(sql, row_limit=1000, timeout_seconds=seconds)
        outcome = f"OK: {len(result.rows)} rows, cut at {result.cut_at_bytes} bytes"
    except ApiError as error:
        outcome = str(error)
    elapsed = time.monotonic() - started
    settle = time.monotonic() + SETTLE_SECONDS  # the interrupted query, still stopping, holds its memory
    while time.monotonic() < settle and queries_running():
        time.sleep(0.05)
    stopped = time.monotonic() - started
    gc.collect()
    after = rss_mb()
    print(json.dumps({"outcome": outcome, "elapsed": elapsed, "stopped": stopped, "idle_mb": idle,
                      "after_mb": after}), flush=True)
    engine.close()


if __name__ == "__main__":
    main()
