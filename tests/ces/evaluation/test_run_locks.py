"""The row locks of a running run (PostgreSQL, where writers lock rows; on SQLite a transaction holds the whole
store): every writer takes results first, then aggregates, then the run (``RunExecutor._claim``), so a claim
and a cancel of the same run wait for each other and never deadlock."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import select, text, update

from convener.auth.caller import LOCAL_USER
from convener.ces.evaluation.models import ExecutionState
from convener.ces.tables import evaluation_results, evaluation_runs
from tests.ces.evaluation.test_aggregates import IDS, open_services, run, setup

WAIT_SECONDS = 10.0
_BLOCKED_BY = text("SELECT count(*) FROM pg_stat_activity WHERE :claimer = ANY(pg_blocking_pids(pid))")
"""How many backends wait for a lock the claimer holds."""


def test_a_cancel_waits_for_a_claim_holding_a_result_and_leaves_it_running(database_url: str, tmp_path: Path) -> None:
    """A claim holds a queued result (locked, being marked RUNNING) when the run is cancelled; the claim then
    counts into the run, as it does before committing. The cancel waits for the result, holding nothing the
    claim needs; once the claim commits, it cancels the other queued results and leaves the claimed one to
    finish. (With the run locked first by the cancel, as before, the claim's count waited for the cancel and the
    cancel for the claim's result: PostgreSQL's deadlock detection failed one of them.)"""
    if not database_url.startswith("postgresql"):
        pytest.skip("row locks are PostgreSQL's: a SQLite transaction holds the whole store")
    services = open_services(tmp_path, database_url, worker=False)  # nothing plays: the claim is this test's
    try:
        setup(services)
        run_name, operation = run(services, wait=False)
        claimer = services.database.engine.connect()
        claim = claimer.begin()
        claimer.execute(text("SET LOCAL statement_timeout = '8s'"))
        claimer_pid = claimer.scalar(text("SELECT pg_backend_pid()"))
        claimed = claimer.execute(select(evaluation_results.c.id).where(
            evaluation_results.c.evaluation_run == run_name).order_by(evaluation_results.c.id.desc()).limit(1)
            .with_for_update()).scalar_one()
        claimer.execute(update(evaluation_results).where(evaluation_results.c.id == claimed).values(
            execution_state=ExecutionState.RUNNING.value, attempts=1))
        failures: list[BaseException] = []

        def cancel() -> None:
            try:
                services.runtime.operations.cancel(operation, LOCAL_USER)
            except BaseException as error:  # noqa: BLE001 - reported by the test
                failures.append(error)

        cancelling = threading.Thread(target=cancel)
        cancelling.start()
        deadline = time.monotonic() + WAIT_SECONDS
        # The cancel waits for the claimed result's lock. Each look in a transaction of its own: within one,
        # PostgreSQL shows the activity as it was at the first.
        with services.database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as watcher:
            while not watcher.scalar(_BLOCKED_BY, {"claimer": claimer_pid}):
                assert time.monotonic() < deadline and cancelling.is_alive(), failures
                time.sleep(0.02)
        # The claim counts into its run, as a claim does before it commits: the run's row must be free.
        claimer.execute(update(evaluation_runs).where(evaluation_runs.c.run_id == run_name.rsplit("/", 1)[-1])
                        .values(pending_count=evaluation_runs.c.pending_count))
        claim.commit()
        claimer.close()
        cancelling.join(WAIT_SECONDS)
        assert not cancelling.is_alive() and not failures, failures
        with services.database.reading() as connection:
            states = dict(connection.execute(select(evaluation_results.c.id, evaluation_results.c.execution_state)
                                             .where(evaluation_results.c.evaluation_run == run_name)).all())
            cancelled = connection.scalar(select(evaluation_runs.c.cancel_requested).where(
                evaluation_runs.c.run_id == run_name.rsplit("/", 1)[-1]))
        assert states.pop(claimed) == ExecutionState.RUNNING.value
        assert sorted(states.values()) == [ExecutionState.CANCELLED.value] * (len(IDS) - 1)
        assert cancelled
    finally:
        services.close()
