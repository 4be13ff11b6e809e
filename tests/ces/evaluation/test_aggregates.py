"""An evaluation's aggregates row, kept up to date as results are created, complete and are deleted, equals the
aggregates recomputed from its results, and what list_evaluations/get_evaluation show from it equals what they
showed when they computed it from every result's body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

from convener.auth.caller import LOCAL_USER
from convener.ces.evaluation import aggregates
from convener.ces.evaluation.aggregation import aggregate
from convener.ces.evaluation.models import Evaluation, EvaluationResult, ExecutionState
from convener.ces.evaluation.requests import ListEvaluationsRequest, RunEvaluationRequest
from convener.ces.tables import apps, evaluation_aggregates, evaluation_results
from convener.config import Settings
from convener.demo.loader import APP, install_app
from convener.services import Services
from convener.store.database import Database

TOOL = f"{APP}/tools/lookup_order"
IDS = ["alpha", "beta", "gamma"]


def golden(order: str, reply: str) -> dict[str, Any]:
    return {"turns": [
        {"steps": [{"userInput": {"text": f"Where is my order {order}?"}},
                   {"expectation": {"toolCall": {"tool": TOOL, "args": {"order_id": order}}}},
                   {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": reply}]}}}]},
        {"steps": [{"userInput": {"text": "thanks"}},
                   {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "You're welcome!"}]}}}]},
    ]}


def open_services(data: Path, url: str, **settings: Any) -> Services:
    return Services.open(Settings(data_dir=data, database_url=url, **settings))


def setup(services: Services) -> None:
    install_app(services)
    # Expectations that pass, one that fails (a wrong order), so both counts and several tools' outcomes show.
    for evaluation_id, order, reply in (("alpha", "AC-1001", "Order AC-1001"), ("beta", "AC-1002", "Order AC-1002"),
                                        ("gamma", "AC-1003", "Nothing like the reply")):
        services.runtime.evaluations.create_evaluation(str(APP), evaluation_id, Evaluation.model_validate(
            {"displayName": evaluation_id, "golden": golden(order, reply)}), LOCAL_USER)


def run(services: Services, run_count: int = 1, wait: bool = True) -> tuple[str, str]:
    """(the run's name, its operation's)"""
    operation = services.runtime.evaluations.run(RunEvaluationRequest(
        app=str(APP), evaluations=[f"{APP}/evaluations/{e}" for e in IDS], run_count=run_count), LOCAL_USER)
    if wait:
        done = services.runtime.operations.wait(operation.name or "", "120s", LOCAL_USER)
        assert done.done
    return str((operation.metadata or {})["evaluationRun"]), operation.name or ""


def recomputed(services: Services) -> dict[str, Any]:
    """Each evaluation's row as stored, beside the row recomputed from its results."""
    with services.database.reading() as connection:
        app_pk = connection.scalar(select(apps.c.id).where(apps.c.name == str(APP)))
        stored = {e: a.to_json() for e, a in aggregates.load(connection, app_pk, IDS).items()}
        fresh = {e: aggregates.compute(connection, app_pk, e).to_json() for e in IDS}
    return {"stored": stored, "fresh": {e: row for e, row in fresh.items() if row["runs"] or e in stored}}


def from_bodies(services: Services, evaluation_id: str) -> tuple[Any, list[str] | None]:
    """aggregatedMetrics and evaluationRuns as get_evaluation computed them before: from every result's body."""
    with services.database.reading() as connection:
        rows = connection.execute(select(evaluation_results.c.body, evaluation_results.c.evaluation_run,
                                         evaluation_results.c.execution_state).where(
            evaluation_results.c.evaluation_id == evaluation_id).order_by(
            evaluation_results.c.create_time_us.desc(), evaluation_results.c.result_id.desc())).all()
    completed = [EvaluationResult.model_validate(row.body) for row in rows
                 if row.execution_state == ExecutionState.COMPLETED.value]
    metrics = aggregate(reversed(completed))
    runs = list(dict.fromkeys(row.evaluation_run for row in rows))
    return (metrics.to_json() if metrics.metrics_by_app_version else None), runs or None


