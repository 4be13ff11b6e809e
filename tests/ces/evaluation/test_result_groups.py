"""A job's quick results are claimed in groups and each group's outcomes stored in one transaction: the first
result alone (unless the process knows the run's pace from its other jobs), then as many as play in about
``GROUP_SECONDS``. The results of a group behind the one it plays
first are reserved (held by the attempt, still QUEUED): a cancel cancels them as queued results, a later attempt
takes them over, and either way the attempt that reserved them stores nothing of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from convener.auth.caller import LOCAL_USER
from convener.ces.evaluation import executor
from convener.ces.evaluation.executor import MAX_RESULTS_PER_JOB, RunPaces, next_group
from convener.ces.sessions import UnsavedTurn
from convener.ces.tables import evaluation_results, evaluation_runs
from convener.jobs.model import Attempt
from convener.services import Services
from tests.ces.evaluation.test_replay_storage import Job, _after_playing, _eval_sessions, _play, _queued, _transactions

pytestmark = pytest.mark.anyio

RESULTS = 4


@pytest.fixture
async def one_job(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A run of four quick golden evaluations queued as one job, whose results after the first make one group."""
    monkeypatch.setattr(executor, "JOBS_PER_RUN", 1)  # the run's results in one job
    monkeypatch.setattr(executor, "GROUP_SECONDS", 60.0)  # however slow this machine, the rest in one group
    services, pks, [job] = await _queued(database_url, tmp_path, RESULTS)
    try:
        assert job.payload.results() == tuple(pks)
        yield services, pks, job
    finally:
        services.close()


def _rows(services: Services, pks: list[int]) -> list[Any]:
    with services.database.reading() as connection:
        return connection.execute(select(evaluation_results).where(evaluation_results.c.id.in_(pks))
                                  .order_by(evaluation_results.c.id)).all()


def _at_second_result(services: Services, pks: list[int], monkeypatch: pytest.MonkeyPatch, then: Any) -> None:
    """Call ``then()`` once, when the first result of the group (the job's second) has played its turn."""
    seen: list[str] = []
    second = _rows(services, pks)[1].result_id

    def once(turn: UnsavedTurn) -> None:
        if second in turn.name.id and not seen:
            seen.append(turn.name.id)
            then()

    _after_playing(services, monkeypatch, once)


def _run(services: Services) -> Any:
    with services.database.reading() as connection:
        return connection.execute(select(evaluation_runs)).one()


def test_a_job_claims_one_result_then_as_many_as_play_in_the_group_time() -> None:
    assert next_group(attempt=1, taken=0, seconds=0.0) == 1, "nothing known of their pace yet"
    assert next_group(attempt=1, taken=1, seconds=0.05) == 2
    assert next_group(attempt=1, taken=2, seconds=0.01) == MAX_RESULTS_PER_JOB
    assert next_group(attempt=1, taken=1, seconds=3.0) == 1, "a slow result is stored as soon as it is played"
    assert next_group(attempt=2, taken=3, seconds=0.001) == 1, "a job taken again plays one at a time"


def test_a_job_of_a_run_played_before_claims_its_first_group_at_the_pace_seen() -> None:
    assert next_group(attempt=1, taken=0, seconds=0.0, pace=0.05) == 2
    assert next_group(attempt=1, taken=0, seconds=0.0, pace=0.001) == MAX_RESULTS_PER_JOB
    assert next_group(attempt=1, taken=0, seconds=0.0, pace=3.0) == 1
    assert next_group(attempt=1, taken=2, seconds=6.0, pace=0.001) == 1, "then at its own pace"
    assert next_group(attempt=2, taken=0, seconds=0.0, pace=0.001) == 1, "a job taken again plays one at a time"


def test_run_paces_are_the_last_seen_forgotten_with_their_run_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    paces = RunPaces()
    paces.saw((1, "r"), 0.5)
    paces.saw((1, "r"), 0.01)
    assert paces.of((1, "r")) == 0.01 and paces.of((2, "r")) is None
    paces.forget((1, "r"))
    assert paces.of((1, "r")) is None
    monkeypatch.setattr(RunPaces, "MAX_RUNS", 3)
    for index in range(5):
        paces.saw((1, f"r{index}"), 0.1)
    assert len(paces) == 3 and paces.of((1, "r0")) is None and paces.of((1, "r4")) == 0.1


