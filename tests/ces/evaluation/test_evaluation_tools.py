"""The evaluation tools over MCP: evaluations, datasets, expectations and personas against the demo app.

Shapes are checked against Google's reference for get_evaluation (seed 001): every key of a result is
a field the seed defines for that message (``SEED`` below, written from its "Representação JSON"
blocks), and a definition comes back field for field as it was written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import httpx
import pytest
from mcp import Client

from convener.demo.loader import install_app
from convener.services import Services
from tests.e2e.conftest import call_json, error_text, timestamp_nanos

pytestmark = pytest.mark.anyio

Json = dict[str, Any]
LOCATION = "projects/demo/locations/global"
APP = f"{LOCATION}/apps/support"
OTHER_APP = f"{LOCATION}/apps/other"
EVALUATIONS = f"{APP}/evaluations"
LOOKUP = f"{APP}/tools/lookup_order"
CHECK_REFUND = f"{APP}/tools/check_refund_eligibility"
CONFIRM = f"{APP}/tools/confirm_identity"
ORDERS = f"{APP}/agents/orders"
REFUNDS = f"{APP}/agents/refunds"
QUESTION = "What's the status of order AC-1001?"
RFC3339_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6}|\.\d{9})?Z")
GENERATED_ID = re.compile(r"[a-z0-9][a-z0-9._~-]{0,127}")
OUTPUT_ONLY = {"name", "createTime", "updateTime", "etag", "createdBy", "lastUpdatedBy", "invalid",
               "evaluationDatasets", "evaluationRuns", "aggregatedMetrics", "lastCompletedResult", "lastTenResults"}


# ---------------------------------------------------------------- the seed's messages


def _message(scalars: str, **messages: str) -> dict[str, str | None]:
    """A message's JSON fields: scalars (and Struct/enum/Timestamp/Duration fields) map to None, sub-messages
    to their message's name."""
    return {**dict.fromkeys(scalars.split()), **messages}


SEED: dict[str, dict[str, str | None]] = {
    "Evaluation": _message(
        "name displayName description tags evaluationDatasets createTime createdBy updateTime lastUpdatedBy "
        "evaluationRuns etag invalid",
        aggregatedMetrics="AggregatedMetrics", lastCompletedResult="EvaluationResult",
        lastTenResults="EvaluationResult", evaluationMetricsThresholdOverride="EvaluationMetricsThresholds",
        evaluationMetricsConfigOverride="EvaluationMetricsConfig", golden="Golden", scenario="Scenario"),
    "Golden": _message("evaluationExpectations", turns="GoldenTurn"),
    "GoldenTurn": _message("hallucinationMetricBehaviorOverride", steps="Step", rootSpan="Span",
                           turnLevelMetricsThresholdsOverride="TurnLevelMetricsThresholds"),
    "Step": _message("", userInput="SessionInput", agentTransfer="AgentTransfer", expectation="GoldenExpectation"),
    "SessionInput": _message("willContinue recordingControl text dtmf audio variables", toolResponses="ToolResponses",
                             image="Image", blob="Blob", event="Event"),
    "ToolResponses": _message("", toolResponses="ToolResponse"),
    "ToolResponse": _message("id displayName response parentToolCallId agentName targetApp tool",
                             toolsetTool="ToolsetTool"),
    "ToolsetTool": _message("toolset toolId"),
    "Image": _message("mimeType data altText"),
    "Blob": _message("mimeType data"),
    "Event": _message("event variables"),
    "AgentTransfer": _message("targetAgent displayName"),
    "GoldenExpectation": _message(
        "note skipEvaluation comparisonType updatedVariables noToolCalls",
        expectationLevelMetricsThresholdsOverride="ExpectationLevelMetricsThresholds",
        agentResponseSemanticSimilarityMetricsConfigOverride="SemanticSimilarityMetricsConfig",
        agentResponseHallucinationMetricsConfigOverride="HallucinationMetricsConfig",
        toolCall="ToolCall", toolResponse="ToolResponse", agentResponse="Message", agentTransfer="AgentTransfer",
        mockToolResponse="ToolResponse"),
    "ToolCall": _message("id displayName args parentToolCallId agentName targetApp tool", toolsetTool="ToolsetTool"),
    "Message": _message("role eventTime", chunks="Chunk"),
    "Chunk": _message("text transcript payload updatedVariables defaultVariables", blob="Blob", image="Image",
                      toolCall="ToolCall", toolResponse="ToolResponse", agentTransfer="AgentTransfer"),
    "ExpectationLevelMetricsThresholds": _message("toolInvocationParameterCorrectnessThreshold"),
    "SemanticSimilarityMetricsConfig": _message("enableSemanticSimilarityMetrics"),
    "HallucinationMetricsConfig": _message("enableHallucinationMetrics"),
    "Span": _message("name startTime endTime duration attributes", childSpans="Span"),
    "TurnLevelMetricsThresholds": _message(
        "semanticSimilarityChannel semanticSimilaritySuccessThreshold overallToolInvocationCorrectnessThreshold"),
    "Scenario": _message(
        "task maxTurns rubrics variableOverrides taskCompletionBehavior userGoalBehavior evaluationExpectations "
        "scenarioExecutionMode", userFacts="UserFact", scenarioExpectations="ScenarioExpectation",
        milestones="Milestone"),
    "UserFact": _message("name value"),
    "ScenarioExpectation": _message("", toolExpectation="ToolExpectation", agentResponse="Message"),
    "ToolExpectation": _message("", expectedToolCall="ToolCall", mockToolResponse="ToolResponse"),
    "Milestone": _message("goal maxTurnCount successCriteria protocol staticUtterance", event="Event"),
    "AggregatedMetrics": _message("", metricsByAppVersion="MetricsByAppVersion"),
    "MetricsByAppVersion": _message(
        "appVersionId passCount failCount", toolMetrics="ToolMetrics",
        semanticSimilarityMetrics="SemanticSimilarityMetrics", hallucinationMetrics="HallucinationMetrics",
        toolCallLatencyMetrics="ToolCallLatencyMetrics", turnLatencyMetrics="TurnLatencyMetrics",
        metricsByTurn="MetricsByTurn"),
    "ToolMetrics": _message("tool passCount failCount"),
    "SemanticSimilarityMetrics": _message("score"),
    "HallucinationMetrics": _message("score"),
    "ToolCallLatencyMetrics": _message("tool averageLatency"),
    "TurnLatencyMetrics": _message("averageLatency"),
    "MetricsByTurn": _message(
        "turnIndex", toolMetrics="ToolMetrics", semanticSimilarityMetrics="SemanticSimilarityMetrics",
        hallucinationMetrics="HallucinationMetrics", toolCallLatencyMetrics="ToolCallLatencyMetrics",
        turnLatencyMetrics="TurnLatencyMetrics"),
    "EvaluationResult": _message(
        "name displayName createTime evaluationStatus evaluationRun initiatedBy appVersion appVersionDisplayName "
        "changelog changelogCreateTime executionState goldenRunMethod outcomeMetadata",
        persona="EvaluationPersona", errorInfo="EvaluationErrorInfo", error="Status",
        evaluationMetricsThresholds="EvaluationMetricsThresholds", config="EvaluationConfig", rootSpan="Span",
        goldenResult="GoldenResult", scenarioResult="ScenarioResult"),
    "GoldenResult": _message("", turnReplayResults="TurnReplayResult",
                             evaluationExpectationResults="EvaluationExpectationResult"),
    "TurnReplayResult": _message(
        "conversation toolInvocationScore turnLatency toolOrderedInvocationScore",
        expectationOutcome="GoldenExpectationOutcome", hallucinationResult="HallucinationResult",
        toolCallLatencies="ToolCallLatency", semanticSimilarityResult="SemanticSimilarityResult",
        overallToolInvocationResult="OverallToolInvocationResult", errorInfo="EvaluationErrorInfo",
        spanLatencies="SpanLatency"),
    "GoldenExpectationOutcome": _message(
        "outcome observedPayload", expectation="GoldenExpectation", semanticSimilarityResult="SemanticSimilarityResult",
        toolInvocationResult="ToolInvocationResult", observedToolCall="ToolCall", observedToolResponse="ToolResponse",
        observedAgentResponse="Message", observedAgentTransfer="AgentTransfer"),
    "SemanticSimilarityResult": _message("label explanation outcome score"),
    "ToolInvocationResult": _message("outcome explanation parameterCorrectnessScore"),
    "HallucinationResult": _message("label explanation score"),
    "ToolCallLatency": _message("tool displayName startTime endTime executionLatency"),
    "OverallToolInvocationResult": _message("outcome toolInvocationScore"),
    "EvaluationErrorInfo": _message("errorType errorMessage sessionId userFacingErrorMessage"),
    "SpanLatency": _message("type displayName startTime endTime executionLatency resource model callback",
                            toolset="ToolsetTool"),
    "EvaluationExpectationResult": _message("evaluationExpectation prompt outcome explanation"),
    "ScenarioResult": _message(
        "conversation task allExpectationsSatisfied taskCompleted", userFacts="UserFact",
        expectationOutcomes="ScenarioExpectationOutcome", rubricOutcomes="ScenarioRubricOutcome",
        hallucinationResult="HallucinationResult", taskCompletionResult="TaskCompletionResult",
        toolCallLatencies="ToolCallLatency", userGoalSatisfactionResult="UserGoalSatisfactionResult",
        spanLatencies="SpanLatency", evaluationExpectationResults="EvaluationExpectationResult",
        milestoneResults="MilestoneResult"),
    "ScenarioExpectationOutcome": _message("outcome", expectation="ScenarioExpectation",
                                           observedToolCall="ObservedToolCall", observedAgentResponse="Message"),
    "ObservedToolCall": _message("", toolCall="ToolCall", toolResponse="ToolResponse"),
    "ScenarioRubricOutcome": _message("rubric scoreExplanation score"),
    "TaskCompletionResult": _message("label explanation score"),
    "UserGoalSatisfactionResult": _message("label explanation score"),
    "MilestoneResult": _message("status justification", milestone="Milestone"),
    "EvaluationPersona": _message("name description displayName personality", speechConfig="SpeechConfig"),
    "SpeechConfig": _message("speakingRate environment voiceId"),
    "Status": _message("code message details"),
    "EvaluationMetricsThresholds": _message(
        "hallucinationMetricBehavior goldenHallucinationMetricBehavior scenarioHallucinationMetricBehavior",
        goldenEvaluationMetricsThresholds="GoldenEvaluationMetricsThresholds"),
    "GoldenEvaluationMetricsThresholds": _message(
        "", turnLevelMetricsThresholds="TurnLevelMetricsThresholds",
        expectationLevelMetricsThresholds="ExpectationLevelMetricsThresholds",
        toolMatchingSettings="ToolMatchingSettings"),
    "ToolMatchingSettings": _message("extraToolCallBehavior"),
    "EvaluationConfig": _message("evaluationChannel toolCallBehaviour", inputAudioConfig="InputAudioConfig",
                                 outputAudioConfig="OutputAudioConfig"),
    "InputAudioConfig": _message("audioEncoding sampleRateHertz noiseSuppressionLevel"),
    "OutputAudioConfig": _message("audioEncoding sampleRateHertz"),
    "EvaluationMetricsConfig": _message("", goldenMetricsConfig="GoldenMetricsConfig",
                                        scenarioMetricsConfig="ScenarioMetricsConfig"),
    "GoldenMetricsConfig": _message("", semanticSimilarityMetricsConfig="SemanticSimilarityMetricsConfig",
                                    toolCorrectnessMetricsConfig="ToolCorrectnessMetricsConfig",
                                    stepToolCorrectnessMetricsConfig="ToolCorrectnessMetricsConfig"),
    "ToolCorrectnessMetricsConfig": _message("enableToolCorrectnessMetrics"),
    "ScenarioMetricsConfig": _message("", userGoalMetMetricsConfig="UserGoalMetMetricsConfig",
                                      expectationsMetMetricsConfig="ExpectationsMetMetricsConfig"),
    "UserGoalMetMetricsConfig": _message("enableUserGoalMetMetrics"),
    "ExpectationsMetMetricsConfig": _message("enableExpectationsMetMetrics"),
}


