"""EvaluationService: evaluations, datasets, expectations and personas; runs and their results.

Definitions are app parts (``catalog.PartService``). What ``get_evaluation`` adds to a definition:
the runs that ran it and its metrics aggregated by app version over all its completed results, read from
its aggregates' row (kept up to date as its results change: ``aggregates``); its last completed result
and its last ten results (indexed queries); the datasets that list it; and whether it still resolves
against the app (``invalid``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.sql.elements import ColumnElement

from convener.api.errors import FailedPrecondition, InvalidArgument, NotFound
from convener.api.filtering import FieldType, FilterField, compile_filter
from convener.api.names import LocationName
from convener.api.paging import PageTokens, resolve_page_size, split_page
from convener.api.protojson import Timestamp
from convener.auth.caller import Caller
from convener.ces.apps import AppService
from convener.ces.catalog import AppParts, PartKind, PartService
from convener.ces.changelogs import Action, latest_changelog
from convener.ces.conversations import ConversationService
from convener.ces.evaluation import adk, adk_criteria, aggregates
from convener.ces.evaluation.definitions import (
    check_dataset,
    check_evaluation,
    check_expectation,
    check_persona,
    check_scenario,
    missing_references,
)
from convener.ces.evaluation.executor import RunExecutor, operation_metadata, run_model
from convener.jobs.queue import Jobs
from convener.ces.evaluation.generation import golden_from_conversation
from convener.ces.evaluation.models import (
    Evaluation,
    EvaluationConfig,
    EvaluationDataset,
    EvaluationExpectation,
    EvaluationPersona,
    EvaluationResult,
    EvaluationRun,
    EvaluationRunProgress,
    EvaluationRunState,
    EvaluationType,
    ExecutionState,
    Golden,
    Outcome,
    PersonaRunConfig,
    Scenario,
)
from convener.ces.evaluation.plans import ResultPlan
from convener.ces.evaluation.requests import (
    DeleteEvaluationRequest,
    GenerateEvaluationRequest,
    ListEvaluationResultsRequest,
    ListEvaluationRunsRequest,
    ListEvaluationsRequest,
    RunEvaluationRequest,
)
from convener.ces.evaluation.scenario_scoring import ScenarioScore
from convener.ces.evaluation.simulated_user import SimulatedUser
from convener.ces.evaluation.simulation import Simulation, SimulationPlan, TurnListener
from convener.ces.evaluation.thresholds import effective_thresholds
from convener.ces.models import (
    EvaluationSettings,
    EvaluationToolCallBehaviour,
    GoldenRunMethod,
    ScenarioConversationInitiator,
    Source,
)
from convener.ces.names import (
    AppChildName,
    AppName,
    AppVersionName,
    ConversationName,
    EvaluationDatasetName,
    EvaluationExpectationName,
    EvaluationName,
    EvaluationPersonaName,
    EvaluationResultName,
    EvaluationRunName,
)
from convener.ces.requests import GetConversationRequest
from convener.ces.sessions import SessionService
from convener.ces.tables import apps, definitions, evaluation_results, evaluation_runs
from convener.llm.judges import Judge
from convener.longrunning.models import Operation
from convener.longrunning.service import OperationService
from convener.store.database import AnyRow, Database

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
MAX_RUN_COUNT = 100
SCENARIO_RUN_COUNT = 5
"""How many times a scenario evaluation runs when runCount is unset (a golden runs once), as in CES."""
MAX_RUN_RESULTS = 100_000
LAST_TEN = 10
DELETED_RESULT = (evaluation_results.c.app_pk, evaluation_results.c.evaluation_id, evaluation_results.c.result_id,
                  evaluation_results.c.evaluation_run, evaluation_results.c.create_time_us,
                  evaluation_results.c.execution_state, evaluation_results.c.body)
"""What taking a deleted result out of its evaluation's aggregates needs of it."""

_COMMON_OUTPUT = frozenset({"name", "createTime", "updateTime", "etag"})
EVALUATION_OUTPUT = _COMMON_OUTPUT | {"evaluationDatasets", "createdBy", "lastUpdatedBy", "evaluationRuns",
                                      "aggregatedMetrics", "lastCompletedResult", "invalid", "lastTenResults"}
DATASET_OUTPUT = _COMMON_OUTPUT | {"createdBy", "lastUpdatedBy", "aggregatedMetrics"}

_RESULT_FIELDS = {
    "evaluation_run": FilterField(evaluation_results.c.evaluation_run, FieldType.STRING),
    "execution_state": FilterField(evaluation_results.c.execution_state, FieldType.ENUM,
                                   enum_values=tuple(state.value for state in ExecutionState)),
    "evaluation_status": FilterField(evaluation_results.c.evaluation_status, FieldType.ENUM,
                                     enum_values=tuple(outcome.value for outcome in Outcome)),
    "create_time": FilterField(evaluation_results.c.create_time_us, FieldType.TIMESTAMP),
}
_RUN_FIELDS = {
    "create_time": FilterField(evaluation_runs.c.create_time_us, FieldType.TIMESTAMP),
    "initiated_by": FilterField(evaluation_runs.c.initiated_by, FieldType.STRING),
    "app_version_display_name": FilterField(evaluation_runs.c.app_version_display_name, FieldType.STRING),
    "state": FilterField(evaluation_runs.c.state, FieldType.ENUM,
                         enum_values=tuple(state.value for state in EvaluationRunState)),
}


def _camel_too(fields: dict[str, FilterField]) -> dict[str, FilterField]:
    """AIP-160 filters name fields as in the proto (snake_case); JSON clients write camelCase. Take both."""
    camel = {"".join(p.title() if i else p for i, p in enumerate(k.split("_"))): v for k, v in fields.items()}
    return {**fields, **camel}


RESULT_FIELDS = _camel_too(_RESULT_FIELDS)
RUN_FIELDS = _camel_too(_RUN_FIELDS)


OFFLINE_JUDGE = "offline"
"""The name of the judge in use when no model provider is configured (``judge_from``)."""