def assert_consistent(services: Services) -> None:
    rows = recomputed(services)
    assert rows["stored"] == rows["fresh"]
    listed, _ = services.runtime.evaluations.list_evaluations(
        ListEvaluationsRequest(parent=str(APP), page_size=50, order_by="name"), LOCAL_USER)
    shown = {e.name.rsplit("/", 1)[-1]: e for e in listed if e.name}
    for evaluation_id in IDS:
        metrics, runs = from_bodies(services, evaluation_id)
        for evaluation in (shown[evaluation_id], services.runtime.evaluations.get_evaluation(
                f"{APP}/evaluations/{evaluation_id}", True, LOCAL_USER)):
            assert (evaluation.aggregated_metrics.to_json() if evaluation.aggregated_metrics else None) == metrics
            assert evaluation.evaluation_runs == runs


def test_aggregates_follow_results_as_they_complete_and_are_deleted(database_url: str, tmp_path: Path) -> None:
    services = open_services(tmp_path, database_url)
    try:
        setup(services)
        first, _ = run(services)
        run(services, run_count=2)
        assert_consistent(services)
        alpha = services.runtime.evaluations.get_evaluation(f"{APP}/evaluations/alpha", True, LOCAL_USER)
        assert alpha.aggregated_metrics and alpha.aggregated_metrics.metrics_by_app_version
        assert alpha.aggregated_metrics.metrics_by_app_version[0].pass_count == 3
        gamma = services.runtime.evaluations.get_evaluation(f"{APP}/evaluations/gamma", False, LOCAL_USER)
        assert gamma.aggregated_metrics and gamma.aggregated_metrics.metrics_by_app_version
        assert gamma.aggregated_metrics.metrics_by_app_version[0].fail_count == 3
        assert alpha.last_ten_results and len(alpha.last_ten_results) == 3

        # The oldest completed result of an evaluation (its group's first) goes, then a whole run.
        oldest = [r for r in alpha.last_ten_results if r.evaluation_run == first]
        services.runtime.evaluations.delete_result(oldest[0].name or "", LOCAL_USER)
        assert_consistent(services)
        services.runtime.evaluations.delete_run(first, LOCAL_USER)
        assert_consistent(services)
        assert services.runtime.evaluations.get_evaluation(
            f"{APP}/evaluations/beta", False, LOCAL_USER).evaluation_runs == [
            r.evaluation_run for r in alpha.last_ten_results[:1]]
        services.runtime.evaluations.delete_result(alpha.last_ten_results[0].name or "", LOCAL_USER)
        services.runtime.evaluations.delete_result(alpha.last_ten_results[1].name or "", LOCAL_USER)
        assert_consistent(services)
        emptied = services.runtime.evaluations.get_evaluation(f"{APP}/evaluations/alpha", False, LOCAL_USER)
        assert emptied.aggregated_metrics is None and emptied.evaluation_runs is None
        assert emptied.last_completed_result is None
    finally:
        services.close()


def test_a_cancelled_run_counts_in_the_runs_not_in_the_metrics(database_url: str, tmp_path: Path) -> None:
    idle = open_services(tmp_path, database_url, worker=False)  # nothing plays: the run is cancelled while queued
    try:
        setup(idle)
        cancelled, operation = run(idle, wait=False)
        idle.runtime.operations.cancel(operation, LOCAL_USER)
        assert_consistent(idle)
        beta = idle.runtime.evaluations.get_evaluation(f"{APP}/evaluations/beta", False, LOCAL_USER)
        assert beta.evaluation_runs == [cancelled] and beta.aggregated_metrics is None
    finally:
        idle.close()
    services = open_services(tmp_path, database_url)
    try:
        run(services)
        assert_consistent(services)
    finally:
        services.close()