def seed_problems(document: Any, message: str, path: str = "") -> list[str]:
    """Keys of ``document`` (recursively, through the sub-messages present) that the seed does not define."""
    problems: list[str] = []
    if not isinstance(document, dict):
        return [f"{path or message}: expected a {message} object, got {type(document).__name__}"]
    fields = SEED[message]
    for key, value in document.items():
        where = f"{path}.{key}" if path else key
        if key not in fields:
            problems.append(f"{where}: not a field of {message}")
            continue
        child = fields[key]
        if child is None:
            continue
        for index, item in enumerate(value if isinstance(value, list) else [value]):
            problems += seed_problems(item, child, f"{where}[{index}]" if isinstance(value, list) else where)
    return problems


def assert_seed_shaped(document: Json, message: str = "Evaluation") -> None:
    problems = seed_problems(document, message)
    assert not problems, "\n".join(problems[:20])


def test_the_allow_lists_are_closed() -> None:
    referenced = {child for fields in SEED.values() for child in fields.values() if child is not None}
    assert referenced <= set(SEED), referenced - set(SEED)


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture
def demo(services: Services) -> None:
    install_app(services)


def user(text: str) -> Json:
    return {"userInput": {"text": text}}


def expect(**condition: Any) -> Json:
    return {"expectation": condition}


def golden(display_name: str, *turns: list[Json], **extra: Any) -> Json:
    return {"displayName": display_name, "golden": {"turns": [{"steps": steps} for steps in turns]}, **extra}


def simple(display_name: str, **extra: Any) -> Json:
    """A valid golden evaluation of one turn: the order question and the lookup it should make."""
    return golden(display_name, [user(QUESTION), expect(toolCall={"tool": LOOKUP, "args": {"order_id": "AC-1001"}})],
                  **extra)


async def create(client: Client, evaluation_id: str | None, body: Json) -> Json:
    request: Json = {"parent": APP, "evaluation": body}
    if evaluation_id is not None:
        request["evaluationId"] = evaluation_id
    created = await call_json(client, "create_evaluation", request)
    assert_seed_shaped(created)
    return created


async def get(client: Client, name: str, **extra: Any) -> Json:
    fetched = await call_json(client, "get_evaluation", {"name": name, **extra})
    assert_seed_shaped(fetched)
    return fetched


async def stored(client: Client) -> list[Json]:
    """Every evaluation of the app, in list order."""
    return [e for page in await pages(client, {"parent": APP}, 100) for e in page.get("evaluations", [])]


async def pages(client: Client, arguments: Mapping[str, Any], page_size: int) -> list[Json]:
    found: list[Json] = []
    token: str | None = None
    while True:
        page = await call_json(client, "list_evaluations", {**arguments, "pageSize": page_size,
                                                            **({"pageToken": token} if token else {})})
        for evaluation in page.get("evaluations", []):
            assert_seed_shaped(evaluation)
        assert len(page.get("evaluations", [])) <= page_size
        found.append(page)
        token = page.get("nextPageToken")
        if not token:
            return found
        assert page.get("evaluations"), "a page with a nextPageToken must not be empty"
        assert len(found) < 50, "paging does not end"


async def listed_ids(client: Client, page_size: int = 100, **arguments: Any) -> list[str]:
    everything = [e["name"] for page in await pages(client, {"parent": APP, **arguments}, page_size)
                  for e in page.get("evaluations", [])]
    return [name.rsplit("/", 1)[1] for name in everything]


async def run_once(client: Client, *evaluations: str) -> str:
    """Run the evaluations once, wait for the run to finish, and return the run's name."""
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": list(evaluations)})
    done = await call_json(client, "wait_operation", {"name": operation["name"], "timeout": "30s"})
    assert done.get("done") is True, done
    assert "error" not in done, done
    run: str = done["response"]["evaluationRun"]
    return run


def definition(evaluation: Json) -> Json:
    return {key: value for key, value in evaluation.items() if key not in OUTPUT_ONLY}


async def make_expectation(client: Client, expectation_id: str = "polite", prompt: str = "Was the agent polite?") -> str:
    created = await call_json(client, "create_evaluation_expectation", {
        "parent": APP, "evaluationExpectationId": expectation_id,
        "evaluationExpectation": {"displayName": expectation_id.title(), "llmCriteria": {"prompt": prompt},
                                  "tags": ["tone"]}})
    name: str = created["name"]
    return name


# ---------------------------------------------------------------- create and get


async def test_create_then_get_round_trips(demo: None, client: Client) -> None:
    body = simple("Order status", description="Asks about AC-1001.", tags=["orders", "smoke"])
    created = await create(client, "order-status", body)
    fetched = await get(client, f"{EVALUATIONS}/order-status")

    assert fetched == created
    assert fetched["name"] == f"{EVALUATIONS}/order-status"
    assert fetched["displayName"] == "Order status"
    assert definition(fetched) == body, "the definition comes back field for field"
    assert RFC3339_Z.fullmatch(fetched["createTime"]) and RFC3339_Z.fullmatch(fetched["updateTime"])
    assert fetched["createTime"] == fetched["updateTime"]
    assert fetched["createdBy"] == fetched["lastUpdatedBy"] == "users/local"
    assert isinstance(fetched["etag"], str) and fetched["etag"]
    assert fetched["invalid"] is False
    for absent in ("evaluationRuns", "lastCompletedResult", "aggregatedMetrics", "lastTenResults",
                   "evaluationDatasets"):
        assert absent not in fetched, absent


async def test_output_only_fields_in_a_create_are_ignored(demo: None, client: Client) -> None:
    body = simple("Ignores output fields")
    hostile_output = {
        "name": f"{EVALUATIONS}/chosen-by-caller", "createTime": "2001-01-01T00:00:00Z",
        "updateTime": "2001-01-01T00:00:00Z", "createdBy": "users/mallory", "lastUpdatedBy": "users/mallory",
        "etag": "caller-etag", "invalid": True, "evaluationDatasets": [f"{APP}/evaluationDatasets/none"],
        "evaluationRuns": [f"{APP}/evaluationRuns/none"],
        "aggregatedMetrics": {"metricsByAppVersion": [{"passCount": 99, "failCount": 0}]},
        "lastCompletedResult": {"name": f"{EVALUATIONS}/x/results/y", "evaluationStatus": "PASS"},
        "lastTenResults": [{"name": f"{EVALUATIONS}/x/results/y"}],
    }
    created = await create(client, "ignored", {**body, **hostile_output})
    fetched = await get(client, created["name"], lastTenResults=True)

    assert fetched["name"] == f"{EVALUATIONS}/ignored"
    assert fetched["createdBy"] == fetched["lastUpdatedBy"] == "users/local"
    assert fetched["etag"] != "caller-etag" and fetched["invalid"] is False
    assert timestamp_nanos(fetched["createTime"]) > timestamp_nanos("2020-01-01T00:00:00Z")
    for absent in ("evaluationDatasets", "evaluationRuns", "aggregatedMetrics", "lastCompletedResult",
                   "lastTenResults"):
        assert absent not in fetched, absent
    assert definition(fetched) == body


async def test_an_evaluation_id_is_generated_when_not_given(demo: None, client: Client) -> None:
    first = await create(client, None, simple("Generated one"))
    second = await create(client, None, simple("Generated two"))
    ids = [first["name"].removeprefix(f"{EVALUATIONS}/"), second["name"].removeprefix(f"{EVALUATIONS}/")]
    assert all(GENERATED_ID.fullmatch(i) for i in ids), ids
    assert ids[0] != ids[1]
    assert (await get(client, first["name"]))["displayName"] == "Generated one"


