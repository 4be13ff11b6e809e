"""How a played result is stored: a STABLE replay's turns with it, in the transaction that stores it (one
transaction a result, not one more for its sessions), only by the attempt that still holds the result; and
without waiting for the disk, but for the transaction that finishes the run."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from convener.ces.evaluation import executor
from convener.ces.evaluation.executor import PlayResult
from convener.ces.sessions import UnsavedTurn
from convener.ces.tables import conversations, evaluation_results, sessions
from convener.jobs.model import Attempt
from convener.jobs.tables import jobs
from convener.services import Services
from tests.ces.evaluation.test_runs import _queue_checks
from tests.ces.session_helpers import runtime_settings

pytestmark = pytest.mark.anyio


async def _queued(database_url: str, tmp_path: Path, count: int) -> tuple[Services, list[int], list[Job]]:
    """A store with a queued run of ``count`` golden evaluations (one turn each, a job each), opened by a
    process that plays nothing by itself: its services, the results' rows and their jobs."""
    settings = runtime_settings(database_url, tmp_path, worker=False)
    _, pks = await _queue_checks(settings, count)
    services = Services.open(settings)
    with services.database.reading() as connection:
        rows = connection.execute(select(jobs.c.payload, jobs.c.operation).order_by(jobs.c.id)).all()
    return services, pks, [Job(PlayResult.model_validate(row.payload), row.operation) for row in rows]


@pytest.fixture
async def queued(database_url: str, tmp_path: Path) -> Iterator[tuple[Services, int, Job]]:
    """One golden evaluation's result queued (see ``_queued``)."""
    services, pks, [job] = await _queued(database_url, tmp_path, 1)
    try:
        yield services, pks[0], job
    finally:
        services.close()


class Job(NamedTuple):
    payload: PlayResult
    operation: str


def _play(services: Services, job: Job) -> None:
    """The job's first attempt, played here."""
    services.runtime.evaluations.executor.play(job.payload, Attempt(number=1, operation=job.operation,
                                                                    worker="test-worker"))


def _result(services: Services, pk: int) -> Any:
    with services.database.reading() as connection:
        return connection.execute(select(evaluation_results).where(evaluation_results.c.id == pk)).one()


def _eval_sessions(services: Services) -> list[Any]:
    with services.database.reading() as connection:
        return list(connection.execute(select(sessions).where(sessions.c.session_id.like("eval-%"))))


def _eval_conversations(services: Services) -> list[str]:
    with services.database.reading() as connection:
        return list(connection.execute(select(conversations.c.conversation_id).where(
            conversations.c.conversation_id.like("eval-%"))).scalars())


def _after_playing(services: Services, monkeypatch: pytest.MonkeyPatch, then: Any) -> None:
    """Make every turn the replay plays call ``then(turn)`` once played, before anything is stored."""
    play_turn = services.runtime.sessions.play_turn

    def played_then(*args: Any, **kwargs: Any) -> UnsavedTurn:
        turn = play_turn(*args, **kwargs)
        then(turn)
        return turn

    monkeypatch.setattr(services.runtime.sessions, "play_turn", played_then)


LAZY_COMMIT_IS = "-- at commit, synchronous_commit ="


