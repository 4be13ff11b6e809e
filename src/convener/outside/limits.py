"""Every size a caller controls, and its limit: one table of documented defaults.

A limit is declared once, here, with what it bounds; the code that enforces it imports the constant.
``docs/limits.md`` is checked against this table by the tests, so a limit cannot go undocumented.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    name: str
    value: int | float
    unit: str
    what: str
    setting: str | None = None
    """The ``CONVENER_*`` setting that changes it, when an operator may."""


LIMITS: dict[str, Limit] = {}


def limit(name: str, value: int, unit: str, what: str, setting: str | None = None) -> int:
    LIMITS[name] = Limit(name, value, unit, what, setting)
    return value


# Declared as: ``RUN_SESSION_TEXT = limit("ces.run_session.text", 100_000, "characters", "one input's text")``.


# --- analytics: what one question to a data agent may cost --------------------------------------------

ANALYTICS_ROWS = limit("analytics.result.rows", 1000, "rows", "rows one data agent query returns; more are cut "
                       "off, and the answer says so", setting="CONVENER_ANALYTICS_ROW_LIMIT")
ANALYTICS_RESULT_BYTES = limit("analytics.result.bytes", 4_000_000, "bytes", "one query's result, its values "
                               "counted as text; rows past it are cut off, and the answer says so",
                               setting="CONVENER_ANALYTICS_RESULT_BYTES")
ANALYTICS_VALUE_BYTES = limit("analytics.result.value", 1_000_000, "bytes", "one value a query makes or returns "
                              "(SQLite refuses a longer string or blob as it is made; a longer value from "
                              "another engine ends the query): RESOURCE_EXHAUSTED",
                              setting="CONVENER_ANALYTICS_VALUE_BYTES")
ANALYTICS_SECONDS = limit("analytics.query.time", 30, "seconds", "one query, enforced from outside the engine "
                          "(DuckDB and SQLite interrupt, PostgreSQL cancel): DEADLINE_EXCEEDED",
                          setting="CONVENER_ANALYTICS_TIMEOUT_SECONDS")
ANALYTICS_MEMORY_MB = limit("analytics.engine.memory", 1024, "MB", "memory of one DuckDB data source (a database "
                            "file, a folder of files, a caller's copy of the built-in source): its memory_limit",
                            setting="CONVENER_ANALYTICS_MEMORY_LIMIT_MB")
ANALYTICS_THREADS = limit("analytics.engine.threads", 2, "threads", "threads one DuckDB data source runs a query "
                          "on", setting="CONVENER_ANALYTICS_THREADS")
ANALYTICS_SPILL_MB = limit("analytics.engine.spill", 2048, "MB", "disk one DuckDB data source may spill to, in "
                           "the data dir's analytics-tmp folder", setting="CONVENER_ANALYTICS_SPILL_LIMIT_MB")
ANALYTICS_WORK_MEM_MB = limit("analytics.postgresql.work_mem", 32, "MB", "memory of each sort or hash of a query "
                              "on a PostgreSQL source (work_mem)", setting="CONVENER_ANALYTICS_WORK_MEM_MB")
ANALYTICS_RUNNING = limit("analytics.queries.running", 4, "queries", "data agent queries running at once in one "
                          "server, counting interrupted ones still stopping; more wait, up to their deadline")