def seed_golden(expectation: str) -> Json:
    """A golden evaluation using every part of the seed's Golden: several turns, every step kind, every
    expectation condition and option, and thresholds at each level."""
    order = {"orderId": "AC-1001", "status": "DELIVERED", "items": [{"name": "Pour-over set", "price": 34.0}],
             "total": 34.0, "gift": False, "note": None}
    return {
        "displayName": "Seed-shaped golden",
        "description": "Every field of a golden evaluation.",
        "tags": ["seed", "golden"],
        "evaluationMetricsThresholdOverride": {
            "goldenEvaluationMetricsThresholds": {
                "turnLevelMetricsThresholds": {"semanticSimilarityChannel": "TEXT",
                                               "semanticSimilaritySuccessThreshold": 2,
                                               "overallToolInvocationCorrectnessThreshold": 0.5},
                "expectationLevelMetricsThresholds": {"toolInvocationParameterCorrectnessThreshold": 0.8},
                "toolMatchingSettings": {"extraToolCallBehavior": "ALLOW"},
            },
            "hallucinationMetricBehavior": "DISABLED",
            "goldenHallucinationMetricBehavior": "ENABLED",
            "scenarioHallucinationMetricBehavior": "DISABLED",
        },
        "evaluationMetricsConfigOverride": {
            "goldenMetricsConfig": {
                "semanticSimilarityMetricsConfig": {"enableSemanticSimilarityMetrics": True},
                "toolCorrectnessMetricsConfig": {"enableToolCorrectnessMetrics": False},
                "stepToolCorrectnessMetricsConfig": {"enableToolCorrectnessMetrics": True},
            },
            "scenarioMetricsConfig": {
                "userGoalMetMetricsConfig": {"enableUserGoalMetMetrics": True},
                "expectationsMetMetricsConfig": {"enableExpectationsMetMetrics": False},
            },
        },
        "golden": {
            "evaluationExpectations": [expectation],
            "turns": [
                {
                    "steps": [
                        {"userInput": {"text": QUESTION, "willContinue": False,
                                       "recordingControl": "RECORDING_ENABLED"}},
                        {"agentTransfer": {"targetAgent": ORDERS}},
                        expect(agentTransfer={"targetAgent": ORDERS}, note="Handed_To_Orders"),
                        expect(toolCall={"tool": LOOKUP, "id": "call-1",
                                         "args": {"order_id": "AC-1001", "filters": {"tags": [], "deep": [1, "two", None, {}]}}},
                               note="Check_Lookup_Called", skipEvaluation=False,
                               expectationLevelMetricsThresholdsOverride={
                                   "toolInvocationParameterCorrectnessThreshold": 0.75}),
                        expect(mockToolResponse={"tool": LOOKUP, "id": "call-1", "response": {"output": order}}),
                        expect(toolResponse={"tool": LOOKUP, "response": {"output": order}}, comparisonType="EQUALS"),
                        expect(updatedVariables={"last_order": "AC-1001", "count": 2, "flags": {"vip": True}}),
                        expect(agentResponse={"role": "agent", "chunks": [{"text": "Order AC-1001 was delivered."},
                                                                          {"text": "Anything else?"}]},
                               comparisonType="CONTAINS",
                               agentResponseSemanticSimilarityMetricsConfigOverride={
                                   "enableSemanticSimilarityMetrics": False},
                               agentResponseHallucinationMetricsConfigOverride={"enableHallucinationMetrics": True}),
                    ],
                    "rootSpan": {
                        "name": "TURN", "startTime": "2025-03-01T08:00:00Z", "endTime": "2025-03-01T08:00:01.500Z",
                        "duration": "1.500s", "attributes": {"turnIndex": 1, "session": "s"},
                        "childSpans": [{"name": "TOOL", "startTime": "2025-03-01T08:00:00.250Z",
                                        "endTime": "2025-03-01T08:00:00.750Z", "attributes": {"tool": "lookup_order"}}],
                    },
                    "turnLevelMetricsThresholdsOverride": {"semanticSimilarityChannel": "TEXT",
                                                           "semanticSimilaritySuccessThreshold": 4,
                                                           "overallToolInvocationCorrectnessThreshold": 1.0},
                    "hallucinationMetricBehaviorOverride": "ENABLED",
                },
                {
                    "steps": [
                        {"userInput": {"event": {"event": "welcome", "variables": {"page": "checkout"}}}},
                        {"userInput": {"variables": {"customer_tier": "gold", "customer_id": "C-201"}}},
                        {"userInput": {"dtmf": "123#"}},
                        {"userInput": {"image": {"mimeType": "image/png", "data": "iVBORw0KGgo=",
                                                 "altText": "a receipt"}}},
                        {"userInput": {"blob": {"mimeType": "application/pdf", "data": "JVBERi0xLjQ="}}},
                        {"userInput": {"audio": "UklGRiQAAABXQVZF"}},
                        {"userInput": {"toolResponses": {"toolResponses": [
                            {"id": "confirm-1", "tool": CONFIRM, "response": {"output": {"verified": True}}}]}}},
                        expect(noToolCalls=True, skipEvaluation=True, note="Nothing_Called"),
                    ],
                    "hallucinationMetricBehaviorOverride": "DISABLED",
                },
                {
                    "steps": [
                        user("I'd like a refund for order AC-1010"),
                        {"agentTransfer": {"targetAgent": REFUNDS}},
                        expect(toolCall={"tool": CHECK_REFUND, "args": {"order_id": "AC-1010"}},
                               comparisonType="SEMANTIC_SIMILARITY"),
                        expect(agentResponse={"role": "agent", "chunks": [{"text": "Let me check that refund."}]}),
                    ],
                    "turnLevelMetricsThresholdsOverride": {"semanticSimilaritySuccessThreshold": 0},
                },
            ],
        },
    }


async def test_a_seed_shaped_golden_survives_create_and_get(demo: None, client: Client) -> None:
    expectation = await make_expectation(client)
    body = seed_golden(expectation)

    created = await create(client, "seed-golden", body)
    fetched = await get(client, created["name"])

    assert definition(created) == body
    assert definition(fetched) == body
    assert fetched["invalid"] is False
    listed = await stored(client)
    assert [definition(e) for e in listed] == [body]


def seed_scenario(expectation: str) -> Json:
    return {
        "displayName": "Seed-shaped scenario",
        "description": "A simulated customer chasing a late parcel.",
        "tags": ["scenario"],
        "evaluationMetricsThresholdOverride": {"scenarioHallucinationMetricBehavior": "ENABLED"},
        "evaluationMetricsConfigOverride": {"scenarioMetricsConfig": {
            "userGoalMetMetricsConfig": {"enableUserGoalMetMetrics": True}}},
        "scenario": {
            "task": "Find out where order AC-1001 is and when it arrives.",
            "userFacts": [{"name": "order", "value": "AC-1001"}, {"name": "name", "value": "Maya"}],
            "maxTurns": 12,
            "rubrics": ["The agent names the delivery date.", "The agent stays polite."],
            "scenarioExpectations": [
                {"toolExpectation": {
                    "expectedToolCall": {"tool": LOOKUP, "args": {"order_id": "AC-1001"}},
                    "mockToolResponse": {"tool": LOOKUP, "response": {"output": {"status": "SHIPPED"}}}}},
                {"agentResponse": {"role": "agent", "chunks": [{"text": "Your order is on its way."}]}},
            ],
            "variableOverrides": {"customer_tier": "gold", "channel": "app"},
            "taskCompletionBehavior": "TASK_SATISFIED",
            "userGoalBehavior": "USER_GOAL_REJECTED",
            "evaluationExpectations": [expectation],
            "milestones": [
                {"goal": "Ask about the order", "maxTurnCount": 3, "successCriteria": "The order number is given.",
                 "protocol": "Give the order number when asked.", "staticUtterance": "Where is AC-1001?"},
                {"goal": "Open the chat", "event": {"event": "welcome", "variables": {"page": "orders"}}},
            ],
            "scenarioExecutionMode": "SPEED_OPTIMIZED",
        },
    }


async def test_a_scenario_evaluation_is_stored_and_read_in_full(demo: None, client: Client) -> None:
    expectation = await make_expectation(client)
    body = seed_scenario(expectation)

    created = await create(client, "late-parcel", body)
    fetched = await get(client, created["name"])

    assert definition(created) == definition(fetched) == body
    assert "golden" not in fetched and fetched["invalid"] is False


# ---------------------------------------------------------------- the seed's shape, and what runs add


async def test_get_evaluation_has_only_seed_fields_and_run_decorations(demo: None, client: Client) -> None:
    expectation = await make_expectation(client)
    body = golden("Decorated", [
        user(QUESTION),
        expect(agentTransfer={"targetAgent": ORDERS}),
        expect(toolCall={"tool": LOOKUP, "args": {"order_id": "AC-1001"}}, note="Lookup"),
        expect(agentResponse={"role": "agent", "chunks": [{"text": "Order AC-1001 was delivered."}]}),
    ])
    body["golden"]["evaluationExpectations"] = [expectation]
    created = await create(client, "decorated", body)
    other = await create(client, "not-run", simple("Not run"))

    run = await run_once(client, created["name"])
    fetched = await get(client, created["name"])
    with_ten = await get(client, created["name"], lastTenResults=True)

    assert fetched["evaluationRuns"] == [run]
    result = fetched["lastCompletedResult"]
    assert result["name"].startswith(f"{created['name']}/results/")
    assert result["evaluationRun"] == run and result["executionState"] == "COMPLETED"
    assert result["evaluationStatus"] in ("PASS", "FAIL")
    by_version = fetched["aggregatedMetrics"]["metricsByAppVersion"]
    assert by_version[0]["passCount"] + by_version[0]["failCount"] == 1
    assert by_version[0]["passCount"] == (1 if result["evaluationStatus"] == "PASS" else 0)
    assert "lastTenResults" not in fetched, "lastTenResults only when asked for"
    assert [r["name"] for r in with_ten["lastTenResults"]] == [result["name"]]
    assert {k: v for k, v in with_ten.items() if k != "lastTenResults"} == fetched
    assert definition(fetched) == body, "a run does not change the definition"
    assert fetched["updateTime"] == created["updateTime"] and fetched["etag"] == created["etag"]
    # The results themselves (GoldenResult, TurnReplayResult, GoldenExpectationOutcome ...) are in the seed's shape.
    assert result["goldenResult"]["turnReplayResults"]
    assert_seed_shaped(result, "EvaluationResult")

    not_run = await get(client, other["name"], lastTenResults=True)
    for absent in ("evaluationRuns", "lastCompletedResult", "aggregatedMetrics", "lastTenResults"):
        assert absent not in not_run, absent

    listed = {e["name"]: e for page in await pages(client, {"parent": APP, "lastTenResults": True}, 10)
              for e in page["evaluations"]}
    assert listed[created["name"]] == with_ten
    plain = {e["name"]: e for page in await pages(client, {"parent": APP}, 10) for e in page["evaluations"]}
    assert plain[created["name"]] == fetched


