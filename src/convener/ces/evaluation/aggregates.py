"""Each evaluation's aggregates, kept up to date in the transactions that change its results.

What ``list_evaluations`` and ``get_evaluation`` show of an evaluation's results (``aggregatedMetrics``,
``evaluationRuns``) is stored in a row of its own (``ces_evaluation_aggregates``): the metrics' exact sums
(:class:`Aggregate`, column ``body``) and, per run, how many of the evaluation's results it has and its newest one
(column ``runs``). A page of evaluations then reads a row per evaluation, whatever the number of their results.
The two parts are columns of their own because their writers differ: a result completing changes only the metrics,
a run starting only the runs, and the runs grow with every run of the evaluation. Each writer reads and rewrites
only its part, so a result's completion costs the same after a thousand runs as after one.

- a run's results are created: each counts into its run (``results_created``);
- a result completes: it counts into the metrics (``result_completed``);
- results are deleted: they are taken out of both (``results_deleted``); a group or run whose first (or newest)
  result went is given the next one by an indexed query, so the figures are those recomputed from scratch;
- an evaluation is deleted: its row goes too (``forget``); an app's, with the app.

Rows are locked in evaluation ID order (after the result rows the caller holds, before its run's), so writers of
several evaluations wait for each other instead of deadlocking. ``rebuild`` recomputes rows from the results:
migration 0014 fills the table with it.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Select, and_, bindparam, delete, insert, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from convener.ces.evaluation.aggregation import Aggregate, ResultKey, app_version_id, counted_view
from convener.ces.evaluation.models import ExecutionState
from convener.ces.tables import evaluation_aggregates, evaluation_results
from convener.store.expressions import among_parameters, numbered

EvaluationKey = tuple[int, str]
"""(app_pk, evaluation_id)"""
COMPLETED = ExecutionState.COMPLETED.value
REBUILD_BATCH = 500
"""Results read at a time when rebuilding an evaluation's row."""


@dataclass
class RunCount:
    results: int
    newest: ResultKey


@dataclass
class EvaluationAggregates:
    """One evaluation's row: its metrics' sums and its runs."""

    metrics: Aggregate = field(default_factory=Aggregate)
    runs: dict[str, RunCount] = field(default_factory=dict)

    def run_names(self) -> list[str]:
        """The runs that have results of the evaluation, the one with the newest result first."""
        return [name for name, _ in sorted(self.runs.items(), key=lambda item: item[1].newest, reverse=True)]

    def count_created(self, run: str, key: ResultKey) -> None:
        count = self.runs.get(run)
        if count is None:
            self.runs[run] = RunCount(1, key)
        else:
            count.results += 1
            count.newest = max(count.newest, key)

    def to_json(self) -> dict[str, Any]:
        """Both parts as one value (the layout before 0014): what a comparison of a whole row reads."""
        return {"metrics": self.metrics.to_json(), "runs": self.runs_json()}

    def runs_json(self) -> list[Any]:
        """The ``runs`` column: [run name, results, newest result's key] per run."""
        return [[name, count.results, list(count.newest)] for name, count in self.runs.items()]

    def metrics_json(self) -> dict[str, Any]:
        """The ``body`` column."""
        return {"metrics": self.metrics.to_json()}

    @classmethod
    def from_columns(cls, body: dict[str, Any] | None, runs: list[Any] | None) -> EvaluationAggregates:
        """The row's parts as read: a part not read (None) is left empty, and is not to be saved."""
        return cls(metrics=Aggregate.from_json(body["metrics"]) if body is not None else Aggregate(),
                   runs={name: RunCount(results, (int(newest[0]), str(newest[1])))
                         for name, results, newest in runs or ()})


class Part(enum.Flag):
    """The parts of a row a writer reads and rewrites."""

    METRICS = enum.auto()
    RUNS = enum.auto()
    BOTH = METRICS | RUNS


_PARTS = (Part.METRICS, Part.RUNS, Part.BOTH)
"""Every part a writer may name (iterating a Flag yields only its single-bit members)."""


def _columns(part: Part) -> list[Any]:
    return ([evaluation_aggregates.c.body] if Part.METRICS in part else []) + (
        [evaluation_aggregates.c.runs] if Part.RUNS in part else [])


