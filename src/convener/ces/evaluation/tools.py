"""MCP tools of CES's EvaluationService, and of the long-running operations evaluation runs are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from convener.auth.caller import Caller
from convener.ces.evaluation.adk_criteria import parse_criteria
from convener.ces.evaluation.models import Evaluation, EvaluationResult, EvaluationRun
from convener.ces.evaluation.requests import (
    DeleteEvaluationRequest,
    DeleteEvaluationResultRequest,
    DeleteEvaluationRunRequest,
    GenerateEvaluationRequest,
    GetEvaluationRequest,
    GetEvaluationResultRequest,
    GetEvaluationRunRequest,
    ImportAdkRequest,
    ImportAdkResponse,
    ListEvaluationResultsRequest,
    ListEvaluationResultsResponse,
    ListEvaluationRunsRequest,
    ListEvaluationRunsResponse,
    ListEvaluationsRequest,
    ListEvaluationsResponse,
    RunEvaluationRequest,
    SimulateScenarioRequest,
    SimulateScenarioResponse,
)
from convener.ces.evaluation.service import EvaluationService
from convener.ces.evaluation.simulated_user import Exchange
from convener.ces.evaluation.simulation import MAX_TURNS
from convener.ces.names import EvaluationName
from convener.ces.part_tools import PartTools, part_messages, register_part_tools
from convener.ces.requests import Empty
from convener.longrunning.models import (
    CancelOperationRequest,
    DeleteOperationRequest,
    GetOperationRequest,
    ListOperationsRequest,
    ListOperationsResponse,
    Operation,
    WaitOperationRequest,
)
from convener.longrunning.service import OperationService
from convener.progress import Report
from convener.tooling import CREATES, DELETES, READ_ONLY, RUNS, UPDATES, ToolGroup, ToolSpec

# get_evaluation as seed 001 annotates it: read-only, not destructive, idempotent, closed world.
EVALUATION_ABOUT = ("a golden evaluation (turns of user inputs and the expectations on what the agent does) or a "
                    "scenario evaluation (a task for a simulated user) of an app")


def register_evaluation_tools(group: ToolGroup, service: EvaluationService) -> None:
    _register_evaluations(group, service)
    register_part_tools(group, service.datasets, PartTools(
        "evaluation_dataset", "evaluation_datasets", "evaluation dataset",
        "an evaluation dataset of an app: a named set of evaluations to run together.",
        delete_note="Its evaluations are kept.",
    ))
    register_part_tools(group, service.expectations, PartTools(
        "evaluation_expectation", "evaluation_expectations", "evaluation expectation",
        "an evaluation expectation of an app: a criterion (llmCriteria.prompt) a judge checks a whole replayed "
        "conversation against; goldens name it in evaluationExpectations.",
        delete_note="",
    ))
    register_part_tools(group, service.personas, PartTools(
        "evaluation_persona", "evaluation_personas", "evaluation persona",
        "an evaluation persona of an app: who a simulated user is (personality, description, speech settings).",
        delete_note="",
    ))
    _register_runs(group, service)


def _register_evaluations(group: ToolGroup, service: EvaluationService) -> None:
    messages = part_messages(Evaluation, EvaluationName, "evaluation", "evaluations", "evaluation")

    def create(request: Any, caller: Caller) -> Evaluation:
        return service.create_evaluation(request.parent, request.evaluation_id,
                                         request.evaluation, caller)

    def update(request: Any, caller: Caller) -> Evaluation:
        return service.update_evaluation(request.evaluation, request.update_mask, caller)

    def get(request: GetEvaluationRequest, caller: Caller) -> Evaluation:
        return service.get_evaluation(request.name, bool(request.last_ten_results), caller)

    def list_(request: ListEvaluationsRequest, caller: Caller) -> ListEvaluationsResponse:
        items, token = service.list_evaluations(request, caller)
        return ListEvaluationsResponse(evaluations=items, next_page_token=token)

    def delete(request: DeleteEvaluationRequest, caller: Caller) -> Empty:
        service.delete_evaluation(request, caller)
        return Empty()

    def generate(request: GenerateEvaluationRequest, caller: Caller) -> Evaluation:
        return service.generate_evaluation(request, caller)

    def import_adk(request: ImportAdkRequest, caller: Caller) -> ImportAdkResponse:
        criteria = parse_criteria(request.criteria, "criteria") if request.criteria is not None else None
        done = service.import_adk(request.parent, request.content, request.source, caller, criteria)
        return ImportAdkResponse(evaluations=done.evaluations, warnings=list(done.warnings) or None)

    group.add(ToolSpec("create_evaluation", "Create an evaluation", f"Creates {EVALUATION_ABOUT}. Every tool, "
                          "toolset, agent and evaluation expectation it names must exist in the app.",
                          messages.create, Evaluation, CREATES, create))
    group.add(ToolSpec(
        "get_evaluation", "Get an evaluation",
        "Gets an evaluation with its definition and what its runs found: the runs that ran it, its last completed "
        "result, metrics aggregated by app version, the datasets that list it, and whether it still resolves "
        "against the app (invalid).", GetEvaluationRequest, Evaluation, READ_ONLY, get))
    group.add(ToolSpec(
        "list_evaluations", "List evaluations",
        "Lists the evaluations of an app, most recently updated first (orderBy create_time or name also), "
        "optionally only those of a dataset (evaluationFilter) or run by matching runs (evaluationRunFilter).",
        ListEvaluationsRequest, ListEvaluationsResponse, READ_ONLY, list_))
    group.add(ToolSpec("update_evaluation", "Update an evaluation",
                          "Updates the fields of an evaluation named in updateMask; a stale etag is ABORTED.",
                          messages.update, Evaluation, UPDATES, update))
    group.add(ToolSpec("delete_evaluation", "Delete an evaluation",
                          "Deletes an evaluation and its results. One that a dataset lists is deleted only with force, "
                          "which also removes it from those datasets.", DeleteEvaluationRequest, Empty, DELETES, delete))
    group.add(ToolSpec(
        "generate_evaluation", "Generate an evaluation",
        "Creates a golden evaluation from a recorded conversation: its user inputs become the steps; its tool "
        "calls, tool responses, transfers, variable updates and replies become the expectations.",
        GenerateEvaluationRequest, Evaluation, CREATES, generate))
    group.add(ToolSpec(
        "import_adk_evaluations", "Import ADK evaluations",
        "Creates golden evaluations from a Google ADK evalset (*.evalset.json) or test file (*.test.json), all or "
        "none, scored with the evalset's ADK criteria (criteria: its test_config.json; ADK's defaults when unset).", ImportAdkRequest, ImportAdkResponse, CREATES, import_adk))


def _register_runs(group: ToolGroup, service: EvaluationService) -> None:
    def run(request: RunEvaluationRequest, caller: Caller) -> Operation:
        return service.run(request, caller)

    def get_run(request: GetEvaluationRunRequest, caller: Caller) -> EvaluationRun:
        return service.get_run(request.name, caller)

    def list_runs(request: ListEvaluationRunsRequest, caller: Caller) -> ListEvaluationRunsResponse:
        items, token = service.list_runs(request, caller)
        return ListEvaluationRunsResponse(evaluation_runs=items, next_page_token=token)

    def delete_run(request: DeleteEvaluationRunRequest, caller: Caller) -> Empty:
        service.delete_run(request.name, caller)
        return Empty()

    def get_result(request: GetEvaluationResultRequest, caller: Caller) -> EvaluationResult:
        return service.get_result(request.name, caller)

    def list_results(request: ListEvaluationResultsRequest, caller: Caller) -> ListEvaluationResultsResponse:
        items, token = service.list_results(request, caller)
        return ListEvaluationResultsResponse(evaluation_results=items, next_page_token=token)

    def delete_result(request: DeleteEvaluationResultRequest, caller: Caller) -> Empty:
        service.delete_result(request.name, caller)
        return Empty()

    def simulate(request: SimulateScenarioRequest, caller: Caller, report: Report) -> SimulateScenarioResponse:
        limit = request.scenario.max_turns or MAX_TURNS
        turns = 0

        def on_turn(said: Exchange, replies: Sequence[Exchange]) -> None:
            nonlocal turns
            turns += 1
            agent = " / ".join(reply.text for reply in replies) or "(nothing)"
            report(float(turns), float(limit), f"turn {turns}: user: {said.text[:200]} | agent: {agent[:200]}")

        simulation, score = service.simulate(request.app, request.scenario, caller, persona=request.persona,
                                             app_version=request.app_version, on_turn=on_turn)
        return SimulateScenarioResponse(
            conversation=score.result.conversation, ended_by=simulation.ended_by,
            turn_count=len(simulation.observed), simulated_user=simulation.user.name,
            simulated_user_limits=simulation.user.limits, evaluation_status=score.status,
            outcome_metadata=score.metadata, scenario_result=score.result)

    group.add(ToolSpec(
        "run_evaluation", "Run evaluations",
        "Runs evaluations (or a dataset's) against the app's draft or appVersion, runCount times each (by default "
        "a golden once and a scenario five times, the personas taking turns), in the background. Golden "
        "evaluations are replayed STABLE (each turn a fresh session that starts from the expected earlier turns; "
        "the default) or NAIVE (one session); scenarios are simulated conversations with a simulated user; tool "
        "calls are REAL or FAKE (answered from the golden's or scenario's mocks). Returns a long-running "
        "operation: follow it with get_operation or wait_operation; results appear with get_evaluation_run and "
        "list_evaluation_results.",
        RunEvaluationRequest, Operation, RUNS, run))
    group.add(ToolSpec(
        "simulate_scenario", "Simulate a scenario",
        "Convener extension, to try a scenario before saving it: a simulated user (the configured model, or the "
        "offline simulator) pursues the scenario's task against the app's agents in one recorded conversation "
        "(source SIMULATOR), which is scored as a run would score it. Nothing else is stored. Sends an MCP "
        "progress notification per turn when the call carries a progressToken.",
        SimulateScenarioRequest, SimulateScenarioResponse, RUNS,
        lambda request, caller: simulate(request, caller, lambda *_: None), progress_handler=simulate))
    group.add(ToolSpec("get_evaluation_run", "Get an evaluation run",
                          "Gets an evaluation run with its state, progress and per-evaluation summaries.",
                          GetEvaluationRunRequest, EvaluationRun, READ_ONLY, get_run))
    group.add(ToolSpec("list_evaluation_runs", "List evaluation runs",
                          "Lists the evaluation runs of an app, newest first.",
                          ListEvaluationRunsRequest, ListEvaluationRunsResponse, READ_ONLY, list_runs))
    group.add(ToolSpec("delete_evaluation_run", "Delete an evaluation run",
                          "Deletes a finished evaluation run and its results.",
                          DeleteEvaluationRunRequest, Empty, DELETES, delete_run))
    group.add(ToolSpec("get_evaluation_result", "Get an evaluation result",
                          "Gets one result of an evaluation: for a golden, per-turn replay results with every "
                          "metric and the conversation recorded for each replayed turn; for a scenario, the "
                          "simulated conversation and its scenarioResult; and the outcome.",
                          GetEvaluationResultRequest, EvaluationResult, READ_ONLY, get_result))
    group.add(ToolSpec("list_evaluation_results", "List evaluation results",
                          "Lists the results of an evaluation, newest first; with parent …/evaluations/- the results "
                          'of every evaluation, e.g. with filter evaluation_run = "…/evaluationRuns/RUN".',
                          ListEvaluationResultsRequest, ListEvaluationResultsResponse, READ_ONLY, list_results))
    group.add(ToolSpec("delete_evaluation_result", "Delete an evaluation result",
                          "Deletes a finished evaluation result.",
                          DeleteEvaluationResultRequest, Empty, DELETES, delete_result))


def register_operation_tools(group: ToolGroup, operations: OperationService) -> None:
    def get(request: GetOperationRequest, caller: Caller) -> Operation:
        return operations.get(request.name, caller)

    def list_(request: ListOperationsRequest, caller: Caller) -> ListOperationsResponse:
        items, token = operations.list(request.name, request.filter, request.page_size, request.page_token, caller)
        return ListOperationsResponse(operations=items, next_page_token=token)

    def cancel(request: CancelOperationRequest, caller: Caller) -> Empty:
        operations.cancel(request.name, caller)
        return Empty()

    def delete(request: DeleteOperationRequest, caller: Caller) -> Empty:
        operations.delete(request.name, caller)
        return Empty()

    def wait(request: WaitOperationRequest, caller: Caller, report: Report) -> Operation:
        def progress(operation: Operation) -> None:
            counts = (operation.metadata or {}).get("progress") or {}
            total = counts.get("totalCount")
            finished = sum(counts.get(key, 0) for key in ("completedCount", "errorCount"))
            report(float(finished), float(total) if total else None,
                   f"{finished}/{total} results finished" if total else None)

        return operations.wait(request.name, request.timeout, caller, progress)

    group.add(ToolSpec("get_operation", "Get an operation",
                          "Gets a long-running operation: its metadata (for evaluation runs, progress), and once "
                          "done, its response or error.", GetOperationRequest, Operation, READ_ONLY, get))
    group.add(ToolSpec("list_operations", "List operations",
                          "Lists the caller's operations in a location, newest first.",
                          ListOperationsRequest, ListOperationsResponse, READ_ONLY, list_))
    group.add(ToolSpec("cancel_operation", "Cancel an operation",
                          "Asks an operation to stop: work not yet started is not started; the operation ends with "
                          "error code 1 (CANCELLED).", CancelOperationRequest, Empty, UPDATES, cancel))
    group.add(ToolSpec("delete_operation", "Delete an operation",
                          "Forgets a finished operation; what it produced stays.",
                          DeleteOperationRequest, Empty, DELETES, delete))
    group.add(ToolSpec(
        "wait_operation", "Wait for an operation",
        "Waits until an operation is done or the timeout passes, and returns it. Sends MCP progress "
        "notifications as the work advances when the call carries a progressToken.",
        WaitOperationRequest, Operation, READ_ONLY, lambda request, caller: operations.wait(
            request.name, request.timeout, caller), progress_handler=wait))