def test_seed_problems_finds_fields_the_seed_does_not_define() -> None:
    document = {"name": "x", "golden": {"turns": [{"steps": [{"userInput": {"text": "hi", "colour": 1}}]}]},
                "lastCompletedResult": {"goldenResult": {"turnReplayResults": [{"extra": True}]}}}
    assert seed_problems(document, "Evaluation") == [
        "golden.turns[0].steps[0].userInput.colour: not a field of SessionInput",
        "lastCompletedResult.goldenResult.turnReplayResults[0].extra: not a field of TurnReplayResult",
    ]


# ---------------------------------------------------------------- display names, updates


async def test_display_name_is_required_and_unique_per_app(demo: None, client: Client) -> None:
    first = await create(client, "first", simple("Order status"))

    for body in ({k: v for k, v in simple("x").items() if k != "displayName"}, simple(""), simple("   ")):
        text = error_text(await client.call_tool("create_evaluation", {"parent": APP, "evaluation": body}),
                          "INVALID_ARGUMENT")
        assert "displayName" in text
    taken = error_text(await client.call_tool("create_evaluation", {
        "parent": APP, "evaluationId": "second", "evaluation": simple("Order status")}), "ALREADY_EXISTS")
    assert first["name"] in taken and "displayName" in taken
    assert [e["name"] for e in await stored(client)] == [first["name"]]

    second = await create(client, "second", simple("Another name"))
    renamed = error_text(await client.call_tool("update_evaluation", {
        "evaluation": {"name": second["name"], "displayName": "Order status"}, "updateMask": "displayName"}),
        "ALREADY_EXISTS")
    assert first["name"] in renamed
    assert (await get(client, second["name"]))["displayName"] == "Another name"
    same = await call_json(client, "update_evaluation", {
        "evaluation": {"name": first["name"], "displayName": "Order status", "description": "kept name"},
        "updateMask": "displayName,description"})
    assert same["displayName"] == "Order status", "an evaluation does not clash with itself"

    # Another app may use the same display name.
    await call_json(client, "create_app", {"parent": LOCATION, "appId": "other", "app": {"displayName": "Other"}})
    elsewhere = await call_json(client, "create_evaluation", {
        "parent": OTHER_APP, "evaluationId": "first", "evaluation": golden("Order status", [user("hi")])})
    assert elsewhere["name"] == f"{OTHER_APP}/evaluations/first"


async def test_an_existing_evaluation_id_is_already_exists(demo: None, client: Client) -> None:
    await create(client, "dup", simple("One"))
    text = error_text(await client.call_tool("create_evaluation", {
        "parent": APP, "evaluationId": "dup", "evaluation": simple("Two")}), "ALREADY_EXISTS")
    assert f"{EVALUATIONS}/dup" in text
    assert [e["displayName"] for e in await stored(client)] == ["One"]


async def test_update_with_a_mask_changes_only_the_masked_fields(demo: None, client: Client) -> None:
    body = simple("Masked", description="before", tags=["a"])
    created = await create(client, "masked", body)

    updated = await call_json(client, "update_evaluation", {
        "evaluation": {"name": created["name"], "description": "after", "displayName": "Ignored", "tags": ["z"],
                       "golden": {"turns": [{"steps": [user("ignored")]}]}},
        "updateMask": "description"})
    assert_seed_shaped(updated)

    assert updated["description"] == "after"
    assert definition(updated) == {**body, "description": "after"}
    assert updated["createTime"] == created["createTime"] and updated["createdBy"] == "users/local"
    assert updated["lastUpdatedBy"] == "users/local"
    assert timestamp_nanos(updated["updateTime"]) > timestamp_nanos(created["updateTime"])
    assert updated["etag"] != created["etag"]
    assert await get(client, created["name"]) == updated

    cleared = await call_json(client, "update_evaluation", {
        "evaluation": {"name": created["name"]}, "updateMask": "description,tags"})
    assert "description" not in cleared and "tags" not in cleared, "a masked field left out is cleared"


async def test_update_with_a_stale_etag_is_aborted(demo: None, client: Client) -> None:
    created = await create(client, "etagged", simple("Etagged", description="v1"))
    current = await call_json(client, "update_evaluation", {
        "evaluation": {"name": created["name"], "etag": created["etag"], "description": "v2"},
        "updateMask": "description"})

    text = error_text(await client.call_tool("update_evaluation", {
        "evaluation": {"name": created["name"], "etag": created["etag"], "description": "v3"},
        "updateMask": "description"}), "ABORTED")
    assert created["name"] in text
    assert await get(client, created["name"]) == current
    stale_delete = await client.call_tool("delete_evaluation", {"name": created["name"], "etag": created["etag"]})
    error_text(stale_delete, "ABORTED")
    assert (await get(client, created["name"]))["description"] == "v2"


@pytest.mark.parametrize("mask", ["colour", "createTime", "golden.turns", "invalid", "description,etag"])
async def test_an_unknown_or_output_only_mask_field_is_invalid(demo: None, client: Client, mask: str) -> None:
    created = await create(client, "masked", simple("Masked"))
    text = error_text(await client.call_tool("update_evaluation", {
        "evaluation": {"name": created["name"], "description": "x"}, "updateMask": mask}), "INVALID_ARGUMENT")
    assert "updateMask" in text
    assert await get(client, created["name"]) == created


async def test_switching_golden_to_scenario_and_back_clears_the_other(demo: None, client: Client) -> None:
    created = await create(client, "switch", simple("Switch"))
    scenario = {"task": "Ask where AC-1001 is.", "maxTurns": 5}

    switched = await call_json(client, "update_evaluation", {
        "evaluation": {"name": created["name"], "scenario": scenario}, "updateMask": "scenario"})
    assert switched["scenario"] == scenario and "golden" not in switched
    assert await get(client, created["name"]) == switched

    back = await call_json(client, "update_evaluation", {
        "evaluation": {"name": created["name"], "golden": created["golden"]}, "updateMask": "golden"})
    assert back["golden"] == created["golden"] and "scenario" not in back

    emptied = await client.call_tool("update_evaluation", {"evaluation": {"name": created["name"]},
                                                           "updateMask": "golden"})
    assert "golden or scenario" in error_text(emptied, "INVALID_ARGUMENT")


async def test_update_of_a_missing_evaluation_is_not_found(demo: None, client: Client) -> None:
    text = error_text(await client.call_tool("update_evaluation", {
        "evaluation": {"name": f"{EVALUATIONS}/ghost", "description": "x"}, "updateMask": "description"}),
        "NOT_FOUND")
    assert f"{EVALUATIONS}/ghost" in text
    error_text(await client.call_tool("get_evaluation", {"name": f"{EVALUATIONS}/ghost"}), "NOT_FOUND")
    error_text(await client.call_tool("delete_evaluation", {"name": f"{EVALUATIONS}/ghost"}), "NOT_FOUND")


# ---------------------------------------------------------------- invalid after what it names is deleted


async def _own_tool_and_agent(client: Client) -> tuple[str, str]:
    tool = await call_json(client, "create_tool", {"parent": APP, "toolId": "my_lookup", "tool": {
        "pythonFunction": {"entryPoint": "convener.demo.tools:lookup_order"}}})
    agent = await call_json(client, "create_agent", {"parent": APP, "agentId": "extra", "agent": {
        "displayName": "Extra", "playbookAgent": {"fallback": [{"reply": "Hello from extra."}]}}})
    return str(tool["name"]), str(agent["name"])


@pytest.mark.parametrize("deleted", ["tool", "agent", "evaluation_expectation"])
async def test_an_evaluation_is_invalid_once_what_it_names_is_deleted(demo: None, client: Client,
                                                                      deleted: str) -> None:
    tool, agent = await _own_tool_and_agent(client)
    expectation = await make_expectation(client, "mine")
    body = golden("Names own parts", [user(QUESTION), expect(toolCall={"tool": tool}),
                                      expect(agentTransfer={"targetAgent": agent})])
    body["golden"]["evaluationExpectations"] = [expectation]
    created = await create(client, "names-own", body)
    untouched = await create(client, "untouched", simple("Untouched"))
    assert created["invalid"] is False

    await call_json(client, f"delete_{deleted}", {"name": {"tool": tool, "agent": agent,
                                                           "evaluation_expectation": expectation}[deleted]})

    fetched = await get(client, created["name"])
    assert fetched["invalid"] is True
    assert definition(fetched) == body
    assert (await get(client, untouched["name"]))["invalid"] is False
    assert {e["name"]: e["invalid"] for e in await stored(client)} == {created["name"]: True,
                                                                        untouched["name"]: False}
    text = error_text(await client.call_tool("run_evaluation", {"app": APP, "evaluations": [created["name"]]}),
                      "FAILED_PRECONDITION")
    assert created["name"] in text
    assert not (await call_json(client, "list_evaluation_runs", {"parent": APP})).get("evaluationRuns")


async def test_deleting_a_demo_tool_makes_its_evaluations_invalid(demo: None, client: Client) -> None:
    created = await create(client, "lookup", simple("Uses lookup_order"))
    await call_json(client, "delete_tool", {"name": LOOKUP})
    assert (await get(client, created["name"]))["invalid"] is True
    error_text(await client.call_tool("run_evaluation", {"app": APP, "evaluations": [created["name"]]}),
               "FAILED_PRECONDITION")