def _read(row: Any, part: Part) -> EvaluationAggregates:
    return EvaluationAggregates.from_columns(row.body if Part.METRICS in part else None,
                                             row.runs if Part.RUNS in part else None)


def load(connection: Connection, app_pk: int, evaluation_ids: Sequence[str]) -> dict[str, EvaluationAggregates]:
    """The rows of these evaluations (an evaluation without results has none)."""
    if not evaluation_ids:
        return {}
    rows = connection.execute(select(evaluation_aggregates.c.evaluation_id, *_columns(Part.BOTH)).where(
        evaluation_aggregates.c.app_pk == app_pk, evaluation_aggregates.c.evaluation_id.in_(evaluation_ids))).all()
    return {row.evaluation_id: _read(row, Part.BOTH) for row in rows}


def _locked(connection: Connection, keys: Iterable[EvaluationKey],
            part: Part) -> dict[EvaluationKey, EvaluationAggregates]:
    """The ``part`` of the rows of ``keys``, created empty where missing, locked until the transaction ends (in key
    order)."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    found = _select_locked(connection, wanted, part)
    if len(found) < len(wanted):  # rarely: the rows are made when a run creates the evaluation's results
        _create_missing(connection, [key for key in wanted if key not in found])
        found = _select_locked(connection, wanted, part)
    return found


def _select_locked(connection: Connection, wanted: Sequence[EvaluationKey],
                   part: Part) -> dict[EvaluationKey, EvaluationAggregates]:
    found: dict[EvaluationKey, EvaluationAggregates] = {}
    for app_pk in sorted({app_pk for app_pk, _ in wanted}):
        ids = [evaluation_id for pk, evaluation_id in wanted if pk == app_pk]
        if len(ids) == 1:  # the hot path (a result completing): one statement, compiled once
            rows = connection.execute(_ONE_LOCKED[part], {"app_pk": app_pk, "evaluation_id": ids[0]}).all()
        elif len(ids) <= _FEW:  # a group of results completing together: built once per size
            rows = connection.execute(_few_locked(part, len(ids)), {
                "app_pk": app_pk, **numbered("evaluation_id", ids)}).all()
        else:
            rows = connection.execute(select(evaluation_aggregates.c.evaluation_id, *_columns(part)).where(
                evaluation_aggregates.c.app_pk == app_pk, evaluation_aggregates.c.evaluation_id.in_(ids),
            ).order_by(evaluation_aggregates.c.evaluation_id).with_for_update()).all()
        for row in rows:
            found[(app_pk, row.evaluation_id)] = _read(row, part)
    return found


_FEW = 16


@functools.lru_cache(maxsize=64)
def _few_locked(part: Part, count: int) -> Select[Any]:
    """The ``part`` of ``count`` evaluations' rows of one app (``numbered("evaluation_id", …)``), locked in key
    order."""
    return select(evaluation_aggregates.c.evaluation_id, *_columns(part)).where(
        evaluation_aggregates.c.app_pk == bindparam("app_pk"),
        among_parameters(evaluation_aggregates.c.evaluation_id, "evaluation_id", count),
    ).order_by(evaluation_aggregates.c.evaluation_id).with_for_update()


_ONE_LOCKED = {part: select(evaluation_aggregates.c.evaluation_id, *_columns(part)).where(
    evaluation_aggregates.c.app_pk == bindparam("app_pk"),
    evaluation_aggregates.c.evaluation_id == bindparam("evaluation_id")).with_for_update() for part in _PARTS}
_SAVE = {part: update(evaluation_aggregates).where(
    evaluation_aggregates.c.app_pk == bindparam("key_app_pk"),
    evaluation_aggregates.c.evaluation_id == bindparam("key_evaluation_id")).values(
    {column.name: bindparam(column.name) for column in _columns(part)}) for part in _PARTS}
"""Statements of the hot path built once: building and keying a statement costs more than running it."""


def _create_missing(connection: Connection, keys: Sequence[EvaluationKey]) -> None:
    """Insert empty rows for ``keys``, leaving existing ones (another transaction may be creating them too)."""
    empty = EvaluationAggregates()
    values = [{"app_pk": app_pk, "evaluation_id": evaluation_id, "body": empty.metrics_json(),
               "runs": empty.runs_json()} for app_pk, evaluation_id in keys]
    dialect = connection.dialect.name
    if dialect == "postgresql":
        connection.execute(postgresql_insert(evaluation_aggregates).values(values).on_conflict_do_nothing())
    elif dialect == "sqlite":
        connection.execute(sqlite_insert(evaluation_aggregates).values(values).on_conflict_do_nothing())
    else:  # pragma: no cover - the two engines the store supports are above
        raise NotImplementedError(dialect)


def _save(connection: Connection, rows: dict[EvaluationKey, EvaluationAggregates], part: Part) -> None:
    """Write the ``part`` of ``rows`` (as ``_locked`` read it for that part)."""
    if rows:
        connection.execute(_SAVE[part], [{
            "key_app_pk": app_pk, "key_evaluation_id": evaluation_id,
            **({"body": aggregates.metrics_json()} if Part.METRICS in part else {}),
            **({"runs": aggregates.runs_json()} if Part.RUNS in part else {}),
        } for (app_pk, evaluation_id), aggregates in rows.items()])


@dataclass(frozen=True)
class CreatedResult:
    app_pk: int
    evaluation_id: str
    run: str
    key: ResultKey


def results_created(connection: Connection, created: Sequence[CreatedResult]) -> None:
    """Count a run's new results into their evaluations' runs."""
    rows = _locked(connection, ((result.app_pk, result.evaluation_id) for result in created), Part.RUNS)
    for result in created:
        rows[(result.app_pk, result.evaluation_id)].count_created(result.run, result.key)
    _save(connection, rows, Part.RUNS)


@dataclass(frozen=True)
class CompletedResult:
    """A result that has just completed: its evaluation, its stored body and its key."""

    app_pk: int
    evaluation_id: str
    body: dict[str, Any]
    key: ResultKey


def result_completed(connection: Connection, app_pk: int, evaluation_id: str, body: dict[str, Any],
                     key: ResultKey) -> None:
    """Count a result that has just completed (its stored body) into its evaluation's metrics."""
    results_completed(connection, [CompletedResult(app_pk, evaluation_id, body, key)])