@dataclass(frozen=True)
class AdkImport:
    """What an ADK import created, and what of the evalset's criteria it did not apply or read."""

    evaluations: list[Evaluation]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class _Order:
    column: str
    descending: bool


def _order(text: str | None, allowed: Sequence[str], default: str) -> _Order:
    words = (text or default).replace(",", " ").split()
    field = words[0] if words else default
    field = {"updateTime": "update_time", "createTime": "create_time"}.get(field, field)
    if field not in allowed or len(words) > 2 or (len(words) == 2 and words[1].lower() not in ("asc", "desc")):
        raise InvalidArgument(f'orderBy "{(text or "")[:80]}" is not supported; use {", ".join(allowed)}')
    descending = field != "name" if len(words) == 1 else words[1].lower() == "desc"
    return _Order(field, descending)


class EvaluationService:
    def __init__(self, database: Database, tokens: PageTokens, apps: AppService, conversations: ConversationService,
                 sessions: SessionService, operations: OperationService, judge: Callable[[], Judge],
                 user: Callable[[], SimulatedUser], jobs: Jobs) -> None:
        self.database = database
        self.tokens = tokens
        self.apps = apps
        self.conversations = conversations
        self.operations = operations
        self.judge = judge
        self.evaluations = PartService(PartKind(
            Evaluation, EvaluationName, "evaluation", frozenset(EVALUATION_OUTPUT), check_evaluation,
            oneofs=(frozenset({"golden", "scenario"}),), authors=True, unique_display_name=True,
        ), database, tokens, apps)
        self.datasets = PartService(PartKind(
            EvaluationDataset, EvaluationDatasetName, "evaluationDataset", frozenset(DATASET_OUTPUT), check_dataset,
            authors=True, unique_display_name=True,
        ), database, tokens, apps)
        self.expectations = PartService(PartKind(
            EvaluationExpectation, EvaluationExpectationName, "evaluationExpectation", _COMMON_OUTPUT,
            check_expectation, unique_display_name=True,
        ), database, tokens, apps)
        self.personas = PartService(PartKind(
            EvaluationPersona, EvaluationPersonaName, "evaluationPersona", _COMMON_OUTPUT, check_persona,
            unique_display_name=True,
        ), database, tokens, apps)
        self.executor = RunExecutor(database, sessions, operations, judge, user, jobs)
        operations.cancel_hooks.append(self.executor.cancel)

    # -- evaluations ------------------------------------------------------------------------------------

    def create_evaluation(self, parent: str, evaluation_id: str | None, evaluation: Evaluation,
                          caller: Caller) -> Evaluation:
        created = self.evaluations.create(parent, evaluation_id, evaluation, caller)
        return self.get_evaluation(created.name or "", False, caller)

    def update_evaluation(self, evaluation: Evaluation, update_mask: str | None, caller: Caller) -> Evaluation:
        updated = self.evaluations.update(evaluation, update_mask, caller)
        return self.get_evaluation(updated.name or "", False, caller)

    def get_evaluation(self, name_text: str, last_ten: bool, caller: Caller) -> Evaluation:
        name = EvaluationName.parse(name_text)
        evaluation = self.evaluations.get(str(name), caller)
        with self.database.reading() as connection:
            app_pk = self.apps.app_pk(connection, name.app_name)
            parts = AppParts(connection, app_pk, name.app_name)
            return self._decorate(connection, parts, [evaluation], self._datasets_by_member(parts), last_ten)[0]

    def list_evaluations(self, request: ListEvaluationsRequest, caller: Caller) -> tuple[list[Evaluation], str | None]:
        parent = AppName.parse(request.parent, "parent")
        size = resolve_page_size(request.page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        order = _order(request.order_by, ("update_time", "create_time", "name"), "update_time")
        query = {"method": "list_evaluations", "parent": str(parent), "filter": request.filter or "",
                 "evaluationFilter": request.evaluation_filter or "",
                 "evaluationRunFilter": request.evaluation_run_filter or "", "orderBy": request.order_by or ""}
        with self.database.reading() as connection:
            app_pk = self.apps.app_pk(connection, parent)
            parts = AppParts(connection, app_pk, parent)
            statement = select(definitions).where(definitions.c.app_pk == app_pk,
                                                  definitions.c.collection == EvaluationName.collection)
            for condition in self._evaluation_filters(connection, app_pk, parent, request):
                statement = statement.where(condition)
            key = {"update_time": definitions.c.update_time_us, "create_time": definitions.c.create_time_us,
                   "name": definitions.c.resource_id}[order.column]
            if request.page_token:
                match self.tokens.position(request.page_token, query=query, caller=caller.principal):
                    case [value, str() as after] if isinstance(value, int | str):
                        if order.column == "name":
                            statement = statement.where(definitions.c.resource_id < after if order.descending
                                                        else definitions.c.resource_id > after)
                        elif order.descending:
                            statement = statement.where(key <= value, (key < value) | (definitions.c.resource_id > after))
                        else:
                            statement = statement.where(key >= value, (key > value) | (definitions.c.resource_id > after))
                    case _:
                        raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
            ordering: list[Any] = [key.desc() if order.descending else key.asc()]
            if order.column != "name":
                ordering.append(definitions.c.resource_id)
            rows = connection.execute(statement.order_by(*ordering).limit(size + 1)).all()
            page, more = split_page(rows, size)
            members = self._datasets_by_member(parts)
            evaluations = self._decorate(connection, parts, [self.evaluations.to_model(
                row, str(parent.child(EvaluationName, row.resource_id))) for row in page], members,
                bool(request.last_ten_results))
        token = None
        if more:
            last = page[-1]
            position = {"update_time": last.update_time_us, "create_time": last.create_time_us,
                        "name": last.resource_id}[order.column]
            token = self.tokens.issue(query=query, caller=caller.principal, position=[position, last.resource_id])
        return evaluations, token

    def _evaluation_filters(self, connection: Connection, app_pk: int, parent: AppName,
                            request: ListEvaluationsRequest) -> list[ColumnElement[bool]]:
        conditions: list[ColumnElement[bool]] = []
        dataset_filter = request.evaluation_filter or request.filter
        if dataset_filter:
            datasets = _dataset_filter(dataset_filter)
            members: set[str] = set()
            for dataset in datasets:
                name = EvaluationDatasetName.parse(dataset if "/" in dataset else f"{parent}/evaluationDatasets/{dataset}",
                                                   "evaluationFilter")
                if name.app_name != parent:
                    raise InvalidArgument(f"evaluationFilter: {dataset} is not a dataset of the app {parent}")
                body = connection.scalar(select(definitions.c.body).where(
                    definitions.c.app_pk == app_pk, definitions.c.collection == EvaluationDatasetName.collection,
                    definitions.c.resource_id == name.id))
                members.update(EvaluationName.parse(m).id for m in (body or {}).get("evaluations", []))
            conditions.append(definitions.c.resource_id.in_(sorted(members)))
        if request.evaluation_run_filter:
            run_condition = compile_filter(request.evaluation_run_filter, RUN_FIELDS)
            runs = select(evaluation_runs.c.run_id).where(evaluation_runs.c.app_pk == app_pk)
            if run_condition is not None:
                runs = runs.where(run_condition)
            run_names = [f"{parent}/evaluationRuns/{run_id}" for run_id in connection.execute(runs).scalars()]
            ran = select(evaluation_results.c.evaluation_id).where(
                evaluation_results.c.app_pk == app_pk, evaluation_results.c.evaluation_run.in_(run_names)).distinct()
            conditions.append(definitions.c.resource_id.in_(ran))
        return conditions

    def _datasets_by_member(self, parts: AppParts) -> dict[str, list[str]]:
        members: dict[str, list[str]] = {}
        for dataset_id, body in parts.bodies(EvaluationDatasetName.collection).items():
            dataset = str(parts.app.child(EvaluationDatasetName, dataset_id))
            for evaluation in body.get("evaluations", []):
                members.setdefault(evaluation, []).append(dataset)
        return members

    def _decorate(self, connection: Connection, parts: AppParts, evaluations: Sequence[Evaluation],
                  members: dict[str, list[str]], last_ten: bool) -> list[Evaluation]:
        """The evaluations with what their results say: their aggregates' rows (one query for the page), the
        newest completed result and, if asked, the last ten (an indexed query each)."""
        names = [EvaluationName.parse(evaluation.name) for evaluation in evaluations]
        stored = aggregates.load(connection, parts.app_pk, [name.id for name in names])
        decorated = []
        for evaluation, name in zip(evaluations, names, strict=True):
            found = stored.get(name.id) or aggregates.EvaluationAggregates()
            newest = select(evaluation_results.c.body).where(
                evaluation_results.c.app_pk == parts.app_pk, evaluation_results.c.evaluation_id == name.id,
            ).order_by(evaluation_results.c.create_time_us.desc(), evaluation_results.c.result_id.desc())
            completed = self._newest_completed(connection, parts.app_pk, name.id)
            metrics = found.metrics.metrics()
            decorated.append(evaluation.model_copy(update={
                "evaluation_datasets": members.get(str(name)) or None,
                "evaluation_runs": found.run_names() or None,
                "aggregated_metrics": metrics if metrics.metrics_by_app_version else None,
                "last_completed_result": EvaluationResult.model_validate(completed) if completed is not None else None,
                "last_ten_results": [EvaluationResult.model_validate(body) for body in connection.scalars(
                    newest.limit(LAST_TEN))] or None if last_ten else None,
                "invalid": bool(missing_references(evaluation, name, parts)),
            }))
        return decorated

    @staticmethod
    def _newest_completed(connection: Connection, app_pk: int, evaluation_id: str) -> Any:
        """The body of the evaluation's newest completed result, if any. Its newest results' states are read by
        the keyset index first (on PostgreSQL a filter on the state leads the planner to the run index, and to
        sorting all the run's results), then the one body; only when none of the newest ten completed does it
        search further."""
        mine = (evaluation_results.c.app_pk == app_pk, evaluation_results.c.evaluation_id == evaluation_id)
        newest = (evaluation_results.c.create_time_us.desc(), evaluation_results.c.result_id.desc())
        states = connection.execute(select(evaluation_results.c.result_id, evaluation_results.c.execution_state)
                                    .where(*mine).order_by(*newest).limit(LAST_TEN)).all()
        found = next((row.result_id for row in states if row.execution_state == ExecutionState.COMPLETED.value), None)
        if found is not None:
            return connection.scalar(select(evaluation_results.c.body).where(
                *mine, evaluation_results.c.result_id == found))
        if len(states) < LAST_TEN:
            return None
        return connection.scalar(select(evaluation_results.c.body).where(
            *mine, evaluation_results.c.execution_state == ExecutionState.COMPLETED.value).order_by(*newest).limit(1))

    def delete_evaluation(self, request: DeleteEvaluationRequest, caller: Caller) -> None:
        """Delete an evaluation with its results (and, with force, its place in datasets): all or nothing."""
        name = EvaluationName.parse(request.name)
        with self.database.transaction() as connection:
            app_pk = self.apps.app_pk(connection, name.app_name)
            parts = AppParts(connection, app_pk, name.app_name)
            _, removed = self.evaluations.remove(connection, name, request.etag)
            listing = [dataset for dataset, body in parts.bodies(EvaluationDatasetName.collection).items()
                       if str(name) in body.get("evaluations", [])]
            if listing and not request.force:
                raise FailedPrecondition(
                    f"evaluation {name} is in the dataset(s) {', '.join(listing[:5])}; remove it from them or set force")
            datasets: list[EvaluationDataset] = []
            for dataset_id in listing:
                dataset_name = name.app_name.child(EvaluationDatasetName, dataset_id)
                body = parts.bodies(EvaluationDatasetName.collection)[dataset_id]
                body = {**body, "evaluations": [e for e in body.get("evaluations", []) if e != str(name)]}
                datasets.append(self.datasets.overwrite(connection, app_pk, dataset_name, body))
            # The datasets it was taken out of changed with it: one change, one entry.
            self.evaluations.record(connection, app_pk, caller, Action.DELETE, name, before=removed,
                                    dependents=datasets)
            connection.execute(delete(evaluation_results).where(
                evaluation_results.c.app_pk == app_pk, evaluation_results.c.evaluation_id == name.id,
                evaluation_results.c.execution_state.not_in((ExecutionState.QUEUED.value,
                                                             ExecutionState.RUNNING.value))))
            if connection.scalar(select(evaluation_results.c.id).where(
                    evaluation_results.c.app_pk == app_pk, evaluation_results.c.evaluation_id == name.id).limit(1)):
                raise FailedPrecondition(f"evaluation {name} is being run; cancel the run or wait for it")
            aggregates.forget(connection, app_pk, name.id)

    def generate_evaluation(self, request: GenerateEvaluationRequest, caller: Caller) -> Evaluation:
        """A golden evaluation from a recorded conversation (see ``generation.golden_from_conversation``)."""
        name = ConversationName.parse(request.conversation, "conversation")
        conversation = self.conversations.get(GetConversationRequest(name=str(name)), caller)
        golden = golden_from_conversation(conversation)
        display_name = request.display_name or f"Generated from conversation {name.conversation} at {Timestamp.now()}"
        evaluation = Evaluation(
            display_name=display_name, golden=golden,
            description=f"Generated from {name}.", tags=["generated"],
        )
        return self.create_evaluation(str(name.app_name), request.evaluation_id, evaluation, caller)

    def import_adk(self, parent: str, content: str, source: str | None, caller: Caller,
                   criteria: adk_criteria.AdkCriteria | None = None) -> AdkImport:
        """Golden evaluations from an ADK evalset, all or none (see ``adk``), scored with ADK's ``criteria``
        (``adk_criteria``; ADK's defaults when None): the evaluation expectations they need are created
        unless the app has them already."""
        app = AppName.parse(parent, "parent")
        imported = adk.evaluations_from_adk(content, app, source=source or "")
        chosen = criteria or adk_criteria.DEFAULT_CRITERIA
        applied = adk_criteria.apply_criteria(chosen, self.judge().name != OFFLINE_JUDGE)
        created: list[Evaluation] = []
        with self.database.transaction() as connection:
            app_pk = self.apps.app_pk(connection, app)
            parts = AppParts(connection, app_pk, app)
            names = [str(self._adk_expectation(connection, app_pk, parts, item, caller))
                     for item in applied.expectations]
            for item in imported:
                name = app.child(EvaluationName, item.evaluation_id)
                if parts.exists(EvaluationName.collection, name.id):
                    raise InvalidArgument(f"evaluation {name} already exists; nothing was imported")
                evaluation = adk_criteria.with_criteria(item.evaluation, applied, names, chosen.source,
                                                        adk.MAX_DESCRIPTION)
                body = self.evaluations._checked(evaluation, name, parts, caller)
                created.append(self.evaluations.insert(connection, app_pk, name, body))
                self.evaluations.record(connection, app_pk, caller, Action.CREATE, name, after=created[-1])
        return AdkImport(created, applied.warnings)

    def _adk_expectation(self, connection: Connection, app_pk: int, parts: AppParts,
                         item: adk_criteria.NewExpectation, caller: Caller) -> AppChildName:
        """The evaluation expectation of an ADK criterion: the app's when it has one by that ID stating the same,
        else a new one."""
        name = parts.app.child(EvaluationExpectationName, item.expectation_id)
        if parts.exists(EvaluationExpectationName.collection, name.id):
            _, row = self.expectations._row(connection, name)
            found = self.expectations.to_model(row, str(name))
            same = adk_criteria.criterion_of(found) == adk_criteria.criterion_of(item.expectation) if \
                adk_criteria.criterion_of(item.expectation) is not None else found.llm_criteria == item.expectation.llm_criteria
            if not same:
                raise InvalidArgument(f"evaluation expectation {name} exists and states something else than the ADK "
                                      "criterion it is named after; rename or delete it, then import again")
            return name
        body = self.expectations._checked(item.expectation, name, parts, caller)
        expectation = self.expectations.insert(connection, app_pk, name, body)
        self.expectations.record(connection, app_pk, caller, Action.CREATE, name, after=expectation)
        return name

    # -- runs ---------------------------------------------------------------------------------------------

    def run(self, request: RunEvaluationRequest, caller: Caller) -> Operation:
        app = AppName.parse(request.app, "app")
        if request.run_count not in (None, 0) and not 1 <= (request.run_count or 0) <= MAX_RUN_COUNT:
            raise InvalidArgument(f"runCount must be between 1 and {MAX_RUN_COUNT}")
        if request.evaluations and request.evaluation_dataset:
            raise InvalidArgument("set evaluations or evaluationDataset, not both")
        if not request.evaluations and not request.evaluation_dataset:
            raise InvalidArgument("evaluations or evaluationDataset is required")
        config = request.config or EvaluationConfig()
        if config.evaluation_channel not in (None, "EVALUATION_CHANNEL_UNSPECIFIED", "TEXT"):
            raise InvalidArgument("config.evaluationChannel: only TEXT evaluations can be run")
        now = Timestamp.now()
        run_id = uuid.uuid4().hex[:16]
        run_name = app.child(EvaluationRunName, run_id)
        with self.database.transaction() as connection:
            app_pk = self.apps.app_pk(connection, app)
            # The run writes no part of the app: each reference its evaluations make is checked once.
            parts = AppParts(connection, app_pk, app, unchanging=True)
            names, dataset = self._run_members(connection, parts, request)
            version_name, version_display = self._version(connection, parts, request.app_version)
            # A run of the draft names the change it ran after, so a regression leads to the change that made it.
            changed = None if version_name else latest_changelog(connection, app_pk, app,
                                                                 self.apps.changes.retention_days)
            rows_by_id = _evaluation_rows(connection, app_pk, [name.id for name in names])
            evaluations = []
            for name in names:
                if name.id not in rows_by_id:
                    raise NotFound(f"evaluation {name} does not exist")
                evaluations.append(self.evaluations.to_model(rows_by_id[name.id], str(name)))
            choices = _Choices.of(self._evaluation_settings(connection, parts), config, request.golden_run_method)
            for evaluation in evaluations:
                problems = missing_references(evaluation, EvaluationName.parse(evaluation.name), parts)
                if problems:
                    raise FailedPrecondition(f"evaluation {evaluation.name} is invalid: {problems[0]}")
            counts = [request.run_count or (SCENARIO_RUN_COUNT if e.scenario is not None else 1) for e in evaluations]
            if sum(counts) > MAX_RUN_RESULTS:
                raise InvalidArgument(f"a run may have at most {MAX_RUN_RESULTS} results")
            criteria = self._criteria(connection, app, parts, evaluations)
            personas = self._personas(connection, parts, request.persona_run_configs or [])
            persona_uses: dict[str, int] = {}
            result_names: list[str] = []
            rows: list[dict[str, Any]] = []
            for repetition in range(max(counts, default=0)):
                for evaluation, run_count in zip(evaluations, counts, strict=True):
                    if repetition >= run_count:
                        continue
                    evaluation_name = EvaluationName.parse(evaluation.name)
                    result_id = uuid.uuid4().hex[:16]
                    result_name = evaluation_name.result(result_id)
                    label = f" #{repetition + 1}" if run_count > 1 else ""
                    scenario = evaluation.scenario
                    persona = personas[repetition % len(personas)] if scenario is not None and personas else None
                    if persona is not None:
                        persona_uses[persona.name or ""] = persona_uses.get(persona.name or "", 0) + 1
                    result = EvaluationResult(
                        name=str(result_name), display_name=f"{evaluation.display_name} result - {now}{label}",
                        create_time=now, evaluation_run=str(run_name), initiated_by=caller.principal,
                        app_version=version_name, app_version_display_name=version_display,
                        execution_state=ExecutionState.QUEUED, evaluation_metrics_thresholds=effective_thresholds(evaluation),
                        config=config, golden_run_method=choices.method if scenario is None else None, persona=persona,
                        changelog=str(changed[0]) if changed else None, changelog_create_time=changed[1] if changed else None,
                    )
                    plan = choices.plan(evaluation, persona, version_name, criteria)
                    result_names.append(str(result_name))
                    rows.append({
                        "app_pk": app_pk, "evaluation_id": evaluation_name.id, "result_id": result_id,
                        "evaluation_run": str(run_name), "create_time_us": now.to_micros() + repetition,
                        "execution_state": ExecutionState.QUEUED.value, "evaluation_status": "", "attempts": 0,
                        "body": result.to_json(), "plan": plan.to_json(),
                    })
            run = EvaluationRun(
                name=str(run_name),
                display_name=request.display_name or f"{dataset[1] if dataset else app.app} run - {now}",
                evaluation_results=result_names, create_time=now, initiated_by=caller.principal,
                app_version=version_name, app_version_display_name=version_display,
                evaluations=[str(name) for name in names] if not dataset else None,
                evaluation_dataset=dataset[0] if dataset else None, evaluation_type=_evaluation_type(evaluations),
                state=EvaluationRunState.RUNNING,
                progress=EvaluationRunProgress(total_count=len(rows), failed_count=0, error_count=0, completed_count=0,
                                               passed_count=0),
                config=config, run_count=request.run_count or max(counts, default=1),
                persona_run_configs=request.persona_run_configs or [
                    PersonaRunConfig(persona=persona, task_count=count) for persona, count in persona_uses.items()
                ] or None,
                golden_run_method=choices.method if any(e.golden is not None for e in evaluations) else None,
            )
            operation = self.operations.start(connection, LocationName(app.project, app.location), caller,
                                              operation_metadata(run, False))
            connection.execute(insert(evaluation_runs).values(
                app_pk=app_pk, run_id=run_id, create_time_us=now.to_micros(), initiated_by=caller.principal,
                app_version_display_name=version_display or "", state=EvaluationRunState.RUNNING.value,
                cancel_requested=False, operation=operation.name, pending_count=len(rows), completed_count=0,
                passed_count=0, failed_count=0, error_count=0, cancelled_count=0, body=run.to_json(),
            ))
            if rows:
                connection.execute(insert(evaluation_results), rows)
                aggregates.results_created(connection, [aggregates.CreatedResult(
                    app_pk, row["evaluation_id"], str(run_name), (row["create_time_us"], row["result_id"]))
                    for row in rows])
            pks = connection.execute(select(evaluation_results.c.id).where(
                evaluation_results.c.app_pk == app_pk, evaluation_results.c.evaluation_run == str(run_name),
            ).order_by(evaluation_results.c.create_time_us, evaluation_results.c.id)).scalars().all()
            self.executor.submit(connection, app_pk, run_id, pks, operation.name or "")
        self.executor.jobs.submitted()
        return operation

    def simulate(self, app_text: str, scenario: Scenario, caller: Caller, *, persona: str | None = None,
                 app_version: str | None = None, on_turn: TurnListener | None = None) -> tuple[Simulation, ScenarioScore]:
        """Explore a scenario by hand: simulate one conversation (source SIMULATOR) and score it, storing no result.

        The conversation is recorded like any other; the score is computed but not kept."""
        app = AppName.parse(app_text, "app")
        check_scenario(scenario)
        with self.database.reading() as connection:
            app_pk = self.apps.app_pk(connection, app)
            parts = AppParts(connection, app_pk, app)
            settings = self._evaluation_settings(connection, parts)
            version, _ = self._version(connection, parts, app_version)
            chosen = self._persona(connection, parts, persona, "persona") if persona else None
        choices = _Choices.of(settings, EvaluationConfig(), None)
        plan = SimulationPlan(scenario=scenario, persona=chosen, initiator=choices.initiator,
                              tool_calls=choices.scenario_tools, app_version=version, source=Source.SIMULATOR)
        return self.executor.play_scenario(plan, Evaluation(display_name="simulation", scenario=scenario), [], caller,
                                           app, f"sim-{uuid.uuid4().hex[:16]}", on_turn)

    def _run_members(self, connection: Connection, parts: AppParts,
                     request: RunEvaluationRequest) -> tuple[list[EvaluationName], tuple[str, str] | None]:
        """The evaluations to run, and the dataset (name, display name) when a dataset was given."""
        if request.evaluation_dataset:
            dataset = EvaluationDatasetName.parse(request.evaluation_dataset, "evaluationDataset")
            if dataset.app_name != parts.app:
                raise InvalidArgument(f"evaluationDataset: {dataset} is not in the app {parts.app}")
            body = connection.scalar(select(definitions.c.body).where(
                definitions.c.app_pk == parts.app_pk, definitions.c.collection == EvaluationDatasetName.collection,
                definitions.c.resource_id == dataset.id))
            if body is None:
                raise NotFound(f"evaluation dataset {dataset} does not exist")
            names = [EvaluationName.parse(member) for member in body.get("evaluations", [])]
            if not names:
                raise FailedPrecondition(f"evaluation dataset {dataset} has no evaluations")
            return names, (str(dataset), str(body.get("displayName") or dataset.id))
        asked: dict[EvaluationName, None] = {}  # in the order asked, each once
        wanted = []
        for value in request.evaluations or ():
            try:
                wanted.append(EvaluationName.parse(value).id)
            except InvalidArgument:
                pass  # reported in order below
        existing = _evaluation_ids(connection, parts.app_pk, wanted)
        for index, value in enumerate(request.evaluations or ()):
            name = EvaluationName.parse(value, f"evaluations[{index}]")
            if name.app_name != parts.app:
                raise InvalidArgument(f"evaluations[{index}]: {value} is not in the app {parts.app}")
            if name.id not in existing:
                raise NotFound(f"evaluation {name} does not exist")
            asked[name] = None
        return list(asked), None

    def _version(self, connection: Connection, parts: AppParts, version: str | None) -> tuple[str | None, str | None]:
        """The app version to run (name, display name), or (None, None) for the draft."""
        if not version:
            return None, None
        name = AppVersionName.parse(version, "appVersion")
        if name.app_name != parts.app:
            raise InvalidArgument(f"appVersion: {version} is not a version of the app {parts.app}")
        body = connection.scalar(select(definitions.c.body).where(
            definitions.c.app_pk == parts.app_pk, definitions.c.collection == AppVersionName.collection,
            definitions.c.resource_id == name.id))
        if body is None:
            raise NotFound(f"app version {name} does not exist")
        return str(name), str(body.get("displayName") or name.id)

    def _evaluation_settings(self, connection: Connection, parts: AppParts) -> EvaluationSettings:
        settings = connection.scalar(select(apps.c.settings).where(apps.c.id == parts.app_pk)) or {}
        return EvaluationSettings.model_validate(settings.get("evaluationSettings") or {})

    def _personas(self, connection: Connection, parts: AppParts,
                  configs: list[PersonaRunConfig]) -> list[EvaluationPersona]:
        """The personas scenario repetitions take in turn: each config's persona taskCount times (1 when
        unset), or, with no configs, every persona of the app in ID order; none when the app has none."""
        if not configs:
            return [self.personas.to_model(row, str(parts.app.child(EvaluationPersonaName, row.resource_id)))
                    for row in connection.execute(select(definitions).where(
                        definitions.c.app_pk == parts.app_pk,
                        definitions.c.collection == EvaluationPersonaName.collection,
                    ).order_by(definitions.c.resource_id).limit(MAX_RUN_COUNT)).all()]
        chosen: list[EvaluationPersona] = []
        for index, config in enumerate(configs):
            where = f"personaRunConfigs[{index}]"
            if config.task_count is not None and not 0 <= config.task_count <= MAX_RUN_COUNT:
                raise InvalidArgument(f"{where}.taskCount must be between 0 and {MAX_RUN_COUNT}")
            persona = self._persona(connection, parts, config.persona, f"{where}.persona")
            chosen.extend([persona] * (1 if config.task_count is None else config.task_count))
        return chosen

    def _persona(self, connection: Connection, parts: AppParts, value: str | None, field: str) -> EvaluationPersona:
        if not value:
            raise InvalidArgument(f"{field} is required")
        name = EvaluationPersonaName.parse(value, field)
        if name.app_name != parts.app or not parts.exists(EvaluationPersonaName.collection, name.id):
            raise NotFound(f"{field}: evaluation persona {value} does not exist")
        return self.personas.to_model(self.personas._row(connection, name)[1], str(name))

    def _criteria(self, connection: Connection, app: AppName, parts: AppParts,
                  evaluations: list[Evaluation]) -> dict[str, EvaluationExpectation]:
        wanted = {value for evaluation in evaluations for value in (
            evaluation.scenario or evaluation.golden or Golden()).evaluation_expectations or ()}
        found = {}
        for value in sorted(wanted):
            name = EvaluationExpectationName.parse(value)
            _, row = self.expectations._row(connection, name)
            found[value] = self.expectations.to_model(row, str(name))
        return found

    def get_run(self, name_text: str, caller: Caller) -> EvaluationRun:
        name = EvaluationRunName.parse(name_text)
        with self.database.reading() as connection:
            row = self._run_row(connection, name)
            run = run_model(row)
            if run.state == EvaluationRunState.RUNNING:  # summaries are stored when it finishes
                run = run.model_copy(update={"evaluation_run_summaries": self.executor.summaries(
                    connection, row.app_pk, str(name)) or None})
            return run

    def _run_row(self, connection: Connection, name: EvaluationRunName) -> AnyRow:
        app_pk = self.apps.app_pk(connection, name.app_name)
        row = connection.execute(select(evaluation_runs).where(
            evaluation_runs.c.app_pk == app_pk, evaluation_runs.c.run_id == name.id)).first()
        if row is None:
            raise NotFound(f"evaluation run {name} does not exist")
        return row

    def list_runs(self, request: ListEvaluationRunsRequest, caller: Caller) -> tuple[list[EvaluationRun], str | None]:
        parent = AppName.parse(request.parent, "parent")
        size = resolve_page_size(request.page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        order = _order(request.order_by, ("create_time", "name"), "create_time")
        query = {"method": "list_evaluation_runs", "parent": str(parent), "filter": request.filter or "",
                 "orderBy": request.order_by or ""}
        with self.database.reading() as connection:
            app_pk = self.apps.app_pk(connection, parent)
            statement = select(evaluation_runs).where(evaluation_runs.c.app_pk == app_pk)
            condition = compile_filter(request.filter, RUN_FIELDS)
            if condition is not None:
                statement = statement.where(condition)
            statement = _keyset(statement, self.tokens, request.page_token, query, caller, order,
                                evaluation_runs.c.create_time_us, evaluation_runs.c.run_id)
            rows = connection.execute(statement.limit(size + 1)).all()
        page, more = split_page(rows, size)
        token = self.tokens.issue(query=query, caller=caller.principal,
                                  position=[page[-1].create_time_us, page[-1].run_id]) if more else None
        return [run_model(row) for row in page], token

    def delete_run(self, name_text: str, caller: Caller) -> None:
        name = EvaluationRunName.parse(name_text)
        with self.database.transaction() as connection:
            row = self._run_row(connection, name)
            if row.state == EvaluationRunState.RUNNING.value:
                raise FailedPrecondition(f"evaluation run {name} is still running; cancel its operation first")
            deleted = connection.execute(select(*DELETED_RESULT).where(
                evaluation_results.c.app_pk == row.app_pk, evaluation_results.c.evaluation_run == str(name))).all()
            connection.execute(delete(evaluation_results).where(
                evaluation_results.c.app_pk == row.app_pk, evaluation_results.c.evaluation_run == str(name)))
            aggregates.results_deleted(connection, deleted)
            connection.execute(delete(evaluation_runs).where(evaluation_runs.c.id == row.id))

    # -- results ------------------------------------------------------------------------------------------

    def get_result(self, name_text: str, caller: Caller) -> EvaluationResult:
        name = EvaluationResultName.parse(name_text)
        with self.database.reading() as connection:
            return EvaluationResult.model_validate(self._result_row(connection, name).body)

    def _result_row(self, connection: Connection, name: EvaluationResultName) -> AnyRow:
        app_pk = self.apps.app_pk(connection, name.app_name)
        row = connection.execute(select(evaluation_results).where(
            evaluation_results.c.app_pk == app_pk, evaluation_results.c.evaluation_id == name.evaluation,
            evaluation_results.c.result_id == name.result)).first()
        if row is None:
            raise NotFound(f"evaluation result {name} does not exist")
        return row

    def display_names(self, app_text: str, evaluation_ids: Sequence[str], caller: Caller) -> dict[str, str]:
        """The display names of the app's evaluations among ``evaluation_ids`` (those that exist), by ID, in one
        reading: a run's summary shows each, and reading every evaluation whole cost a transaction apiece."""
        app = AppName.parse(app_text, "app")
        with self.database.reading() as connection:
            app_pk = self.apps.app_pk(connection, app)
            rows = _evaluation_rows(connection, app_pk, evaluation_ids)
        return {evaluation_id: str(row.body.get("displayName") or "") for evaluation_id, row in rows.items()}

    def list_results(self, request: ListEvaluationResultsRequest,
                     caller: Caller) -> tuple[list[EvaluationResult], str | None]:
        every = request.parent.endswith("/evaluations/-")
        app = (AppName.parse(request.parent.removesuffix("/evaluations/-"), "parent") if every
               else EvaluationName.parse(request.parent, "parent").app_name)
        size = resolve_page_size(request.page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        order = _order(request.order_by, ("create_time",), "create_time")
        query = {"method": "list_evaluation_results", "parent": request.parent, "filter": request.filter or "",
                 "orderBy": request.order_by or ""}
        with self.database.reading() as connection:
            app_pk = self.apps.app_pk(connection, app)
            statement = select(*_LISTED_RESULT_COLUMNS).where(evaluation_results.c.app_pk == app_pk)
            if not every:
                evaluation = EvaluationName.parse(request.parent, "parent")
                if not AppParts(connection, app_pk, app).exists(EvaluationName.collection, evaluation.id):
                    raise NotFound(f"evaluation {evaluation} does not exist")
                statement = statement.where(evaluation_results.c.evaluation_id == evaluation.id)
            condition = compile_filter(request.filter, RESULT_FIELDS)
            if condition is not None:
                statement = statement.where(condition)
            tie = evaluation_results.c.evaluation_id + "/" + evaluation_results.c.result_id
            statement = _keyset(statement, self.tokens, request.page_token, query, caller, order,
                                evaluation_results.c.create_time_us, tie)
            rows = connection.execute(statement.limit(size + 1)).all()
        page, more = split_page(rows, size)
        token = self.tokens.issue(query=query, caller=caller.principal, position=[
            page[-1].create_time_us, f"{page[-1].evaluation_id}/{page[-1].result_id}"]) if more else None
        return [EvaluationResult.model_validate(row.body) for row in page], token

    def delete_result(self, name_text: str, caller: Caller) -> None:
        name = EvaluationResultName.parse(name_text)
        with self.database.transaction() as connection:
            row = self._result_row(connection, name)
            if row.execution_state in (ExecutionState.QUEUED.value, ExecutionState.RUNNING.value):
                raise FailedPrecondition(f"evaluation result {name} is still to run; cancel its run first")
            connection.execute(delete(evaluation_results).where(evaluation_results.c.id == row.id))
            aggregates.results_deleted(connection, [row])
            run = connection.execute(select(evaluation_runs).where(
                evaluation_runs.c.app_pk == row.app_pk,
                evaluation_runs.c.run_id == row.evaluation_run.rsplit("/", 1)[-1])).first()
            if run is not None:
                body = dict(run.body)
                body["evaluationResults"] = [r for r in body.get("evaluationResults", []) if r != str(name)]
                connection.execute(update(evaluation_runs).where(evaluation_runs.c.id == run.id).values(body=body))


def _given(*values: Any) -> Any:
    """The first enum setting given; ``*_UNSPECIFIED`` counts as not given."""
    return next((value for value in values if value is not None and not str(value).endswith("_UNSPECIFIED")), None)


@dataclass(frozen=True)
class _Choices:
    """How a run's results run: what the request says, else the app's evaluationSettings, else CES's default."""

    method: GoldenRunMethod
    golden_tools: EvaluationToolCallBehaviour
    scenario_tools: EvaluationToolCallBehaviour
    initiator: ScenarioConversationInitiator

    @classmethod
    def of(cls, settings: EvaluationSettings, config: EvaluationConfig, method: GoldenRunMethod | None) -> _Choices:
        real = EvaluationToolCallBehaviour.REAL
        return cls(
            method=_given(method, settings.golden_run_method) or GoldenRunMethod.STABLE,
            golden_tools=_given(config.tool_call_behaviour, settings.golden_evaluation_tool_call_behaviour) or real,
            scenario_tools=_given(config.tool_call_behaviour, settings.scenario_evaluation_tool_call_behaviour) or real,
            initiator=_given(settings.scenario_conversation_initiator) or ScenarioConversationInitiator.USER,
        )

    def plan(self, evaluation: Evaluation, persona: EvaluationPersona | None, version: str | None,
             criteria: dict[str, EvaluationExpectation]) -> ResultPlan:
        """What a result will follow: the evaluation as it is now and everything it is run with."""
        scenario = evaluation.scenario
        expectations = (scenario or evaluation.golden or Golden()).evaluation_expectations or ()
        return ResultPlan(
            evaluation=evaluation.model_copy(update={
                "aggregated_metrics": None, "last_completed_result": None, "last_ten_results": None,
            }),
            golden_run_method=self.method,
            tool_call_behaviour=self.golden_tools if scenario is None else self.scenario_tools,
            app_version=version,
            criteria=[criteria[name] for name in expectations],
            persona=persona,
            initiator=self.initiator,
        )


def _evaluation_type(evaluations: Sequence[Evaluation]) -> EvaluationType:
    kinds = {"scenario" if evaluation.scenario is not None else "golden" for evaluation in evaluations}
    if kinds == {"scenario"}:
        return EvaluationType.SCENARIO
    return EvaluationType.MIXED if len(kinds) > 1 else EvaluationType.GOLDEN


def _keyset(statement: Any, tokens: PageTokens, page_token: str | None, query: dict[str, Any], caller: Caller,
            order: _Order, time_column: Any, tie_column: Any) -> Any:
    """Newest-first (or by name) keyset paging over (time, tie-breaker)."""
    if page_token:
        match tokens.position(page_token, query=query, caller=caller.principal):
            case [int() as at, str() as after]:
                if order.column == "name":
                    statement = statement.where(tie_column < after if order.descending else tie_column > after)
                elif order.descending:
                    statement = statement.where(time_column <= at, (time_column < at) | (tie_column > after))
                else:
                    statement = statement.where(time_column >= at, (time_column > at) | (tie_column > after))
            case _:
                raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
    if order.column == "name":
        return statement.order_by(tie_column.desc() if order.descending else tie_column)
    return statement.order_by(time_column.desc() if order.descending else time_column.asc(), tie_column)


def _dataset_filter(text: str) -> list[str]:
    """The datasets of an evaluation filter: ``evaluation_datasets:"NAME"`` terms joined with OR."""
    terms = [t.strip() for t in re.split(r"\s+OR\s+", text.strip()) if t.strip()]
    datasets = []
    for term in terms:
        match = re.fullmatch(r'(?:evaluation_datasets|evaluationDatasets)\s*[:=]\s*"?([^"\s]+)"?', term)
        if match is None:
            raise InvalidArgument(
                f'evaluationFilter "{text[:80]}" is not supported; use evaluation_datasets:"…/evaluationDatasets/ID" '
                "(several joined with OR)")
        datasets.append(match.group(1))
    return datasets


_LISTED_RESULT_COLUMNS = tuple(column for column in evaluation_results.c if column.name != "plan")
"""A listed result's row without its plan (the whole evaluation it played), which the page does not show."""

_IN_BATCH = 500
"""IDs per ``IN`` list when a run reads its evaluations: one statement for many, within every engine's limits."""


def _evaluation_rows(connection: Connection, app_pk: int, ids: Sequence[str]) -> dict[str, AnyRow]:
    """The stored evaluations of the app among ``ids``, by ID, in a statement per ``_IN_BATCH`` of them."""
    found: dict[str, AnyRow] = {}
    unique = sorted(set(ids))
    for start in range(0, len(unique), _IN_BATCH):
        for row in connection.execute(select(definitions).where(
                definitions.c.app_pk == app_pk, definitions.c.collection == EvaluationName.collection,
                definitions.c.resource_id.in_(unique[start:start + _IN_BATCH]))):
            found[row.resource_id] = row
    return found


def _evaluation_ids(connection: Connection, app_pk: int, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` name an evaluation of the app."""
    found: set[str] = set()
    unique = sorted(set(ids))
    for start in range(0, len(unique), _IN_BATCH):
        found.update(connection.scalars(select(definitions.c.resource_id).where(
            definitions.c.app_pk == app_pk, definitions.c.collection == EvaluationName.collection,
            definitions.c.resource_id.in_(unique[start:start + _IN_BATCH]))))
    return found