# ---------------------------------------------------------------- hostile input


def _with_threshold(level: str, field: str, value: Any) -> Json:
    if level == "evaluation":
        return simple("x", evaluationMetricsThresholdOverride={"goldenEvaluationMetricsThresholds": {
            "turnLevelMetricsThresholds" if field.startswith(("semantic", "overall"))
            else "expectationLevelMetricsThresholds": {field: value}}})
    if level == "turn":
        body = simple("x")
        body["golden"]["turns"][0]["turnLevelMetricsThresholdsOverride"] = {field: value}
        return body
    return golden("x", [user("hi"), expect(toolCall={"tool": LOOKUP},
                                           expectationLevelMetricsThresholdsOverride={field: value})])


HOSTILE: list[Any] = [
    pytest.param({"displayName": "x"}, "golden or scenario", id="no-golden-or-scenario"),
    pytest.param({**simple("x"), "scenario": {"task": "t"}}, "golden, scenario", id="golden-and-scenario"),
    pytest.param({"displayName": "x", "golden": {"turns": []}}, "golden.turns", id="empty-turns"),
    pytest.param({"displayName": "x", "golden": {}}, "golden.turns", id="golden-without-turns"),
    pytest.param({"displayName": "x", "golden": {"turns": [{"steps": [user("hi")]}] * 101}}, "golden.turns",
                 id="101-turns"),
    pytest.param(golden("x", []), "golden.turns[0].steps", id="turn-without-steps"),
    pytest.param(golden("x", [expect(noToolCalls=True)]), "golden.turns[0].steps", id="turn-without-userInput"),
    pytest.param(golden("x", [user("hi"), {}]), "golden.turns[0].steps[1]", id="empty-step"),
    pytest.param(golden("x", [{"userInput": {}}]), "golden.turns[0].steps[0].userInput", id="empty-userInput"),
    pytest.param(golden("x", [{"userInput": {"text": "hi"}, "expectation": {"noToolCalls": True}}]),
                 "golden.turns[0].steps[0]", id="step-with-two-members"),
    pytest.param(golden("x", [{"userInput": {"text": "hi", "dtmf": "1"}}]), "golden.turns[0].steps[0].userInput",
                 id="userInput-with-two-inputs"),
    pytest.param(golden("x", [user("hi"), expect(note="no condition")]), "golden.turns[0].steps[1].expectation",
                 id="expectation-without-condition"),
    pytest.param(golden("x", [user("hi"), expect(noToolCalls=True, toolCall={"tool": LOOKUP})]),
                 "golden.turns[0].steps[1].expectation", id="expectation-with-two-conditions"),
    pytest.param(golden("x", [user("hi"), expect(noToolCalls=False)]), "noToolCalls", id="noToolCalls-false"),
    pytest.param(golden("x", [user("hi"), expect(toolCall={"tool": f"{OTHER_APP}/tools/lookup_order"})]),
                 "golden.turns[0].steps[1].expectation.toolCall.tool", id="tool-of-another-app"),
    pytest.param(golden("x", [user("hi"), expect(toolCall={"tool": f"{APP}/tools/ghost"})]),
                 "golden.turns[0].steps[1].expectation.toolCall.tool", id="unknown-tool"),
    pytest.param(golden("x", [user("hi"), expect(toolCall={"tool": "lookup_order"})]),
                 "golden.turns[0].steps[1].expectation.toolCall.tool", id="malformed-tool-name"),
    pytest.param(golden("x", [user("hi"), expect(toolCall={"args": {"order_id": "AC-1001"}})]),
                 "golden.turns[0].steps[1].expectation.toolCall", id="toolCall-without-tool"),
    pytest.param(golden("x", [user("hi"), expect(mockToolResponse={"tool": f"{APP}/tools/ghost", "response": {}})]),
                 "golden.turns[0].steps[1].expectation.mockToolResponse.tool", id="mock-of-unknown-tool"),
    pytest.param(golden("x", [user("hi"), expect(toolResponse={
        "toolsetTool": {"toolset": f"{APP}/toolsets/ghost", "toolId": "t"}, "response": {}})]),
        "golden.turns[0].steps[1].expectation.toolResponse.toolsetTool.toolset", id="unknown-toolset"),
    pytest.param(golden("x", [user("hi"), expect(agentTransfer={"targetAgent": f"{APP}/agents/ghost"})]),
                 "golden.turns[0].steps[1].expectation.agentTransfer.targetAgent", id="transfer-to-unknown-agent"),
    pytest.param(golden("x", [user("hi"), {"agentTransfer": {"targetAgent": f"{APP}/agents/ghost"}}]),
                 "golden.turns[0].steps[1].agentTransfer.targetAgent", id="transfer-step-to-unknown-agent"),
    pytest.param(golden("x", [user("hi"), {"agentTransfer": {"targetAgent": f"{OTHER_APP}/agents/orders"}}]),
                 "golden.turns[0].steps[1].agentTransfer.targetAgent", id="transfer-to-agent-of-another-app"),
    pytest.param(golden("x", [user("hi"), expect(agentResponse={"role": "agent", "chunks": []})]),
                 "golden.turns[0].steps[1].expectation.agentResponse", id="agentResponse-without-chunks"),
    pytest.param(golden("x", [user("hi"), expect(agentResponse={"role": "agent", "chunks": [
        {"payload": {"a": 1}}]})]), "golden.turns[0].steps[1].expectation.agentResponse",
        id="agentResponse-without-text"),
    pytest.param(_with_threshold("evaluation", "semanticSimilaritySuccessThreshold", 5),
                 "semanticSimilaritySuccessThreshold", id="semantic-threshold-5"),
    pytest.param(_with_threshold("turn", "semanticSimilaritySuccessThreshold", -1),
                 "semanticSimilaritySuccessThreshold", id="semantic-threshold-negative"),
    pytest.param(_with_threshold("turn", "semanticSimilaritySuccessThreshold", 2.5),
                 "semanticSimilaritySuccessThreshold", id="semantic-threshold-fraction"),
    pytest.param(_with_threshold("expectation", "toolInvocationParameterCorrectnessThreshold", 1.5),
                 "toolInvocationParameterCorrectnessThreshold", id="parameter-threshold-1.5"),
    pytest.param(_with_threshold("evaluation", "toolInvocationParameterCorrectnessThreshold", -0.1),
                 "toolInvocationParameterCorrectnessThreshold", id="parameter-threshold-negative"),
    pytest.param(_with_threshold("turn", "overallToolInvocationCorrectnessThreshold", -0.5),
                 "overallToolInvocationCorrectnessThreshold", id="overall-threshold-negative"),
    pytest.param(_with_threshold("evaluation", "overallToolInvocationCorrectnessThreshold", 2),
                 "overallToolInvocationCorrectnessThreshold", id="overall-threshold-2"),
    pytest.param(_with_threshold("expectation", "toolInvocationParameterCorrectnessThreshold", "NaN"),
                 "toolInvocationParameterCorrectnessThreshold", id="parameter-threshold-NaN"),
    pytest.param(_with_threshold("turn", "overallToolInvocationCorrectnessThreshold", "Infinity"),
                 "overallToolInvocationCorrectnessThreshold", id="overall-threshold-Infinity"),
    pytest.param({"displayName": "x", "scenario": {"task": "t", "maxTurns": 101}}, "scenario.maxTurns",
                 id="maxTurns-101"),
    pytest.param({"displayName": "x", "scenario": {"task": "t", "maxTurns": -1}}, "scenario.maxTurns",
                 id="maxTurns-negative"),
    pytest.param({"displayName": "x", "scenario": {"maxTurns": 3}}, "scenario.task", id="scenario-without-task"),
    pytest.param({"displayName": "x", "scenario": {"task": "  "}}, "scenario.task", id="scenario-blank-task"),
    pytest.param({"displayName": "x", "scenario": {"task": "t", "scenarioExpectations": [{}]}},
                 "scenario.scenarioExpectations[0]", id="empty-scenario-expectation"),
    pytest.param({"displayName": "x", "scenario": {"task": "t", "scenarioExpectations": [
        {"toolExpectation": {"expectedToolCall": {"tool": f"{APP}/tools/ghost"}, "mockToolResponse": {
            "tool": f"{APP}/tools/ghost", "response": {}}}}]}}, "scenario.scenarioExpectations[0].toolExpectation",
        id="scenario-unknown-tool"),
    pytest.param({"displayName": "x", "scenario": {"task": "t", "milestones": [{"maxTurnCount": 1}]}},
                 "scenario.milestones[0].goal", id="milestone-without-goal"),
    pytest.param({"displayName": "x", "scenario": {"task": "t", "userFacts": [{"name": "a"}]}},
                 "scenario.userFacts[0]", id="user-fact-without-value"),
    pytest.param(golden("a\x00b", [user("hi")]), "displayName", id="NUL-in-displayName"),
    pytest.param(golden("x", [user("a\x00b")]), "golden.turns[0].steps[0].userInput.text", id="NUL-in-text"),
    pytest.param(golden("x", [user("hi"), expect(toolCall={"tool": LOOKUP, "args": {"k\x00": 1}})]), "NUL",
                 id="NUL-in-args-key"),
    pytest.param(simple("x", description="d" * 2_000_000), "evaluation", id="2MB-description"),
    pytest.param(simple("x", colour="red"), "evaluation.colour", id="unknown-field"),
    pytest.param(golden("x", [{"userInput": {"text": "hi", "mood": "grumpy"}}]), "userInput.mood",
                 id="unknown-nested-field"),
    pytest.param(simple("x", tags="orders"), "evaluation.tags", id="tags-not-a-list"),
    pytest.param({"displayName": 42, "golden": {"turns": [{"steps": [user("hi")]}]}}, "evaluation.displayName",
                 id="displayName-a-number"),
    pytest.param({"displayName": "x", "golden": {"turns": [{"steps": "hi"}]}}, "golden.turns[0].steps",
                 id="steps-a-string"),
    pytest.param({"displayName": "x", "golden": {"turns": [{"steps": [user("hi")],
                                                             "hallucinationMetricBehaviorOverride": "SOMETIMES"}]}},
                 "hallucinationMetricBehaviorOverride", id="unknown-enum"),
    pytest.param({"displayName": "x", "golden": {"turns": [{"steps": [user("hi")]}],
                                                 "evaluationExpectations": [f"{APP}/evaluationExpectations/ghost"]}},
                 "golden.evaluationExpectations[0]", id="missing-evaluation-expectation"),
    pytest.param({"displayName": "x", "golden": {"turns": [{"steps": [user("hi")]}],
                                                 "evaluationExpectations": ["ghost"]}},
                 "golden.evaluationExpectations[0]", id="malformed-evaluation-expectation"),
    pytest.param({"displayName": "x", "scenario": {"task": "t", "evaluationExpectations": [
        f"{APP}/evaluationExpectations/ghost"]}}, "scenario.evaluationExpectations[0]",
        id="scenario-missing-evaluation-expectation"),
    pytest.param(simple("x", tags=[""]), "evaluation.tags[0]", id="empty-tag"),
]