@contextmanager
def _transactions(services: Services) -> Iterator[list[list[str]]]:
    """The statements of each transaction committed meanwhile, in the order they committed."""
    transactions: list[list[str]] = []
    current: dict[int, list[str]] = {}

    def executed(connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        current.setdefault(id(connection), []).append(" ".join(statement.split()))

    def committed(connection: Any) -> None:
        statements = current.pop(id(connection), [])
        if connection.dialect.name == "postgresql":  # how this commit is to wait, as the server has it now
            setting = connection.connection.driver_connection.execute("SHOW synchronous_commit").fetchone()[0]
            statements.append(f"{LAZY_COMMIT_IS} {setting}")
        transactions.append(statements)

    with services.database.listening("before_cursor_execute", executed), \
            services.database.listening("commit", committed):
        yield transactions


async def test_a_stable_replay_stores_its_session_in_the_transaction_that_stores_its_result(
        queued: tuple[Services, int, Job]) -> None:
    services, pk, job = queued
    with _transactions(services) as transactions:
        _play(services, job)
    assert _result(services, pk).execution_state == "COMPLETED"
    writing = [statements for statements in transactions if any(
        statement.startswith("INSERT INTO ces_sessions") for statement in statements)]
    assert len(writing) == 1, transactions
    assert any(statement.startswith("UPDATE ces_evaluation_results SET execution_state")
               and "evaluation_status" in statement for statement in writing[0]), writing
    assert any("INSERT INTO ces_conversation_turns" in statement for statement in writing[0]), writing
    [session] = _eval_sessions(services)
    assert _eval_conversations(services) == [session.session_id]
    assert session.revision == 1


async def test_an_attempt_that_lost_its_result_stores_neither_the_result_nor_its_sessions(
        queued: tuple[Services, int, Job], monkeypatch: pytest.MonkeyPatch) -> None:
    services, pk, job = queued

    def taken_over(_turn: UnsavedTurn) -> None:  # another worker takes the job over meanwhile
        with services.database.transaction() as connection:
            connection.execute(update(evaluation_results).where(evaluation_results.c.id == pk).values(attempts=2))

    _after_playing(services, monkeypatch, taken_over)
    _play(services, job)
    row = _result(services, pk)
    assert (row.execution_state, row.attempts) == ("RUNNING", 2)
    assert _eval_sessions(services) == [] and _eval_conversations(services) == []


async def test_a_session_stored_first_by_another_turn_keeps_it_and_the_result_is_stored(
        queued: tuple[Services, int, Job], monkeypatch: pytest.MonkeyPatch) -> None:
    services, pk, job = queued

    def stored_first(turn: UnsavedTurn) -> None:  # a turn of the same session, stored before this one
        with services.database.transaction() as connection:
            connection.execute(insert(sessions).values(
                app_pk=turn.app_pk, session_id=turn.name.id, app_version="", deployment="", revision=7,
                ended=False, update_time_us=1, state={"theirs": True}))

    _after_playing(services, monkeypatch, stored_first)
    _play(services, job)
    assert _result(services, pk).execution_state == "COMPLETED"
    [session] = _eval_sessions(services)
    assert (session.revision, session.state) == (7, {"theirs": True})
    assert _eval_conversations(services) == [], "the turn that lost is not recorded either"


async def test_turns_that_cannot_be_stored_leave_their_result_stored_without_them(
        queued: tuple[Services, int, Job], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    services, pk, job = queued

    def failing(*_: Any, **__: Any) -> bool:
        raise IntegrityError("INSERT INTO ces_conversation_turns …", {}, Exception("duplicate key"))

    monkeypatch.setattr(services.runtime.sessions, "save_all", failing)
    with caplog.at_level(logging.WARNING, logger="convener.ces.evaluation.executor"):
        _play(services, job)
    row = _result(services, pk)
    assert (row.execution_state, row.evaluation_status) == ("COMPLETED", "PASS")
    assert _eval_sessions(services) == []
    assert "could not be stored; stored without them" in caplog.text


async def test_results_commit_without_waiting_for_the_disk_but_the_one_finishing_the_run(
        database_url: str, tmp_path: Path) -> None:
    services, pks, jobs_queued = await _queued(database_url, tmp_path, 2)
    lazily = f"{LAZY_COMMIT_IS} off"
    try:
        with _transactions(services) as transactions:
            for job in jobs_queued:
                _play(services, job)
        stores = [statements for statements in transactions if any(
            statement.startswith("UPDATE ces_evaluation_results SET execution_state") for statement in statements)]
        assert len(stores) == 4, "each job's claim, then its store"
        finished = [statements for statements in stores if any(
            statement.startswith("UPDATE ces_evaluation_runs SET state") for statement in statements)]
        assert finished == [stores[-1]], "the last store finishes the run"
        if services.database.dialect == "postgresql":
            assert [lazily in statements for statements in stores] == [True, True, True, False]
        else:  # SQLite's commits do not wait for the disk (synchronous=NORMAL): nothing to say
            assert not any("synchronous_commit" in " ".join(statements) for statements in transactions)
        assert [_result(services, pk).execution_state for pk in pks] == ["COMPLETED", "COMPLETED"]
    finally:
        services.close()


async def test_a_jobs_replays_read_their_app_once_a_group_and_nothing_of_their_sessions(
        database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    services, pks, jobs_queued = await _queued(database_url, tmp_path, 3)
    first = jobs_queued[0]
    # One job of the three results (a large run's jobs hold several), played here: the first alone, then the
    # other two as one group (as quick results are, however slow the machine).
    job = Job(first.payload.model_copy(update={"result": pks[0], "more": tuple(pks[1:])}), first.operation)
    monkeypatch.setattr(executor, "GROUP_SECONDS", 3600.0)
    read: list[str] = []
    try:
        with services.database.listening("before_cursor_execute",
                                         lambda _c, _k, statement, *_: read.append(" ".join(statement.split()))):
            _play(services, job)
        assert [_result(services, pk).execution_state for pk in pks] == ["COMPLETED"] * 3
        assert not [statement for statement in read if "JOIN ces_sessions" in statement]
        # What the app's draft is made of, read once by each group's first replay (the first result, then the others).
        drafts_read = [statement for statement in read if "draft_app_etag" in statement]
        assert len(drafts_read) == 2, drafts_read
        assert len(_eval_sessions(services)) == 3
    finally:
        services.close()