def played_store(tmp_path: Path, later_app_columns: tuple[str, ...] = ()) -> tuple[dict[str, Any], Any, Any]:
    """(the aggregates rows running code keeps, the app's row, the results' rows) of a store where three runs were
    played, to copy into a store of an earlier revision (whose apps table lacks ``later_app_columns``)."""
    source = open_services(tmp_path / "source", f"sqlite:///{tmp_path}/source.db")
    try:
        setup(source)
        run(source)
        run(source, run_count=2)
        expected = recomputed(source)["stored"]
        with source.database.reading() as connection:
            app_row = {key: value for key, value in connection.execute(select(apps).where(
                apps.c.name == str(APP))).one()._mapping.items() if key not in ("id", *later_app_columns)}
            results = [{key: value for key, value in row._mapping.items() if key != "id"}
                       for row in connection.execute(select(evaluation_results)).all()]
    finally:
        source.close()
    return expected, app_row, results


def upgraded_rows(database: Database) -> dict[str, Any]:
    with database.reading() as connection:
        return {row.evaluation_id: {**row.body, "runs": row.runs}
                for row in connection.execute(select(evaluation_aggregates)).all()}


def test_upgrading_fills_the_aggregates_of_stored_results(empty_database_url: str, tmp_path: Path) -> None:
    """A store of revision 0008 with results gets, from migrations 0010 and 0014, the rows running code keeps."""
    # The app's row as revision 0008 had it: the changelog counters came with 0012.
    expected, app_row, results = played_store(tmp_path, ("changelog_sequence", "changelog_time_us"))
    database = Database(empty_database_url)
    try:
        database.migrate("0008")
        with database.transaction() as connection:
            app_pk = connection.execute(insert(apps).values(app_row).returning(apps.c.id)).scalar_one()
            connection.execute(insert(evaluation_results), [{**row, "app_pk": app_pk} for row in results])
        database.migrate()
        upgraded = upgraded_rows(database)
        assert upgraded == expected
        assert set(upgraded) == set(IDS)
    finally:
        database.dispose()


def test_upgrading_moves_the_runs_of_kept_rows_into_their_column(empty_database_url: str, tmp_path: Path) -> None:
    """Rows as revisions 0010 to 0013 kept them (metrics and runs in one body) are split by migration 0014, their
    figures unchanged; an evaluation with results but no row gets one."""
    expected, app_row, results = played_store(tmp_path)
    database = Database(empty_database_url)
    try:
        database.migrate("0013")
        with database.transaction() as connection:
            app_pk = connection.execute(insert(apps).values(app_row).returning(apps.c.id)).scalar_one()
            connection.execute(insert(evaluation_results), [{**row, "app_pk": app_pk} for row in results])
            # The rows in the body-only layout (the table has no runs column yet); one left out: the upgrade
            # computes it from its results, as for a store older than 0010.
            connection.execute(insert(evaluation_aggregates), [
                {"app_pk": app_pk, "evaluation_id": evaluation_id, "body": body}
                for evaluation_id, body in expected.items() if evaluation_id != "gamma"])
        database.migrate()
        assert upgraded_rows(database) == expected
    finally:
        database.dispose()


def test_a_completing_result_reads_and_writes_only_the_metrics(database_url: str, tmp_path: Path) -> None:
    """The runs an evaluation has had (a column growing with each) are neither read nor rewritten when one of its
    results completes: only when a run creates results, or results are deleted."""
    services = open_services(tmp_path, database_url)
    try:
        setup(services)
        run(services)
        seen: list[str] = []

        def watch(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if "ces_evaluation_aggregates" in statement:
                seen.append(statement)

        with services.database.transaction() as connection:
            app_pk = connection.scalar(select(apps.c.id).where(apps.c.name == str(APP)))
            body = connection.execute(select(evaluation_results.c.body).where(
                evaluation_results.c.evaluation_id == "alpha")).scalars().first()
            with services.database.listening("before_cursor_execute", watch):
                aggregates.result_completed(connection, app_pk, "alpha", body, (2**62, "later"))
        assert len(seen) == 2 and all(".runs" not in statement and "runs=" not in statement for statement in seen)
        stored = recomputed(services)["stored"]["alpha"]
        assert len(stored["runs"]) == 1  # the runs as they were
    finally:
        services.close()