@pytest.mark.parametrize(("body", "named"), HOSTILE)
async def test_hostile_evaluations_are_rejected_naming_the_field(demo: None, client: Client, body: Json,
                                                                 named: str) -> None:
    before = await stored(client)

    text = error_text(await client.call_tool("create_evaluation", {"parent": APP, "evaluationId": "hostile",
                                                                   "evaluation": body}), "INVALID_ARGUMENT")

    assert named in text, text[:500]
    assert len(text) < 2_000, "an error should not echo large input back"
    assert await stored(client) == before
    error_text(await client.call_tool("get_evaluation", {"name": f"{EVALUATIONS}/hostile"}), "NOT_FOUND")


@pytest.mark.parametrize(("body", "named"), [p for p in HOSTILE if p.id in {
    "empty-turns", "101-turns", "turn-without-userInput", "expectation-without-condition", "unknown-tool",
    "transfer-to-unknown-agent", "semantic-threshold-5", "parameter-threshold-1.5", "maxTurns-101",
    "missing-evaluation-expectation", "NUL-in-text", "2MB-description", "unknown-field"}])
async def test_hostile_updates_change_nothing(demo: None, client: Client, body: Json, named: str) -> None:
    created = await create(client, "target", simple("Target"))

    text = error_text(await client.call_tool("update_evaluation", {
        "evaluation": {**body, "name": created["name"], "displayName": "Target"}}), "INVALID_ARGUMENT")

    assert named in text, text[:500]
    assert await get(client, created["name"]) == created


@pytest.mark.parametrize(("evaluation_id", "code"), [
    ("bad id", "INVALID_ARGUMENT"), ("-leading-dash", "INVALID_ARGUMENT"), ("a/b", "INVALID_ARGUMENT"),
    ("x" * 129, "INVALID_ARGUMENT"), ("é", "INVALID_ARGUMENT"), ("a\x00", "INVALID_ARGUMENT"),
])
async def test_bad_evaluation_ids_are_rejected(demo: None, client: Client, evaluation_id: str, code: str) -> None:
    text = error_text(await client.call_tool("create_evaluation", {
        "parent": APP, "evaluationId": evaluation_id, "evaluation": simple("x")}), code)
    assert "evaluationId" in text or "NUL" in text
    assert await stored(client) == []


@pytest.mark.parametrize(("arguments", "code", "named"), [
    ({"parent": "projects/demo/locations/global/apps/ghost", "evaluation": simple("x")}, "NOT_FOUND", "ghost"),
    ({"parent": "nonsense", "evaluation": simple("x")}, "INVALID_ARGUMENT", "parent"),
    ({"parent": APP}, "INVALID_ARGUMENT", "evaluation"),
    ({"parent": APP, "evaluation": "x"}, "INVALID_ARGUMENT", "evaluation"),
    ({"parent": APP, "evaluation": simple("x"), "extra": 1}, "INVALID_ARGUMENT", "extra"),
])
async def test_hostile_create_requests(demo: None, client: Client, arguments: Json, code: str, named: str) -> None:
    text = error_text(await client.call_tool("create_evaluation", arguments), code)
    assert named in text
    assert await stored(client) == []


async def test_non_finite_numbers_sent_raw_over_http_are_rejected(demo: None, client: Client, http_server: str,
                                                                  api_key: str) -> None:
    # The MCP client turns NaN into null before sending; a raw JSON-RPC body carries it as is.
    created = await create(client, "target", simple("Target"))
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "authorization": f"Bearer {api_key}"}

    def post(tool: str, arguments: Json) -> Json:
        body = json.dumps({"method": "tools/call", "params": {"name": tool, "arguments": arguments},
                           "jsonrpc": "2.0", "id": 1})
        response = httpx.post(f"{http_server}/mcp", content=body, headers=headers, timeout=60)
        assert response.status_code == 200, response.text[:500]
        result: Json = response.json()["result"]
        return result

    for number in (float("nan"), float("inf"), float("-inf")):
        body = golden("x", [user("hi"), expect(toolCall={"tool": LOOKUP, "args": {"order_id": number}})])
        result = post("create_evaluation", {"parent": APP, "evaluation": body})
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert text.startswith("INVALID_ARGUMENT: ") and "finite" in text, text
        assert "args.order_id" in text, text
    assert [e["name"] for e in await stored(client)] == [created["name"]]

    # An update by another user keeps createdBy and records lastUpdatedBy.
    result = post("update_evaluation", {"evaluation": {"name": created["name"], "description": "by alice"},
                                        "updateMask": "description"})
    assert not result.get("isError"), result
    fetched = await get(client, created["name"])
    assert fetched["createdBy"] == "users/local" and fetched["lastUpdatedBy"] == "users/alice"
    assert fetched["description"] == "by alice"


# ---------------------------------------------------------------- list_evaluations


async def _five(client: Client) -> list[str]:
    """e0..e4 created in that order, with display names in the reverse order of their IDs."""
    for index in range(5):
        await create(client, f"e{index}", simple(f"Evaluation {4 - index}"))
    return [f"e{index}" for index in range(5)]


async def test_list_orders_by_update_time_then_name_then_create_time(demo: None, client: Client) -> None:
    ids = await _five(client)
    newest_first = list(reversed(ids))
    assert await listed_ids(client) == newest_first

    await call_json(client, "update_evaluation", {"evaluation": {"name": f"{EVALUATIONS}/e1", "description": "x"},
                                                  "updateMask": "description"})
    assert await listed_ids(client) == ["e1", "e4", "e3", "e2", "e0"], "an update moves it first"
    assert await listed_ids(client, orderBy="update_time desc") == ["e1", "e4", "e3", "e2", "e0"]
    assert await listed_ids(client, orderBy="update_time asc") == ["e0", "e2", "e3", "e4", "e1"]
    assert await listed_ids(client, orderBy="name") == ids
    assert await listed_ids(client, orderBy="create_time") == newest_first
    assert await listed_ids(client, orderBy="create_time asc") == ids


@pytest.mark.parametrize("order_by", [None, "update_time", "update_time asc", "name", "name asc", "create_time",
                                      "create_time asc"])
async def test_pages_of_two_cover_five_evaluations_once(demo: None, client: Client, order_by: str | None) -> None:
    await _five(client)
    arguments: Json = {"orderBy": order_by} if order_by else {}
    whole = await listed_ids(client, **arguments)

    paged = await pages(client, {"parent": APP, **arguments}, 2)

    assert [len(page.get("evaluations", [])) for page in paged] == [2, 2, 1]
    assert "nextPageToken" not in paged[-1]
    assert [e["name"].rsplit("/", 1)[1] for page in paged for e in page["evaluations"]] == whole
    assert sorted(whole) == ["e0", "e1", "e2", "e3", "e4"]


async def test_pages_by_name_descending_cover_five_evaluations_once(demo: None, client: Client) -> None:
    await _five(client)
    whole = await listed_ids(client, orderBy="name desc")
    assert whole == ["e4", "e3", "e2", "e1", "e0"]

    paged = await listed_ids(client, page_size=2, orderBy="name desc")

    assert paged == whole


async def test_a_page_is_the_same_after_an_update_elsewhere(demo: None, client: Client) -> None:
    await _five(client)
    first = await call_json(client, "list_evaluations", {"parent": APP, "pageSize": 2, "orderBy": "name"})
    await call_json(client, "update_evaluation", {"evaluation": {"name": f"{EVALUATIONS}/e0", "description": "x"},
                                                  "updateMask": "description"})
    second = await call_json(client, "list_evaluations", {"parent": APP, "pageSize": 2, "orderBy": "name",
                                                          "pageToken": first["nextPageToken"]})
    assert [e["name"].rsplit("/", 1)[1] for e in second["evaluations"]] == ["e2", "e3"]


async def test_evaluation_filter_lists_a_datasets_members(demo: None, client: Client) -> None:
    await _five(client)
    dataset = await call_json(client, "create_evaluation_dataset", {
        "parent": APP, "evaluationDatasetId": "smoke", "evaluationDataset": {
            "displayName": "Smoke", "evaluations": [f"{EVALUATIONS}/e3", f"{EVALUATIONS}/e1"]}})
    await call_json(client, "create_evaluation_dataset", {
        "parent": APP, "evaluationDatasetId": "other", "evaluationDataset": {
            "displayName": "Other", "evaluations": [f"{EVALUATIONS}/e0"]}})

    members = await listed_ids(client, evaluationFilter=f'evaluation_datasets:"{dataset["name"]}"')
    assert members == ["e3", "e1"]
    assert await listed_ids(client, evaluationFilter=f'evaluation_datasets:"{dataset["name"]}"', orderBy="name",
                            page_size=1) == ["e1", "e3"]
    assert await listed_ids(client, evaluationFilter=f'evaluation_datasets:"{APP}/evaluationDatasets/ghost"') == []
    both = await listed_ids(client, evaluationFilter=(
        f'evaluation_datasets:"{dataset["name"]}" OR evaluation_datasets:"{APP}/evaluationDatasets/other"'))
    assert both == ["e3", "e1", "e0"]