def results_completed(connection: Connection, completed: Sequence[CompletedResult]) -> None:
    """Count results that have just completed into their evaluations' metrics: their rows read and written in a
    statement each, however many."""
    rows = _locked(connection, ((result.app_pk, result.evaluation_id) for result in completed), Part.METRICS)
    for result in completed:
        rows[(result.app_pk, result.evaluation_id)].metrics.add(counted_view(result.body), result.key)
    _save(connection, rows, Part.METRICS)


def results_deleted(connection: Connection, deleted: Sequence[Any]) -> None:
    """Take deleted results (their rows, as they were: app_pk, evaluation_id, result_id, evaluation_run,
    create_time_us, execution_state, body) out of their evaluations' rows; call it after deleting them."""
    rows = _locked(connection, ((row.app_pk, row.evaluation_id) for row in deleted), Part.BOTH)
    refirst: set[tuple[EvaluationKey, str | None]] = set()
    renew: set[tuple[EvaluationKey, str]] = set()
    for row in deleted:
        evaluation = (row.app_pk, row.evaluation_id)
        aggregates = rows[evaluation]
        key: ResultKey = (row.create_time_us, row.result_id)
        if row.execution_state == COMPLETED:
            version = aggregates.metrics.add(counted_view(row.body), key, -1)
            if version is not False:
                refirst.add((evaluation, version if isinstance(version, str) else None))
        count = aggregates.runs.get(row.evaluation_run)
        if count is not None:
            count.results -= 1
            if count.results <= 0:
                del aggregates.runs[row.evaluation_run]
            elif key == count.newest:
                renew.add((evaluation, row.evaluation_run))
    for evaluation, version in refirst:
        if version in rows[evaluation].metrics.groups:
            rows[evaluation].metrics.refirst(version, _first_completed(connection, evaluation, version))
    for evaluation, run in renew:
        if run in rows[evaluation].runs:
            rows[evaluation].runs[run].newest = _newest_of_run(connection, evaluation, run)
    _save(connection, rows, Part.BOTH)


