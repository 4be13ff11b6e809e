"""Evaluation results played as jobs, by whichever worker takes them, exactly once in effect.

A run is decided in one transaction (``EvaluationService.run``): the run, one QUEUED result per
evaluation and repetition (each with the plan it will follow: the evaluation as it was then), the
operation, and the jobs that play the results (one each, or a few each in a large run: ``results_per_job``).
A worker (in any process on the store: see ``convener.jobs``) plays a job's results one after the other, in
groups (as many as play in about ``GROUP_SECONDS``; the first alone unless the worker's process has played the
run before and knows its pace: see ``next_group``):

1. claim a group, under the job's attempt number: its first result -> RUNNING, the others held as they are
   (QUEUED), unless the run was cancelled (-> CANCELLED);
2. replay (golden) or simulate (scenario) and score each with no transaction open (agents and judges may be
   slow), stopping at the next turn if the run is cancelled meanwhile;
3. store the outcomes (COMPLETED, ERROR or CANCELLED) of the results the attempt still holds and, in the same
   transaction, the sessions a STABLE replay played (see ``replay``), and count them into the run's progress and
   its operation's metadata; the last result to settle finishes the run and its operation. This is the
   transaction that claims the job's next group, if any.

A worker killed mid-result loses its job when its hold lapses; the next attempt claims the results again (with
fresh sessions), one at a time, and the first one's late writes, if any, are refused. Nothing is re-run when a
server starts.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, TypeVar, overload

from sqlalchemy import Connection, Select, Update, and_, bindparam, func, select, update
from sqlalchemy.exc import DBAPIError

from convener.api.errors import ApiError
from convener.api.protojson import Timestamp
from convener.auth.caller import Caller
from convener.ces.evaluation import aggregates
from convener.ces.evaluation.models import (
    ErrorType,
    Evaluation,
    EvaluationErrorInfo,
    EvaluationExpectation,
    EvaluationRun,
    EvaluationRunProgress,
    EvaluationRunState,
    EvaluationRunSummary,
    ExecutionState,
    GoldenResult,
    Outcome,
    TurnReplayResult,
)
from convener.ces.evaluation.plans import ResultPlan
from convener.ces.evaluation.replay import GoldenReplay, ShouldStop, never
from convener.ces.evaluation.scenario_scoring import ScenarioScore, execution_mode, judge_for, score_scenario
from convener.ces.evaluation.scoring import evaluation_outcome, score_golden_criteria, score_turn
from convener.ces.evaluation.simulated_user import SimulatedUser, SimulationFailure
from convener.ces.evaluation.simulation import ScenarioSimulator, Simulation, SimulationPlan, TurnListener
from convener.ces.models import Span
from convener.ces.names import AppName, EvaluationName, EvaluationResultName
from convener.ces.sessions import Openings, SessionService, UnsavedTurn
from convener.ces.tables import apps, evaluation_results, evaluation_runs
from convener.jobs.model import Attempt, Payload, Task
from convener.jobs.queue import Jobs
from convener.llm.judges import Judge
from convener.longrunning.models import Status
from convener.longrunning.service import CANCEL_REQUESTED_OF, OperationService, operation_key
from convener.store.database import AnyRow, Database
from convener.store.expressions import among_parameters, numbered, one_of

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

RUN_METADATA = "type.googleapis.com/google.cloud.ces.v1beta.RunEvaluationOperationMetadata"
RUN_RESPONSE = "type.googleapis.com/google.cloud.ces.v1beta.RunEvaluationResponse"
MAX_ATTEMPTS = 3
"""A result whose job's workers stopped while playing it this many times is given up (ERROR, with the reason)."""
JOBS_PER_RUN = 32
MAX_RESULTS_PER_JOB = 8
"""A job plays at most this many results: a worker stopping gracefully waits for its jobs to finish."""
GROUP_SECONDS = 0.1
"""A job claims its results in groups that play in about this long, and stores each group's outcomes together (see
``next_group``): results that take milliseconds share their transactions, slow ones (a model's turns) are stored
one by one, each as soon as it is played."""
CLAIMABLE = (ExecutionState.QUEUED.value, ExecutionState.RUNNING.value)
PROGRESS_SECONDS = 0.5
"""How often at most this process rewrites a running run's operation metadata with its progress. Waiters on the
operation read it at each rewrite; get_evaluation_run reads the run's counts live, whatever this says."""
RUN_STATE = tuple(column for column in evaluation_runs.c if column.name != "body")
"""A run's row without its body, which lists every result and evaluation: large, and rarely needed."""

# The statements a result's claim and record run, built once: building and keying a statement costs more CPU than
# SQLite takes to run it.
_RESULT_RUN = select(evaluation_results.c.app_pk, evaluation_results.c.evaluation_run).where(
    evaluation_results.c.id == bindparam("pk"))
_THE_RUN = (evaluation_runs.c.app_pk == bindparam("app_pk"), evaluation_runs.c.run_id == bindparam("run_id"))
_CLAIMED_COLUMNS = (
    evaluation_results, evaluation_runs.c.cancel_requested.label("run_cancel_requested"),
    evaluation_runs.c.initiated_by.label("run_initiated_by"), CANCEL_REQUESTED_OF.label("operation_cancel_requested"))