async def test_a_second_job_of_a_run_claims_its_results_in_one_group(
        database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "JOBS_PER_RUN", 2)  # six results, three a job
    monkeypatch.setattr(executor, "GROUP_SECONDS", 60.0)
    services, pks, jobs_queued = await _queued(database_url, tmp_path, 6)
    try:
        assert [len(job.payload.results()) for job in jobs_queued] == [3, 3]
        claims = []
        for job in jobs_queued:
            with _transactions(services) as transactions:
                _play(services, job)
            claims.append(sum(any(statement.startswith("UPDATE ces_evaluation_results SET execution_state")
                                  and "attempts=" in statement for statement in statements)
                              for statements in transactions))
        assert claims == [2, 1], "the first job: one result alone, then the others; the second: all three at once"
        assert [row.execution_state for row in _rows(services, pks)] == ["COMPLETED"] * 6
        assert len(services.runtime.evaluations.executor.paces) == 0, "forgotten when the run finished"
    finally:
        services.close()


async def test_the_results_of_a_group_are_stored_in_one_transaction(one_job: Any) -> None:
    services, pks, job = one_job
    with _transactions(services) as transactions:
        _play(services, job)
    writing = [statements for statements in transactions
               if any(statement.startswith("UPDATE ces_evaluation_results") for statement in statements)]
    storing = [any("evaluation_status=" in statement for statement in statements) for statements in writing]
    assert storing == [False, True, True], "the first claimed alone; stored with the claim of the rest; the rest"
    held = [sum("SELECT ces_evaluation_results.id FROM" in statement for statement in statements)
            for statements in writing]
    assert held == [0, 0, 1], "a group's results still held, found in one statement (and stored in one); one alone" \
                              " is stored if held, in one statement; nothing to store, no statement"
    assert [(row.execution_state, row.evaluation_status, row.attempts) for row in _rows(services, pks)] == [
        ("COMPLETED", "PASS", 1)] * RESULTS
    assert len(_eval_sessions(services)) == RESULTS
    run = _run(services)
    assert (run.state, run.completed_count, run.passed_count, run.pending_count) == ("COMPLETED", RESULTS, RESULTS, 0)


async def test_while_a_group_plays_its_first_result_runs_and_the_others_are_held_queued(
        one_job: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    services, pks, job = one_job
    seen: list[list[tuple[str, int]]] = []
    _at_second_result(services, pks, monkeypatch, lambda: seen.append(
        [(row.execution_state, row.attempts) for row in _rows(services, pks)]))
    _play(services, job)
    assert seen == [[("COMPLETED", 1), ("RUNNING", 1), ("QUEUED", 1), ("QUEUED", 1)]]


async def test_a_cancel_while_a_group_plays_cancels_its_held_results_and_lets_the_running_one_finish(
        one_job: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    services, pks, job = one_job
    _at_second_result(services, pks, monkeypatch,
                      lambda: services.runtime.operations.cancel(job.operation, LOCAL_USER))
    _play(services, job)  # this attempt is not told of the cancel: it plays the held results, and stores nothing of them
    assert [row.execution_state for row in _rows(services, pks)] == ["COMPLETED", "COMPLETED", "CANCELLED", "CANCELLED"]
    run = _run(services)
    assert (run.state, run.completed_count, run.cancelled_count, run.pending_count) == ("CANCELLED", 2, 2, 0)
    assert len(_eval_sessions(services)) == 2, "the sessions of the results not stored are not either"


async def test_a_later_attempt_takes_over_the_held_results_and_the_first_stores_nothing_of_them(
        one_job: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    services, pks, job = one_job

    def taken_over() -> None:  # as when the first worker's lease lapses mid-group and another takes the job
        services.runtime.evaluations.executor.play(job.payload, Attempt(number=2, operation=job.operation,
                                                                        worker="second-worker"))

    _at_second_result(services, pks, monkeypatch, taken_over)
    _play(services, Job(job.payload, job.operation))
    rows = _rows(services, pks)
    assert [(row.execution_state, row.attempts) for row in rows] == [
        ("COMPLETED", 1), ("COMPLETED", 2), ("COMPLETED", 2), ("COMPLETED", 2)]
    run = _run(services)
    assert (run.state, run.completed_count, run.pending_count) == ("COMPLETED", RESULTS, 0), "each counted once"
    assert len(_eval_sessions(services)) == RESULTS, "only the sessions of the attempt that stored each result"