def _first_completed(connection: Connection, evaluation: EvaluationKey, version: str | None) -> ResultKey:
    """The oldest completed result of the evaluation on ``version``, read in batches from the oldest: the next one
    is nearly always of the same version."""
    after: ResultKey | None = None
    while True:
        statement = select(evaluation_results.c.create_time_us, evaluation_results.c.result_id,
                           evaluation_results.c.body).where(
            evaluation_results.c.app_pk == evaluation[0], evaluation_results.c.evaluation_id == evaluation[1],
            evaluation_results.c.execution_state == COMPLETED)
        if after is not None:
            statement = statement.where(or_(evaluation_results.c.create_time_us > after[0], and_(
                evaluation_results.c.create_time_us == after[0], evaluation_results.c.result_id > after[1])))
        batch = connection.execute(statement.order_by(evaluation_results.c.create_time_us,
                                                      evaluation_results.c.result_id).limit(50)).all()
        for row in batch:
            if app_version_id(counted_view(row.body)) == version:
                return row.create_time_us, row.result_id
        if len(batch) < 50:
            raise LookupError(f"no completed result of {evaluation} on {version} is left")  # counts said one is
        after = (batch[-1].create_time_us, batch[-1].result_id)


def _newest_of_run(connection: Connection, evaluation: EvaluationKey, run: str) -> ResultKey:
    row = connection.execute(select(evaluation_results.c.create_time_us, evaluation_results.c.result_id).where(
        evaluation_results.c.app_pk == evaluation[0], evaluation_results.c.evaluation_id == evaluation[1],
        evaluation_results.c.evaluation_run == run,
    ).order_by(evaluation_results.c.create_time_us.desc(), evaluation_results.c.result_id.desc()).limit(1)).one()
    return row.create_time_us, row.result_id


def forget(connection: Connection, app_pk: int, evaluation_id: str) -> None:
    """Delete an evaluation's row (with the evaluation and its results)."""
    connection.execute(delete(evaluation_aggregates).where(
        evaluation_aggregates.c.app_pk == app_pk, evaluation_aggregates.c.evaluation_id == evaluation_id))


def compute(connection: Connection, app_pk: int, evaluation_id: str) -> EvaluationAggregates:
    """An evaluation's row as its results make it, read oldest first in batches."""
    aggregates = EvaluationAggregates()
    after: ResultKey | None = None
    while True:
        statement = select(evaluation_results.c.create_time_us, evaluation_results.c.result_id,
                           evaluation_results.c.evaluation_run, evaluation_results.c.execution_state).where(
            evaluation_results.c.app_pk == app_pk, evaluation_results.c.evaluation_id == evaluation_id)
        if after is not None:
            statement = statement.where(or_(evaluation_results.c.create_time_us > after[0], and_(
                evaluation_results.c.create_time_us == after[0], evaluation_results.c.result_id > after[1])))
        batch = connection.execute(statement.order_by(evaluation_results.c.create_time_us,
                                                      evaluation_results.c.result_id).limit(REBUILD_BATCH)).all()
        completed = [row.result_id for row in batch if row.execution_state == COMPLETED]
        bodies = dict(connection.execute(select(evaluation_results.c.result_id, evaluation_results.c.body).where(
            evaluation_results.c.app_pk == app_pk, evaluation_results.c.evaluation_id == evaluation_id,
            evaluation_results.c.result_id.in_(completed))).all()) if completed else {}
        for row in batch:
            key: ResultKey = (row.create_time_us, row.result_id)
            aggregates.count_created(row.evaluation_run, key)
            if row.result_id in bodies:
                aggregates.metrics.add(counted_view(bodies[row.result_id]), key)
        if len(batch) < REBUILD_BATCH:
            return aggregates
        after = (batch[-1].create_time_us, batch[-1].result_id)


def rebuild(connection: Connection, keys: Iterable[EvaluationKey]) -> None:
    """Recompute the rows of these evaluations from their results."""
    for app_pk, evaluation_id in sorted(set(keys)):
        forget(connection, app_pk, evaluation_id)
        aggregates = compute(connection, app_pk, evaluation_id)
        if aggregates.runs:
            connection.execute(insert(evaluation_aggregates).values(
                app_pk=app_pk, evaluation_id=evaluation_id, body=aggregates.metrics_json(),
                runs=aggregates.runs_json()))