def _results_claimed(count: int) -> Select[Any]:
    """The ``count`` results a claim takes (parameters ``numbered("pk", …)``), locked (PostgreSQL) from the highest row down,
    with what the claim reads of their run: whether it or its operation was cancelled (the operation comes first:
    see ``cancel``) and who started it. The run is not locked: see ``_claim``. Nothing when the run is gone (with
    its results)."""
    return select(*_CLAIMED_COLUMNS).join(evaluation_runs, and_(*_THE_RUN)).where(
        among_parameters(evaluation_results.c.id, "pk", count)).order_by(
        evaluation_results.c.id.desc()).with_for_update(of=evaluation_results)


_CLAIM = update(evaluation_results).where(evaluation_results.c.id == bindparam("pk")).values(
    execution_state=bindparam("state"), attempts=bindparam("attempt"), body=bindparam("body"))
_STORE = update(evaluation_results).where(evaluation_results.c.id == bindparam("pk")).values(
    execution_state=bindparam("state"), evaluation_status=bindparam("status"), body=bindparam("body"))
_STORE_HELD = _STORE.where(one_of(evaluation_results.c.execution_state, CLAIMABLE),
                           evaluation_results.c.attempts == bindparam("attempt"))
"""Stores a played result only while the attempt that claimed it still holds it (RUNNING, or QUEUED as reserved
in a group)."""


@functools.lru_cache(maxsize=MAX_RESULTS_PER_JOB)
def _reserving(count: int) -> Update:
    """``count`` queued results (``numbered("pk", …)``) claimed in a group behind the one played first: held by the
    attempt, left QUEUED (cancelled with the run's queued results if the run is) until stored. One statement
    for all, built once per count."""
    return update(evaluation_results).where(among_parameters(evaluation_results.c.id, "pk", count)).values(
        attempts=bindparam("attempt"))


@functools.lru_cache(maxsize=MAX_RESULTS_PER_JOB)
def _held(count: int) -> Select[Any]:
    """Which of ``count`` results (``numbered("pk", …)``) the ``attempt`` still holds, locked from the highest row down: a
    group's results are stored by one ``_STORE`` of those, rather than by a ``_STORE_HELD`` each."""
    return select(evaluation_results.c.id).where(
        among_parameters(evaluation_results.c.id, "pk", count),
        one_of(evaluation_results.c.execution_state, CLAIMABLE), evaluation_results.c.attempts == bindparam("attempt"),
    ).order_by(evaluation_results.c.id.desc()).with_for_update()

_COUNTS: dict[frozenset[str], Any] = {}
"""Run count updates by the counts they change (a handful of combinations), returning the run's counts after."""


def _count_update(columns: frozenset[str]) -> Any:
    statement = _COUNTS.get(columns)
    if statement is None:
        statement = _COUNTS[columns] = update(evaluation_runs).where(
            evaluation_runs.c.app_pk == bindparam("key_app_pk"), evaluation_runs.c.run_id == bindparam("key_run_id"),
        ).values({getattr(evaluation_runs.c, key): getattr(evaluation_runs.c, key) + bindparam(f"delta_{key}")
                  for key in sorted(columns)}).returning(*RUN_STATE)
    return statement


@dataclass(frozen=True)
class HeldResult:
    """A result as its writer holds it: what playing, storing and counting it read."""

    id: int
    app_pk: int
    evaluation_id: str
    result_id: str
    evaluation_run: str
    create_time_us: int
    attempts: int
    body: dict[str, Any]
    plan: dict[str, Any]

    @classmethod
    def of(cls, row: AnyRow) -> HeldResult:
        return cls(id=row.id, app_pk=row.app_pk, evaluation_id=row.evaluation_id, result_id=row.result_id,
                   evaluation_run=row.evaluation_run, create_time_us=row.create_time_us, attempts=row.attempts,
                   body=row.body, plan=row.plan)


Settled = tuple[ExecutionState, str]
"""A result that reached a final state, and its evaluationStatus ("" unless COMPLETED)."""


class Settlement(Enum):
    """What counting settled results into their run did (``RunExecutor._settle``)."""

    NONE = "nothing to count, or the run is gone"
    COUNTED = "counted; the operation's progress is not due for a rewrite"
    PROGRESSED = "counted, and the operation's metadata rewritten with the progress"
    FINISHED = "the run and its operation finished"

    @property
    def rewrote_operation(self) -> bool:
        """Whether the operation changed: its waiters, who read it, are woken only then."""
        return self in (Settlement.PROGRESSED, Settlement.FINISHED)


def operation_metadata(run: EvaluationRun, cancel_requested: bool, end: Timestamp | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "@type": RUN_METADATA,
        "evaluations": run.evaluations or [],
        "evaluationRun": run.name,
        "createTime": str(run.create_time),
        "verb": "run",
        "cancelRequested": cancel_requested,
        "progress": (run.progress or EvaluationRunProgress()).to_json(),
    }
    if end is not None:
        metadata["endTime"] = str(end)
    return metadata


class PlayResult(Payload):
    """A job: play evaluation results of one run (replay their goldens or simulate their scenarios) and score
    them, one after the other."""

    result: int
    """The first result's row; what it plays is the plan stored with it when the run started."""
    app_pk: int | None = None
    run_id: str | None = None
    """The run the result belongs to (its app's row and ID), so that the claim need not look it up; None in a job
    queued before jobs said so."""
    more: tuple[int, ...] = ()
    """The rows of the results played after the first, in order (see ``results_per_job``)."""

    def results(self) -> tuple[int, ...]:
        return (self.result, *self.more)