async def test_evaluation_filter_naming_another_apps_dataset_matches_nothing(demo: None, client: Client) -> None:
    await _five(client)
    await call_json(client, "create_evaluation_dataset", {
        "parent": APP, "evaluationDatasetId": "smoke", "evaluationDataset": {
            "displayName": "Smoke", "evaluations": [f"{EVALUATIONS}/e3"]}})

    foreign = await client.call_tool("list_evaluations", {
        "parent": APP, "evaluationFilter": f'evaluation_datasets:"{OTHER_APP}/evaluationDatasets/smoke"'})

    assert OTHER_APP in error_text(foreign, "INVALID_ARGUMENT")


@pytest.mark.parametrize(("arguments", "named"), [
    ({"orderBy": "colour"}, "orderBy"),
    ({"orderBy": "name sideways"}, "orderBy"),
    ({"orderBy": "name, create_time desc"}, "orderBy"),
    ({"orderBy": "display_name"}, "orderBy"),
    ({"evaluationFilter": "colour = 1"}, "evaluationFilter"),
    ({"evaluationFilter": 'evaluation_datasets:"a" AND evaluation_datasets:"b"'}, "evaluationFilter"),
    ({"evaluationFilter": 'evaluation_datasets:"not a / name"'}, "evaluationFilter"),
    ({"evaluationRunFilter": "colour = 1"}, "colour"),
    ({"evaluationRunFilter": 'initiated_by = '}, "filter"),
    ({"pageSize": -1}, "pageSize"),
    ({"pageToken": "not-a-token"}, "pageToken"),
    ({"parent": "nonsense"}, "parent"),
])
async def test_bad_list_requests_are_invalid(demo: None, client: Client, arguments: Json, named: str) -> None:
    text = error_text(await client.call_tool("list_evaluations", {"parent": APP, **arguments}), "INVALID_ARGUMENT")
    assert named in text


async def test_page_tokens_are_bound_to_their_query(demo: None, client: Client) -> None:
    await _five(client)
    token = (await call_json(client, "list_evaluations", {"parent": APP, "pageSize": 2}))["nextPageToken"]
    for dataset_id in ("d", "e"):
        await call_json(client, "create_evaluation_dataset", {
            "parent": APP, "evaluationDatasetId": dataset_id, "evaluationDataset": {
                "displayName": dataset_id.upper(), "evaluations": [f"{EVALUATIONS}/e0", f"{EVALUATIONS}/e1"]}})
    datasets_token = (await call_json(client, "list_evaluation_datasets", {"parent": APP, "pageSize": 1}))[
        "nextPageToken"]

    for arguments in ({"orderBy": "name"}, {"orderBy": "create_time"},
                      {"evaluationFilter": f'evaluation_datasets:"{APP}/evaluationDatasets/d"'},
                      {"evaluationRunFilter": 'initiated_by = "users/local"'}, {"pageToken": datasets_token}):
        text = error_text(await client.call_tool("list_evaluations", {"parent": APP, "pageSize": 2,
                                                                      "pageToken": token, **arguments}),
                          "INVALID_ARGUMENT")
        assert "pageToken" in text
    text = error_text(await client.call_tool("list_evaluation_datasets", {"parent": APP, "pageToken": token}),
                      "INVALID_ARGUMENT")
    assert "pageToken" in text
    # The same query with its token goes on.
    page = await call_json(client, "list_evaluations", {"parent": APP, "pageSize": 2, "pageToken": token})
    assert [e["name"].rsplit("/", 1)[1] for e in page["evaluations"]] == ["e2", "e1"]


async def test_evaluation_run_filter_lists_the_runs_evaluations(demo: None, client: Client) -> None:
    await _five(client)
    assert await listed_ids(client, evaluationRunFilter='initiated_by = "users/local"') == []

    await run_once(client, f"{EVALUATIONS}/e1", f"{EVALUATIONS}/e3")

    assert await listed_ids(client, evaluationRunFilter='initiated_by = "users/local"') == ["e3", "e1"]
    assert await listed_ids(client, evaluationRunFilter='initiatedBy = "users/local"', orderBy="name") == ["e1", "e3"]
    assert await listed_ids(client, evaluationRunFilter='initiated_by = "users/bob"') == []
    assert await listed_ids(client, evaluationRunFilter='create_time > "2000-01-01T00:00:00Z"',
                            page_size=1) == ["e3", "e1"]
    assert await listed_ids(client) == ["e4", "e3", "e2", "e1", "e0"], "a run does not change update times"


# ---------------------------------------------------------------- datasets


async def test_datasets_list_their_evaluations_and_protect_them(demo: None, client: Client) -> None:
    first = await create(client, "first", simple("First"))
    second = await create(client, "second", simple("Second"))

    unknown = error_text(await client.call_tool("create_evaluation_dataset", {
        "parent": APP, "evaluationDatasetId": "broken", "evaluationDataset": {
            "displayName": "Broken", "evaluations": [first["name"], f"{EVALUATIONS}/ghost"]}}), "INVALID_ARGUMENT")
    assert "evaluationDataset.evaluations[1]" in unknown and f"{EVALUATIONS}/ghost" in unknown
    foreign = error_text(await client.call_tool("create_evaluation_dataset", {
        "parent": APP, "evaluationDatasetId": "broken", "evaluationDataset": {
            "displayName": "Broken", "evaluations": [f"{OTHER_APP}/evaluations/first"]}}), "INVALID_ARGUMENT")
    assert "evaluationDataset.evaluations[0]" in foreign
    assert not (await call_json(client, "list_evaluation_datasets", {"parent": APP})).get("evaluationDatasets")

    dataset = await call_json(client, "create_evaluation_dataset", {
        "parent": APP, "evaluationDatasetId": "smoke", "evaluationDataset": {
            "displayName": "Smoke", "evaluations": [first["name"], second["name"], first["name"]]}})
    assert dataset["evaluations"] == [first["name"], second["name"]], "duplicates are collapsed"
    assert dataset["createdBy"] == dataset["lastUpdatedBy"] == "users/local"
    assert await call_json(client, "get_evaluation_dataset", {"name": dataset["name"]}) == dataset
    taken = error_text(await client.call_tool("create_evaluation_dataset", {
        "parent": APP, "evaluationDatasetId": "smoke2", "evaluationDataset": {"displayName": "Smoke"}}),
        "ALREADY_EXISTS")
    assert dataset["name"] in taken
    other = await call_json(client, "create_evaluation_dataset", {
        "parent": APP, "evaluationDatasetId": "regression", "evaluationDataset": {
            "displayName": "Regression", "evaluations": [first["name"]]}})

    assert (await get(client, first["name"]))["evaluationDatasets"] == [other["name"], dataset["name"]]
    assert (await get(client, second["name"]))["evaluationDatasets"] == [dataset["name"]]

    refused = error_text(await client.call_tool("delete_evaluation", {"name": first["name"]}), "FAILED_PRECONDITION")
    assert "force" in refused
    assert (await get(client, first["name"]))["evaluationDatasets"] == [other["name"], dataset["name"]]

    await call_json(client, "delete_evaluation", {"name": first["name"], "force": True})

    error_text(await client.call_tool("get_evaluation", {"name": first["name"]}), "NOT_FOUND")
    kept = await call_json(client, "get_evaluation_dataset", {"name": dataset["name"]})
    assert kept["evaluations"] == [second["name"]]
    assert "evaluations" not in await call_json(client, "get_evaluation_dataset", {"name": other["name"]})
    assert (await get(client, second["name"]))["evaluationDatasets"] == [dataset["name"]]

    # An evaluation in no dataset needs no force.
    await call_json(client, "update_evaluation_dataset", {"evaluationDataset": {"name": dataset["name"]},
                                                          "updateMask": "evaluations"})
    assert "evaluationDatasets" not in await get(client, second["name"])
    await call_json(client, "delete_evaluation", {"name": second["name"]})
    assert await stored(client) == []


async def test_a_refused_forced_delete_changes_nothing(demo: None, client: Client) -> None:
    created = await create(client, "kept", simple("Kept"))
    dataset = await call_json(client, "create_evaluation_dataset", {
        "parent": APP, "evaluationDatasetId": "smoke", "evaluationDataset": {
            "displayName": "Smoke", "evaluations": [created["name"]]}})
    await run_once(client, created["name"])
    results = await call_json(client, "list_evaluation_results", {"parent": created["name"]})
    assert len(results["evaluationResults"]) == 1

    error_text(await client.call_tool("delete_evaluation", {"name": created["name"], "force": True,
                                                            "etag": "stale"}), "ABORTED")

    assert (await get(client, created["name"]))["evaluationDatasets"] == [dataset["name"]]
    assert await call_json(client, "get_evaluation_dataset", {"name": dataset["name"]}) == dataset
    assert await call_json(client, "list_evaluation_results", {"parent": created["name"]}) == results


async def test_delete_with_the_current_etag_deletes_the_evaluation_and_its_results(demo: None,
                                                                                  client: Client) -> None:
    created = await create(client, "gone", simple("Gone"))
    run = await run_once(client, created["name"])
    result = (await get(client, created["name"]))["lastCompletedResult"]["name"]

    await call_json(client, "delete_evaluation", {"name": created["name"], "etag": created["etag"]})

    error_text(await client.call_tool("get_evaluation", {"name": created["name"]}), "NOT_FOUND")
    error_text(await client.call_tool("get_evaluation_result", {"name": result}), "NOT_FOUND")
    assert await listed_ids(client, evaluationRunFilter='initiated_by = "users/local"') == []
    assert (await call_json(client, "get_evaluation_run", {"name": run}))["name"] == run
    # The ID and display name are free again.
    again = await create(client, "gone", simple("Gone"))
    assert "evaluationRuns" not in again and "lastCompletedResult" not in again


