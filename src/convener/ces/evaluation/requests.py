"""Request and response messages of CES's EvaluationService tools."""

from __future__ import annotations

from pydantic import Field

from convener.api.protojson import ProtoModel
from convener.ces.evaluation.models import (
    Evaluation,
    EvaluationConfig,
    EvaluationResult,
    EvaluationRun,
    Outcome,
    OutcomeMetadata,
    PersonaRunConfig,
    Scenario,
    ScenarioResult,
)
from convener.ces.models import GoldenRunMethod, PageSize, PageToken

ORDER_BY = ('"update_time" (the default, newest first), "create_time" (newest first) or "name" (ascending); '
            '" desc"/" asc" may follow.')


class GetEvaluationRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}/evaluations/{evaluation}")
    last_ten_results: bool | None = Field(
        None, description="Convener extension: also return lastTenResults, as list_evaluations does.")


class ListEvaluationsRequest(ProtoModel):
    parent: str = Field(description="Required. The app: projects/{project}/locations/{location}/apps/{app}")
    page_size: PageSize = None
    page_token: PageToken = None
    filter: str | None = Field(None, description="Deprecated: use evaluationFilter and evaluationRunFilter.")
    evaluation_filter: str | None = Field(
        None, description='AIP-160 on the evaluation: evaluation_datasets, e.g. evaluation_datasets:"…/evaluationDatasets/d".')
    evaluation_run_filter: str | None = Field(
        None, description="AIP-160 on the evaluation's runs: create_time, initiated_by, app_version_display_name. "
                          "Lists the evaluations that some matching run ran.")
    order_by: str | None = Field(None, description=ORDER_BY)
    last_ten_results: bool | None = Field(None, description="Return each evaluation's last ten results, newest first.")


class ListEvaluationsResponse(ProtoModel):
    evaluations: list[Evaluation] | None = None
    next_page_token: str | None = None


class DeleteEvaluationRequest(ProtoModel):
    name: str = Field(description="Required. The evaluation to delete, with its results.")
    force: bool | None = Field(
        None, description="Also remove it from the datasets that list it; otherwise such an evaluation is not deleted.")
    etag: str | None = Field(None, description="If set, must match the evaluation's current etag.")


class GenerateEvaluationRequest(ProtoModel):
    conversation: str = Field(
        description="Required. projects/{project}/locations/{location}/apps/{app}/conversations/{conversation}")
    evaluation_id: str | None = Field(None, description="Convener extension: ID of the new evaluation.")
    display_name: str | None = Field(
        None, description="Convener extension: its displayName; by default derived from the conversation.")


class RunEvaluationRequest(ProtoModel):
    app: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}")
    evaluations: list[str] | None = Field(None, description="Evaluations to run (…/evaluations/{evaluation}).")
    evaluation_dataset: str | None = Field(None, description="A dataset whose evaluations to run, instead.")
    display_name: str | None = Field(None, description='Of the run; default "<dataset or app> run - <time>".')
    app_version: str | None = Field(None, description="…/versions/{version} to evaluate; the draft when unset.")
    config: EvaluationConfig | None = Field(None, description="toolCallBehaviour REAL (default) or FAKE.")
    run_count: int | None = Field(
        None, description="How many times to run each evaluation: 1 to 100; by default 1 per golden, 5 per scenario.")
    persona_run_configs: list[PersonaRunConfig] | None = Field(
        None, description="The personas scenario repetitions take in turn (each taskCount times, default 1); "
                          "by default every persona of the app.")
    golden_run_method: GoldenRunMethod | None = Field(None, description="STABLE (the default) or NAIVE.")
    generate_latency_report: bool | None = Field(None, description="Accepted; latencies are always on results.")


class SimulateScenarioRequest(ProtoModel):
    app: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}")
    scenario: Scenario = Field(description="Required. The scenario to simulate, as in create_evaluation: task, "
                                           "userFacts, maxTurns, milestones, rubrics, scenarioExpectations, ….")
    persona: str | None = Field(None, description="…/evaluationPersonas/{persona} the simulated user plays.")
    app_version: str | None = Field(None, description="…/versions/{version} to run; the draft when unset.")


class SimulateScenarioResponse(ProtoModel):
    conversation: str | None = Field(None, description="The recorded conversation (source SIMULATOR).")
    ended_by: str | None = Field(None, description="Why the conversation ended.")
    turn_count: int | None = Field(None, description="How many turns were simulated.")
    simulated_user: str | None = Field(None, description='"model" or "offline".')
    simulated_user_limits: str | None = Field(None, description="What the offline simulated user cannot do.")
    evaluation_status: Outcome | None = Field(None, description="PASS or FAIL, as a run would score it.")
    outcome_metadata: OutcomeMetadata | None = Field(None, description="GRACEFUL_HANDOFF after a handoff.")
    scenario_result: ScenarioResult | None = Field(None, description="The score, field for field as in a run.")


class GetEvaluationRunRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}/evaluationRuns/{evaluationRun}")


class ListEvaluationRunsRequest(ProtoModel):
    parent: str = Field(description="Required. The app: projects/{project}/locations/{location}/apps/{app}")
    page_size: PageSize = None
    page_token: PageToken = None
    filter: str | None = Field(None, description="AIP-160: create_time, initiated_by, app_version_display_name, state.")
    order_by: str | None = Field(None, description='"create_time" (the default, newest first) or "name".')


class ListEvaluationRunsResponse(ProtoModel):
    evaluation_runs: list[EvaluationRun] | None = None
    next_page_token: str | None = None


class DeleteEvaluationRunRequest(ProtoModel):
    name: str = Field(description="Required. A finished run to delete, with its results.")


class GetEvaluationResultRequest(ProtoModel):
    name: str = Field(description="Required. …/apps/{app}/evaluations/{evaluation}/results/{result}")


class ListEvaluationResultsRequest(ProtoModel):
    parent: str = Field(description="Required. …/apps/{app}/evaluations/{evaluation}, or …/evaluations/- for all.")
    page_size: PageSize = None
    page_token: PageToken = None
    filter: str | None = Field(
        None, description='AIP-160: evaluation_run (e.g. evaluation_run = "…/evaluationRuns/r"), execution_state, '
                          "evaluation_status, create_time.")
    order_by: str | None = Field(None, description='"create_time" (the default, newest first).')


class ListEvaluationResultsResponse(ProtoModel):
    evaluation_results: list[EvaluationResult] | None = None
    next_page_token: str | None = None


class DeleteEvaluationResultRequest(ProtoModel):
    name: str = Field(description="Required. …/apps/{app}/evaluations/{evaluation}/results/{result}")


class ImportAdkRequest(ProtoModel):
    parent: str = Field(description="Required. The app: projects/{project}/locations/{location}/apps/{app}")
    content: str = Field(description="Required. An ADK *.evalset.json or *.test.json file's text.")
    source: str | None = Field(None, description="The file's name, noted on the evaluations.")
    criteria: str | None = Field(
        None, description="The evalset's ADK EvalConfig (test_config.json) text: the criteria its evaluations are "
                          "scored with. Unset: ADK's defaults, tool_trajectory_avg_score 1.0 and "
                          "response_match_score 0.8.")


class ImportAdkResponse(ProtoModel):
    evaluations: list[Evaluation] | None = None
    warnings: list[str] | None = Field(
        None, description="The criteria that were not applied (e.g. those needing a model judge when none is "
                          "configured) and what of the EvalConfig was not read.")