def results_per_job(results: int) -> int:
    """How many results of a run of ``results`` one job plays: one in a small run; in a large one a few, so that
    each job's take and claim are not paid for every result (a job claims its quick results in groups, and stores
    a group's outcomes in the transaction that claims the next: see ``play``), while a run still makes enough jobs
    (about ``JOBS_PER_RUN``) for many workers to share it."""
    return max(1, min(MAX_RESULTS_PER_JOB, results // JOBS_PER_RUN))


@dataclass(frozen=True)
class Claim:
    """A result an attempt claimed: the row as the claim left it, who started the run, and whether an earlier
    attempt had claimed it and never stored it (its worker stopped while playing it)."""

    row: HeldResult
    caller: Caller
    interrupted: bool


@dataclass(frozen=True)
class Played:
    """A result an attempt played: stored, with its run's counts, if the attempt still holds it."""

    row: HeldResult
    state: ExecutionState
    outcome: dict[str, Any] | None = None
    error: EvaluationErrorInfo | None = None
    turns: tuple[UnsavedTurn, ...] = ()
    """Turns it played and did not store (a STABLE replay's): stored with it."""


class RunExecutor:
    def __init__(self, database: Database, sessions: SessionService, operations: OperationService,
                 judge: Callable[[], Judge], user: Callable[[], SimulatedUser], jobs: Jobs) -> None:
        self.database = database
        self.sessions = sessions
        self.operations = operations
        self.judge = judge
        self.user = user
        self.jobs = jobs
        self.progress_clock = ProgressClock(PROGRESS_SECONDS)
        self.paces = RunPaces()
        # A claim's transaction commits lazily, said by its first statement (see ``_commit_durably_if_finished``).
        self._claims = {count: database.committing_lazily(_results_claimed(count))
                        for count in range(1, MAX_RESULTS_PER_JOB + 1)}
        self.task = Task(name="ces.play_evaluation_result", queue="evaluations", payload=PlayResult, run=self.play)
        jobs.register(self.task)

    def submit(self, connection: Connection, app_pk: int, run_id: str, result_pks: Sequence[int],
               operation: str) -> None:
        """Queue the jobs that play the run's results (``results_per_job`` each, in order), in the transaction that
        creates them; ``jobs.submitted()`` after the commit."""
        size = results_per_job(len(result_pks))
        self.jobs.submit(connection, self.task, (
            PlayResult(result=result_pks[start], more=tuple(result_pks[start + 1:start + size]), app_pk=app_pk,
                       run_id=run_id)
            for start in range(0, len(result_pks), size)), operation)

    def cancel(self, operation: str) -> None:
        """Cancel the run of an operation: its queued results are not run; running ones stop at their next turn."""
        with self.database.transaction() as connection:
            run = connection.execute(select(*RUN_STATE).where(evaluation_runs.c.operation == operation)).first()
            if run is None or run.state != EvaluationRunState.RUNNING.value:
                return
            name = self._run_name(connection, run)
            # The queued results first, locked, then the run (the order of every writer: see ``_claim``). A result
            # a claim holds is waited for, then left out: it is RUNNING when the claim commits.
            cancelled = [HeldResult.of(row) for row in connection.execute(select(evaluation_results).where(
                evaluation_results.c.app_pk == run.app_pk, evaluation_results.c.evaluation_run == name,
                evaluation_results.c.execution_state == ExecutionState.QUEUED.value,
            ).order_by(evaluation_results.c.id.desc()).with_for_update()).all()]
            settled = [self._store(connection, row, ExecutionState.CANCELLED, _final_body(row, ExecutionState.CANCELLED))
                       for row in cancelled]
            connection.execute(update(evaluation_runs).where(evaluation_runs.c.id == run.id).values(
                cancel_requested=True))
            self._settle(connection, run.app_pk, run.run_id, settled)
        self.operations.notify()

    # -- one result ------------------------------------------------------------------------------------

    def play(self, job: PlayResult, attempt: Attempt) -> None:
        """Play a job's results one after the other as its ``attempt``; each outcome is recorded only while that
        attempt is the latest.

        Results are claimed with the attempt's number, which grows each time their job is taken again; a worker
        that lost its job to another (killed, or cut off past its lease) finds its number superseded and writes
        nothing, so each result's outcome is recorded exactly once. They are claimed in groups (``next_group``):
        as many as play in about ``GROUP_SECONDS`` (one first when this process knows nothing yet of the run's
        pace, ``RunPaces``); the outcomes of a group are stored together, in the transaction that claims the
        next group, the last in a transaction of its own.
        """
        results = job.results()
        pending: list[Played] = []
        taken = 0
        started = time.monotonic()
        run = (job.app_pk, job.run_id) if job.app_pk is not None and job.run_id is not None else None
        pace = self.paces.of(run) if run is not None else None
        while taken < len(results):
            group = results[taken:taken + next_group(attempt.number, taken, time.monotonic() - started, pace)]
            claims = self._claim(job, group, attempt, pending)
            pending = []
            # a group's replays begin their sessions from one reading of the app
            openings = Openings(self.sessions)
            for claim in claims:
                pending.append(self._play(claim, attempt, openings))
                if attempt.should_stop():  # cancelled (its queued results are cancelled with it) or lost
                    break
            if attempt.should_stop():
                break
            taken += len(group)
            if run is not None:
                self.paces.saw(run, (time.monotonic() - started) / taken)
        if pending:
            self._record(pending, attempt.number)

    def _play(self, claim: Claim, attempt: Attempt, openings: Openings) -> Played:
        row = claim.row
        if claim.interrupted and attempt.number > MAX_ATTEMPTS:  # its job's workers stopped while playing it,
            # each time: give it up, saying why
            return Played(row, ExecutionState.ERROR, error=EvaluationErrorInfo(
                error_type=ErrorType.RUNTIME_FAILURE,
                error_message=f"interrupted {attempt.number - 1} times: the worker playing it stopped; not retried"))
        turns: list[UnsavedTurn] = []  # stored with the outcome, whatever it is
        try:
            body = self._outcome(row, claim.caller, attempt.should_stop, turns, openings)
            state, error = ExecutionState.COMPLETED, None
        except ApiError as failure:
            body, state = None, ExecutionState.ERROR
            error = EvaluationErrorInfo(error_type=_error_type(failure), error_message=f"{failure.code.name}: {failure.message}")
        except Exception as failure:
            logger.exception("evaluation result %s failed", row.result_id)
            body, state = None, ExecutionState.ERROR
            error = EvaluationErrorInfo(error_type=ErrorType.METRIC_CALCULATION_FAILURE,
                                        error_message=f"the evaluation failed unexpectedly ({type(failure).__name__})")
        if attempt.should_stop():  # cancelled (or lost, and then nothing is written): what it played is not scored
            body, state, error = None, ExecutionState.CANCELLED, None
        return Played(row, state, body, error, tuple(turns))

    def _record(self, played: Sequence[Played], attempt: int) -> None:
        """Store played results' outcomes and count them into their run, those ``attempt`` still holds."""
        _without_turns_if_they_fail(lambda stored: self._record_once(stored, attempt), played)

    def _record_once(self, played: Sequence[Played], attempt: int) -> None:
        with self.database.transaction() as connection:
            # The results, their evaluations' aggregates, then their run, as every writer of them (see ``_claim``);
            # a run deleted meanwhile took its results with it: nothing is stored.
            settled = self._store_played(connection, played, attempt)
            if not settled:
                return
            settlement = self._settle(connection, played[0].row.app_pk, _run_id(played[0].row.evaluation_run), settled)
            self._commit_unless_finished(connection, settlement)
        if settlement.rewrote_operation:  # waiters read the operation: wake them only when it changed
            self.operations.notify()

    def _store_played(self, connection: Connection, played: Sequence[Played], attempt: int) -> list[Settled]:
        """Store the results of ``played`` that ``attempt`` still holds (not deleted, cancelled or taken over by a
        later attempt meanwhile), then the completed ones' aggregates, then the turns they played. A held row is
        as the claim left it (only the holder writes it): its body need not be read again."""
        settled: list[Settled] = []
        if not played:
            return settled
        completed: list[aggregates.CompletedResult] = []
        stored: list[Played] = []
        played = sorted(played, key=lambda one: one.row.id, reverse=True)  # from the highest row down
        bodies = [_final_body(one.row, one.state, one.outcome, one.error) for one in played]
        if len(played) == 1:  # one statement: stored if held
            held = [self._store(connection, played[0].row, played[0].state, bodies[0], attempt=attempt) is not None]
        else:  # two statements, however many: those held, locked, then stored
            still = set(connection.execute(_held(len(played)), {
                "attempt": attempt, **numbered("pk", (one.row.id for one in played))}).scalars())
            held = [one.row.id in still for one in played]
            if any(held):
                connection.execute(_STORE, [_store_values(one.row, one.state, body)
                                            for one, body, kept in zip(played, bodies, held) if kept])
        for one, body, kept in zip(played, bodies, held):
            if not kept:
                continue
            settled.append((one.state, str(body.get("evaluationStatus", ""))))
            stored.append(one)
            if one.state == ExecutionState.COMPLETED:  # only completed results count in the evaluation's metrics
                completed.append(aggregates.CompletedResult(one.row.app_pk, one.row.evaluation_id, body,
                                                            (one.row.create_time_us, one.row.result_id)))
        if completed:
            aggregates.results_completed(connection, completed)
        if turns := [turn for one in stored for turn in one.turns]:
            # a session a turn of it moved on meanwhile keeps its own turn: not stored
            self.sessions.save_all(connection, turns)
        return settled

    def _claim(self, job: PlayResult, group: Sequence[int], attempt: Attempt, played: Sequence[Played]) -> list[Claim]:
        """Store the results the attempt ``played`` last, if any, then claim the results of ``group`` for ``attempt``
        (queued, or left running by an earlier attempt), unless their run was cancelled (then they are CANCELLED)
        or they have settled, all in one transaction. The first result claimed is marked RUNNING; the others are
        reserved, left QUEUED until stored (a cancel of the run cancels them as queued results).

        Rows are locked in one order by every writer of them (PostgreSQL; on SQLite a transaction holds the whole
        store): results from the highest row down (a job's next results before the ones it played), then
        evaluations' aggregates, then the run, whose row each settling result updates. So writers wait for each
        other and never deadlock, and the run's row, which every job of the run updates, is held only from the
        counts' update to the commit: when a claim locked it first and held it to its end, the jobs of a run took
        their claims one after the other (a third of their time spent waiting for it on PostgreSQL). The run is
        read without a lock: the results' locks are what decide. A ``cancel`` committed before the claim locked
        the results left them CANCELLED (not claimable); one under way waits for the claim, then cancels what it
        finds QUEUED (the reserved results too) and leaves the RUNNING one to finish. The attempt sees its
        operation's cancellation as the claim read it (the run comes with it): its next question whether to stop
        needs no transaction of its own."""
        if not played:
            return self._claim_once(job, group, attempt, ())
        return _without_turns_if_they_fail(lambda stored: self._claim_once(job, group, attempt, stored), played)

    def _claim_once(self, job: PlayResult, group: Sequence[int], attempt: Attempt,
                    played: Sequence[Played]) -> list[Claim]:
        with self.database.transaction() as connection:
            key = self._run_key(connection, job)
            if key is None:
                return []  # deleted meanwhile, with its results
            found = connection.execute(self._claims[len(group)], {
                "app_pk": key[0], "run_id": key[1], **operation_key(attempt.operation),
                **numbered("pk", group)}).all()
            settled = self._store_played(connection, played, attempt.number)
            order = {pk: index for index, pk in enumerate(group)}
            claims = self._claim_locked(connection, sorted(found, key=lambda row: order[row.id]), attempt.number,
                                        settled)
            settlement = self._settle(connection, key[0], key[1], settled)
            self._commit_durably_if_finished(connection, settlement)
        if settlement.rewrote_operation:
            self.operations.notify()
        if claims:
            # The operation is cancelled before its run is (``cancel``, after the operation's commit).
            attempt.saw(bool(found[0].operation_cancel_requested))
        return claims

    def _claim_locked(self, connection: Connection, found: Sequence[AnyRow], attempt: int,
                      settled: list[Settled]) -> list[Claim]:
        """Claim the results ``found`` (their rows as ``_results_claimed`` locked them, in the job's order) for
        ``attempt``, or settle them CANCELLED when their run was cancelled. The first claimed, and any an earlier
        attempt left running, are marked RUNNING; the other queued ones are reserved."""
        claims: list[Claim] = []
        reserved: list[int] = []
        for row in found:
            if row.attempts >= attempt or row.execution_state not in CLAIMABLE:
                continue
            held = HeldResult.of(row)
            if row.run_cancel_requested:
                settled.append(self._store(connection, held, ExecutionState.CANCELLED,
                                           _final_body(held, ExecutionState.CANCELLED)))
                continue
            interrupted = row.execution_state == ExecutionState.RUNNING.value
            if claims and not interrupted:
                held = replace(held, attempts=attempt)
                reserved.append(held.id)
            else:
                # The row as the claim leaves it, without reading it back (its plan and body are the larger part).
                held = replace(held, attempts=attempt,
                               body={**held.body, "executionState": ExecutionState.RUNNING.value})
                connection.execute(_CLAIM, {"pk": held.id, "state": ExecutionState.RUNNING.value,
                                            "attempt": attempt, "body": held.body})
            claims.append(Claim(held, Caller(row.run_initiated_by), interrupted=interrupted))
        if reserved:
            connection.execute(_reserving(len(reserved)), {"attempt": attempt, **numbered("pk", reserved)})
        return claims

    def _commit_unless_finished(self, connection: Connection, settlement: Settlement) -> None:
        """A claim's or a result's transaction commits without waiting for the disk (``Database.commit_lazily``),
        unless it finishes the run. What a crash of the server loses of them is played again: the job that
        wrote them is still held by then (its end is a durable commit, after them), so it is taken again once
        its lease lapses and plays again the results it finds unsettled. The transaction that finishes a run
        (and its operation) waits for the disk, and with it every one before it: a run seen finished stays so.
        (A commit's wait for the disk took 0.15 ms on this project's test machine when its disk was idle, 2.8 ms
        while another process wrote a lot: half a result's own work.)"""
        if settlement is not Settlement.FINISHED:
            self.database.commit_lazily(connection)

    def _commit_durably_if_finished(self, connection: Connection, settlement: Settlement) -> None:
        """The same for a claim's transaction, which its first statement made lazy (``Database.committing_lazily``,
        a round trip less than a statement of its own)."""
        if settlement is Settlement.FINISHED:
            self.database.commit_durably(connection)

    @staticmethod
    def _run_key(connection: Connection, job: PlayResult) -> tuple[int, str] | None:
        """The job's run (its app's row and ID): as the job says, or as its result says in a job queued before
        jobs said so."""
        if job.app_pk is not None and job.run_id is not None:
            return job.app_pk, job.run_id
        found = connection.execute(_RESULT_RUN, {"pk": job.result}).first()
        return None if found is None else (found.app_pk, _run_id(found.evaluation_run))

    def _outcome(self, row: HeldResult, caller: Caller, stop: ShouldStop, turns: list[UnsavedTurn],
                 openings: Openings) -> dict[str, Any]:
        """Run the result's evaluation and score it: the result's fields that say how it went. The turns it
        played and did not store are added to ``turns``, as soon as they are played."""
        plan = ResultPlan.model_validate(row.plan)
        evaluation = plan.evaluation
        name = EvaluationResultName.parse(row.body["name"])
        if evaluation.scenario is not None:
            return self._scenario_outcome(row, plan, name, caller, stop)
        assert evaluation.golden is not None
        replay = plan.replay()
        replayed = GoldenReplay(self.sessions, caller, openings).run(replay, name.app_name, _sessions(name, row),
                                                                     stop)
        turns.extend(replayed.unsaved)
        observed = replayed.observed
        judge = self.judge()
        golden = GoldenResult(
            # A NAIVE session that failed or ended early leaves later turns unreplayed: they fail.
            turn_replay_results=[score_turn(turn, observed[index], evaluation, judge) if index < len(observed)
                                 else _not_replayed() for index, turn in enumerate(evaluation.golden.turns or ())],
            evaluation_expectation_results=score_golden_criteria(plan.criteria, evaluation, observed, judge) or None,
        )
        spans = [turn.turn.root_span for turn in observed if turn.turn is not None and turn.turn.root_span]
        root = Span(name="EVALUATION", start_time=spans[0].start_time if spans else None,
                    end_time=spans[-1].end_time if spans else None,
                    attributes={"judge": judge.name, "goldenRunMethod": replay.method.value},
                    child_spans=spans or None)
        return {
            "goldenResult": golden.to_json(),
            "evaluationStatus": evaluation_outcome(golden, evaluation).value,
            "rootSpan": root.to_json(),
        }

    def play_scenario(self, plan: SimulationPlan, evaluation: Evaluation, criteria: Sequence[EvaluationExpectation],
                      caller: Caller, app: AppName, session_id: str, on_turn: TurnListener | None = None,
                      stop: ShouldStop = never) -> tuple[Simulation, ScenarioScore]:
        """Simulate a scenario's conversation, judged as its execution mode asks, and score it."""
        judge = judge_for(self.judge(), execution_mode(evaluation))
        simulation = ScenarioSimulator(self.sessions, caller, self.user(), judge).run(plan, app, session_id, on_turn,
                                                                                    stop)
        return simulation, score_scenario(simulation, evaluation, criteria, judge)

    def _scenario_outcome(self, row: HeldResult, plan: ResultPlan, name: EvaluationResultName,
                          caller: Caller, stop: ShouldStop) -> dict[str, Any]:
        """Simulate the scenario's conversation and score it (see ``simulation`` and ``scenario_scoring``)."""
        evaluation = plan.evaluation
        simulation, score = self.play_scenario(plan.simulation(), evaluation, plan.criteria, caller, name.app_name,
                                               _sessions(name, row), stop=stop)
        user = simulation.user
        spans = [turn.turn.root_span for turn in simulation.observed if turn.turn is not None and turn.turn.root_span]
        attributes: dict[str, Any] = {"judge": score.judge, "simulatedUser": user.name,
                                      "scenarioExecutionMode": execution_mode(evaluation).value,
                                      "endedBy": simulation.ended_by, "turns": len(simulation.observed)}
        if user.limits:
            attributes["simulatedUserLimits"] = user.limits
        if simulation.user_goal_reached is not None:  # the simulated user's own view, beside the judge's
            attributes["userSaysGoalReached"] = simulation.user_goal_reached
        root = Span(name="EVALUATION", start_time=spans[0].start_time if spans else None,
                    end_time=spans[-1].end_time if spans else None, attributes=attributes, child_spans=spans or None)
        outcome: dict[str, Any] = {
            "scenarioResult": score.result.to_json(),
            "evaluationStatus": score.status.value,
            "rootSpan": root.to_json(),
        }
        if score.metadata is not None:
            outcome["outcomeMetadata"] = score.metadata.value
        if simulation.error is not None:
            outcome["errorInfo"] = simulation.error.to_json()
        return outcome

    # -- storing ---------------------------------------------------------------------------------------

    @overload
    @staticmethod
    def _store(connection: Connection, row: HeldResult, state: ExecutionState, body: dict[str, Any], *,
               attempt: None = None) -> Settled: ...

    @overload
    @staticmethod
    def _store(connection: Connection, row: HeldResult, state: ExecutionState, body: dict[str, Any], *,
               attempt: int) -> Settled | None: ...

    @staticmethod
    def _store(connection: Connection, row: HeldResult, state: ExecutionState, body: dict[str, Any], *,
               attempt: int | None = None) -> Settled | None:
        """Store the result's final state and ``body`` (``_final_body``); with ``attempt``, only if that attempt
        still holds it (None if not). A completed result's aggregates are the caller's to count."""
        values = _store_values(row, state, body)
        if attempt is None:
            connection.execute(_STORE, values)
        elif not connection.execute(_STORE_HELD, {**values, "attempt": attempt}).rowcount:
            return None
        return state, values["status"]

    @staticmethod
    def _app_name(connection: Connection, app_pk: int) -> str:
        return str(connection.scalar(select(apps.c.name).where(apps.c.id == app_pk)))

    def _run_name(self, connection: Connection, run: AnyRow) -> str:
        return f"{self._app_name(connection, run.app_pk)}/evaluationRuns/{run.run_id}"

    def _settle(self, connection: Connection, app_pk: int, run_id: str, settled: Sequence[Settled]) -> Settlement:
        """Count results that reached a final state into their run; finish the run when none is left.

        Counting by increments keeps a result's settling constant-time however large the run. The operation's
        metadata is rewritten at most every ``PROGRESS_SECONDS`` by this process (its progress is read live from
        the run's counts by get_evaluation_run): each rewrite wakes the operation's waiters, who read it whole,
        and a fast run rewriting it every few results spent a fifth of its time there. The per-evaluation
        summaries are written once, when the run finishes.
        """
        if not settled:
            return Settlement.NONE
        deltas = {"pending_count": -len(settled)}
        for result_state, status in settled:
            column = {ExecutionState.ERROR: "error_count", ExecutionState.CANCELLED: "cancelled_count"}.get(result_state)
            if result_state == ExecutionState.COMPLETED:
                deltas["completed_count"] = deltas.get("completed_count", 0) + 1
                column = "passed_count" if status == Outcome.PASS.value else "failed_count"
            if column is not None:
                deltas[column] = deltas.get(column, 0) + 1
        run = connection.execute(_count_update(frozenset(deltas)), {
            "key_app_pk": app_pk, "key_run_id": run_id, **{f"delta_{key}": delta for key, delta in deltas.items()}
        }).first()
        if run is None:
            return Settlement.NONE
        finished = run.pending_count <= 0
        if finished:
            self.progress_clock.forget((app_pk, run_id))
            self.paces.forget((app_pk, run_id))
        elif not self.progress_clock.due((app_pk, run_id)):
            return Settlement.COUNTED
        if not finished:
            # The metadata as operation_metadata wrote it when the run started, with the progress and cancellation
            # of now: the run's body (which lists every result) need not be read for it.
            counts = run

            def progressed(metadata: dict[str, Any]) -> dict[str, Any]:
                total = int((metadata.get("progress") or {}).get("totalCount") or 0)
                return {**metadata, "cancelRequested": counts.cancel_requested,
                        "progress": _progress(counts, total).to_json()}

            self.operations.change_metadata(connection, run.operation, progressed)
            return Settlement.PROGRESSED
        run = connection.execute(select(evaluation_runs).where(evaluation_runs.c.id == run.id)).one()
        model = run_model(run)
        if run.cancel_requested and run.cancelled_count:
            state = EvaluationRunState.CANCELLED
        elif run.error_count and not run.completed_count:
            state = EvaluationRunState.ERROR
        else:
            state = EvaluationRunState.COMPLETED
        model = model.model_copy(update={"state": state, "evaluation_run_summaries": self.summaries(
            connection, app_pk, model.name or "") or None})
        connection.execute(update(evaluation_runs).where(evaluation_runs.c.id == run.id).values(
            state=state.value, body=model.to_json()))
        name = model.name or ""
        changes: dict[str, Any] = {"metadata": operation_metadata(model, run.cancel_requested, Timestamp.now()),
                                   "done": True}
        if state == EvaluationRunState.CANCELLED:
            changes["error"] = Status(code=1, message=f"evaluation run {name} was cancelled")
        elif state == EvaluationRunState.ERROR:
            changes["error"] = Status(code=13, message="every evaluation result failed to execute; see their errorInfo")
        else:
            changes["response"] = {"@type": RUN_RESPONSE, "evaluationRun": name}
        self.operations.record(connection, run.operation, **changes)
        return Settlement.FINISHED

    def summaries(self, connection: Connection, app_pk: int, run_name: str) -> dict[str, EvaluationRunSummary]:
        app = AppName.parse(self._app_name(connection, app_pk))
        summaries: dict[str, EvaluationRunSummary] = {}
        for evaluation_id, state, status, count in connection.execute(
            select(evaluation_results.c.evaluation_id, evaluation_results.c.execution_state,
                   evaluation_results.c.evaluation_status, func.count())
            .where(evaluation_results.c.app_pk == app_pk, evaluation_results.c.evaluation_run == run_name)
            .group_by(evaluation_results.c.evaluation_id, evaluation_results.c.execution_state,
                      evaluation_results.c.evaluation_status)
        ).all():
            summary = summaries.setdefault(str(app.child(EvaluationName, evaluation_id)),
                                           EvaluationRunSummary(passed_count=0, failed_count=0, error_count=0))
            if state == ExecutionState.ERROR.value:
                summary.error_count = (summary.error_count or 0) + count
            elif state == ExecutionState.COMPLETED.value and status == Outcome.PASS.value:
                summary.passed_count = (summary.passed_count or 0) + count
            elif state == ExecutionState.COMPLETED.value:
                summary.failed_count = (summary.failed_count or 0) + count
        return summaries


class ProgressClock:
    """When this process last showed each running run's progress: ``due`` says yes at most once a ``period`` per
    run. Entries of runs that finished elsewhere are dropped once stale, so the clock stays small."""

    MAX_RUNS = 1024

    def __init__(self, period: float, now: Callable[[], float] = time.monotonic) -> None:
        self.period = period
        self._now = now
        self._last: dict[tuple[int, str], float] = {}
        self._lock = threading.Lock()

    def due(self, run: tuple[int, str]) -> bool:
        now = self._now()
        with self._lock:
            last = self._last.get(run)
            if last is not None and now - last < self.period:
                return False
            if len(self._last) >= self.MAX_RUNS:
                self._last = {key: at for key, at in self._last.items() if now - at < self.period}
            self._last[run] = now
            return True

    def forget(self, run: tuple[int, str]) -> None:
        with self._lock:
            self._last.pop(run, None)

    def __len__(self) -> int:
        """How many runs it remembers."""
        return len(self._last)


class RunPaces:
    """How long a result of each running run took this process to play (with its share of its group's claim and
    store), as its last group went: a job of a run this process has played before claims its first group at that
    pace rather than one result alone to learn it (a transaction fewer a job). A run is forgotten when it finishes
    here, or, past ``MAX_RUNS``, the longest unheard of first (one that finished elsewhere)."""

    MAX_RUNS = 1024

    def __init__(self) -> None:
        self._seconds: OrderedDict[tuple[int, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, run: tuple[int, str]) -> float | None:
        with self._lock:
            return self._seconds.get(run)

    def saw(self, run: tuple[int, str], seconds: float) -> None:
        with self._lock:
            self._seconds[run] = seconds
            self._seconds.move_to_end(run)
            while len(self._seconds) > self.MAX_RUNS:
                self._seconds.popitem(last=False)

    def forget(self, run: tuple[int, str]) -> None:
        with self._lock:
            self._seconds.pop(run, None)

    def __len__(self) -> int:
        return len(self._seconds)


def run_model(row: AnyRow) -> EvaluationRun:
    """An EvaluationRun as it stands: its stored body with the state and counts of its row."""
    model = EvaluationRun.model_validate(row.body)
    total = (model.progress.total_count if model.progress else None) or 0
    return model.model_copy(update={"progress": _progress(row, total), "state": EvaluationRunState(row.state)})


def _progress(row: AnyRow, total: int) -> EvaluationRunProgress:
    """A run's progress from the counts of its row."""
    return EvaluationRunProgress(total_count=total, failed_count=row.failed_count, error_count=row.error_count,
                                 completed_count=row.completed_count, passed_count=row.passed_count)


def next_group(attempt: int, taken: int, seconds: float, pace: float | None = None) -> int:
    """How many of a job's results to claim next, ``taken`` of them played in ``seconds``: as many as play in about
    ``GROUP_SECONDS`` at that pace (at most ``MAX_RESULTS_PER_JOB``); at first, at the ``pace`` (seconds a
    result) this process saw for the run's other jobs, or one when it has seen none. A job taken again
    (``attempt`` > 1) plays its results one at a time, as a result its workers stopped on is to be told apart
    from those after it (see ``MAX_ATTEMPTS``)."""
    if attempt > 1 or (not taken and pace is None):
        return 1
    per_result = seconds / taken if taken else pace or 0.0
    return max(1, min(MAX_RESULTS_PER_JOB, int(GROUP_SECONDS / max(per_result, 1e-6))))


def _store_values(row: HeldResult, state: ExecutionState, body: dict[str, Any]) -> dict[str, Any]:
    """The parameters of ``_STORE`` storing ``row`` in ``state`` with ``body``."""
    return {"pk": row.id, "state": state.value, "status": str(body.get("evaluationStatus", "")), "body": body}


def _final_body(row: HeldResult, state: ExecutionState, outcome: dict[str, Any] | None = None,
                error: EvaluationErrorInfo | None = None) -> dict[str, Any]:
    """A result's body in its final ``state``: the claimed body with the outcome and the error, if any."""
    body = {**row.body, **(outcome or {}), "executionState": state.value}
    if error is not None:
        body["errorInfo"] = error.to_json()
        body["error"] = Status(code=13, message=error.error_message).to_json()
    return body


def _without_turns_if_they_fail(store: Callable[[Sequence[Played]], _T], played: Sequence[Played]) -> _T:
    """``store(played)``; if that fails in the store and ``played`` carries turns, ``store`` them again without
    turns: a result is never left running because the sessions of its turns could not be written (say, a
    conversation of the same name imported at that moment)."""
    try:
        return store(played)
    except DBAPIError:
        if not any(one.turns for one in played):
            raise
        logger.warning("evaluation results %s: their replayed turns could not be stored; stored without them",
                       ", ".join(one.row.result_id for one in played), exc_info=True)
        return store([replace(one, turns=()) for one in played])


def _sessions(name: EvaluationResultName, row: HeldResult) -> str:
    """The ID (or prefix) of the sessions a result runs: a retry after an interruption starts afresh."""
    return f"eval-{name.result}" + (f"-r{row.attempts - 1}" if row.attempts > 1 else "")


def _run_id(run_name: str) -> str:
    return run_name.rsplit("/", 1)[-1]


def _error_type(failure: ApiError) -> ErrorType:
    if isinstance(failure, SimulationFailure):
        return ErrorType.USER_SIMULATION_FAILURE
    return ErrorType.QUOTA_EXHAUSTED if failure.code.name == "RESOURCE_EXHAUSTED" else ErrorType.RUNTIME_FAILURE


def _not_replayed() -> TurnReplayResult:
    return TurnReplayResult(error_info=EvaluationErrorInfo(
        error_type=ErrorType.RUNTIME_FAILURE, error_message="not replayed: the session ended or failed earlier"))