# ---------------------------------------------------------------- expectations and personas


async def test_evaluation_expectation_crud(demo: None, client: Client) -> None:
    for body, named in (({"displayName": "No criteria"}, "llmCriteria.prompt"),
                        ({"displayName": "Empty", "llmCriteria": {}}, "llmCriteria.prompt"),
                        ({"displayName": "Blank", "llmCriteria": {"prompt": "  "}}, "llmCriteria.prompt"),
                        ({"displayName": "Long", "llmCriteria": {"prompt": "p" * 20_001}}, "llmCriteria.prompt"),
                        ({"llmCriteria": {"prompt": "p"}}, "displayName"),
                        ({"displayName": "Tagged", "llmCriteria": {"prompt": "p"}, "tags": [""]}, "tags[0]"),
                        ({"displayName": "x", "llmCriteria": {"prompt": "p", "model": "m"}}, "model")):
        text = error_text(await client.call_tool("create_evaluation_expectation", {
            "parent": APP, "evaluationExpectation": body}), "INVALID_ARGUMENT")
        assert named in text, text
    assert not (await call_json(client, "list_evaluation_expectations", {"parent": APP})).get(
        "evaluationExpectations")

    created = await call_json(client, "create_evaluation_expectation", {
        "parent": APP, "evaluationExpectationId": "polite", "evaluationExpectation": {
            "displayName": "Polite", "llmCriteria": {"prompt": "Was the agent polite?"}, "tags": ["tone"],
            "createTime": "2001-01-01T00:00:00Z", "etag": "mine"}})
    assert created["name"] == f"{APP}/evaluationExpectations/polite"
    assert created["llmCriteria"] == {"prompt": "Was the agent polite?"} and created["tags"] == ["tone"]
    assert RFC3339_Z.fullmatch(created["createTime"]) and created["createTime"] != "2001-01-01T00:00:00Z"
    assert created["etag"] != "mine"
    assert set(created) <= {"name", "displayName", "llmCriteria", "tags", "createTime", "updateTime", "etag"}
    assert await call_json(client, "get_evaluation_expectation", {"name": created["name"]}) == created
    taken = error_text(await client.call_tool("create_evaluation_expectation", {
        "parent": APP, "evaluationExpectation": {"displayName": "Polite", "llmCriteria": {"prompt": "p"}}}),
        "ALREADY_EXISTS")
    assert created["name"] in taken

    updated = await call_json(client, "update_evaluation_expectation", {
        "evaluationExpectation": {"name": created["name"], "llmCriteria": {"prompt": "Was the agent kind?"},
                                  "displayName": "ignored"}, "updateMask": "llmCriteria"})
    assert updated["llmCriteria"] == {"prompt": "Was the agent kind?"} and updated["displayName"] == "Polite"
    error_text(await client.call_tool("update_evaluation_expectation", {
        "evaluationExpectation": {"name": created["name"], "llmCriteria": {}}, "updateMask": "llmCriteria"}),
        "INVALID_ARGUMENT")
    error_text(await client.call_tool("update_evaluation_expectation", {
        "evaluationExpectation": {"name": created["name"], "etag": created["etag"], "tags": []},
        "updateMask": "tags"}), "ABORTED")
    listed = await call_json(client, "list_evaluation_expectations", {"parent": APP})
    assert listed["evaluationExpectations"] == [updated]

    await call_json(client, "delete_evaluation_expectation", {"name": created["name"]})
    error_text(await client.call_tool("get_evaluation_expectation", {"name": created["name"]}), "NOT_FOUND")


async def test_evaluation_persona_crud(demo: None, client: Client) -> None:
    for body, named in (({"personality": "Impatient."}, "displayName"),
                        ({"displayName": "  "}, "displayName"),
                        ({"displayName": "Slow", "speechConfig": {"speakingRate": 0.1}}, "speakingRate"),
                        ({"displayName": "Fast", "speechConfig": {"speakingRate": 4.5}}, "speakingRate"),
                        ({"displayName": "Neg", "speechConfig": {"speakingRate": -1}}, "speakingRate"),
                        ({"displayName": "NaN", "speechConfig": {"speakingRate": "NaN"}}, "speakingRate"),
                        ({"displayName": "Loud", "speechConfig": {"environment": "STADIUM"}}, "environment"),
                        ({"displayName": "Long", "personality": "p" * 20_001}, "personality")):
        text = error_text(await client.call_tool("create_evaluation_persona", {
            "parent": APP, "evaluationPersona": body}), "INVALID_ARGUMENT")
        assert named in text, text
    assert not (await call_json(client, "list_evaluation_personas", {"parent": APP})).get("evaluationPersonas")

    bounds = []
    for rate in (0.25, 4.0):
        bounds.append(await call_json(client, "create_evaluation_persona", {
            "parent": APP, "evaluationPersona": {"displayName": f"Rate {rate}", "speechConfig": {"speakingRate": rate}}}))
    assert [p["speechConfig"]["speakingRate"] for p in bounds] == [0.25, 4.0]

    body = {"displayName": "Maya", "description": "A returning customer.", "personality": "Brief and impatient.",
            "speechConfig": {"speakingRate": 1.25, "environment": "CAFE", "voiceId": "en-US-1"}}
    created = await call_json(client, "create_evaluation_persona", {
        "parent": APP, "evaluationPersonaId": "maya", "evaluationPersona": body})
    assert created["name"] == f"{APP}/evaluationPersonas/maya"
    assert {k: v for k, v in created.items() if k in body} == body
    assert set(created) - set(body) <= {"name", "createTime", "updateTime", "etag"}
    assert set(SEED["EvaluationPersona"]) >= set(created) - {"createTime", "updateTime", "etag"}
    assert await call_json(client, "get_evaluation_persona", {"name": created["name"]}) == created
    taken = error_text(await client.call_tool("create_evaluation_persona", {
        "parent": APP, "evaluationPersona": {"displayName": "Maya"}}), "ALREADY_EXISTS")
    assert created["name"] in taken

    updated = await call_json(client, "update_evaluation_persona", {
        "evaluationPersona": {"name": created["name"], "speechConfig": {"speakingRate": 0.5}},
        "updateMask": "speechConfig"})
    assert updated["speechConfig"] == {"speakingRate": 0.5} and updated["personality"] == body["personality"]
    error_text(await client.call_tool("update_evaluation_persona", {
        "evaluationPersona": {"name": created["name"], "speechConfig": {"speakingRate": 9}},
        "updateMask": "speechConfig"}), "INVALID_ARGUMENT")
    assert await call_json(client, "get_evaluation_persona", {"name": created["name"]}) == updated

    names = [p["name"] for p in (await call_json(client, "list_evaluation_personas", {"parent": APP}))[
        "evaluationPersonas"]]
    assert created["name"] in names and len(names) == 3
    await call_json(client, "delete_evaluation_persona", {"name": created["name"]})
    error_text(await client.call_tool("get_evaluation_persona", {"name": created["name"]}), "NOT_FOUND")


# ---------------------------------------------------------------- generate_evaluation


async def test_generate_evaluation_from_a_recorded_conversation(demo: None, client: Client) -> None:
    session = await call_json(client, "run_session", {"config": {"session": f"{APP}/sessions/s1"},
                                                      "inputs": [{"text": QUESTION}]})
    replies = [output["text"] for output in session["outputs"] if "text" in output]
    assert replies and "AC-1001" in replies[0]

    generated = await call_json(client, "generate_evaluation", {"conversation": f"{APP}/conversations/s1"})
    assert_seed_shaped(generated)

    assert generated["invalid"] is False and generated["displayName"]
    assert generated["createdBy"] == "users/local"
    turns = generated["golden"]["turns"]
    assert len(turns) == 1
    steps = turns[0]["steps"]
    assert steps[0] == {"userInput": {"text": QUESTION}}
    expectations = [step["expectation"] for step in steps[1:]]
    assert all(set(step) == {"expectation"} for step in steps[1:])
    tool_calls = [e["toolCall"] for e in expectations if "toolCall" in e]
    assert tool_calls == [{"tool": LOOKUP, "args": {"order_id": "AC-1001"}}]
    assert [e["agentTransfer"] for e in expectations if "agentTransfer" in e] == [{"targetAgent": ORDERS}]
    responses = [e["agentResponse"] for e in expectations if "agentResponse" in e]
    assert responses == [{"role": "agent", "chunks": [{"text": text} for text in replies]}]
    kinds = [next(iter(e.keys() - {"note", "comparisonType"})) for e in expectations]
    assert kinds.index("agentTransfer") < kinds.index("toolCall") < kinds.index("agentResponse"), kinds
    assert await get(client, generated["name"]) == generated

    again = await call_json(client, "generate_evaluation", {"conversation": f"{APP}/conversations/s1"})
    assert again["displayName"] != generated["displayName"], "generating twice needs no new displayName"

    named = await call_json(client, "generate_evaluation", {
        "conversation": f"{APP}/conversations/s1", "evaluationId": "from-s1", "displayName": "From s1"})
    assert named["name"] == f"{EVALUATIONS}/from-s1" and named["displayName"] == "From s1"
    assert named["golden"] == generated["golden"]


@pytest.mark.parametrize(("conversation", "code", "named"), [
    (f"{APP}/conversations/ghost", "NOT_FOUND", f"{APP}/conversations/ghost"),
    (f"{LOCATION}/apps/ghost/conversations/s1", "NOT_FOUND", f"{LOCATION}/apps/ghost"),
    ("nonsense", "INVALID_ARGUMENT", "conversation"),
    (f"{APP}/sessions/s1", "INVALID_ARGUMENT", "conversation"),
])
async def test_generate_evaluation_from_a_missing_conversation(demo: None, client: Client, conversation: str,
                                                               code: str, named: str) -> None:
    text = error_text(await client.call_tool("generate_evaluation", {"conversation": conversation}), code)
    assert named in text
    assert await stored(client) == []
