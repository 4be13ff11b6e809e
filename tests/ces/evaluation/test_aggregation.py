"""AggregatedMetrics over crafted results, every count and mean worked out by hand here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from convener.api.protojson import Duration, Timestamp
from convener.ces.evaluation.aggregation import aggregate, app_version_id, mean_duration
from convener.ces.evaluation.models import (
    AggregatedMetrics,
    EvaluationResult,
    ExecutionState,
    GoldenExpectation,
    GoldenExpectationOutcome,
    GoldenResult,
    HallucinationResult,
    Outcome,
    ScenarioExpectation,
    ScenarioExpectationOutcome,
    ScenarioResult,
    SemanticSimilarityResult,
    ToolCallLatency,
    ToolExpectation,
    TurnReplayResult,
)
from convener.ces.models import Span, ToolCall, ToolResponse, ToolsetTool

APP = "projects/p/locations/l/apps/a"
A, B, C = f"{APP}/tools/a", f"{APP}/tools/b", f"{APP}/tools/c"
SECOND = 1_000_000_000


def replay(tools: Sequence[tuple[str, Outcome]] = (), similarity: int | None = None,
           hallucination: int | None = None, latencies: Sequence[tuple[str, int]] = (),
           turn_nanos: int | None = None) -> TurnReplayResult:
    return TurnReplayResult(
        expectation_outcome=[GoldenExpectationOutcome(expectation=GoldenExpectation(tool_call=ToolCall(tool=t)),
                                                      outcome=outcome) for t, outcome in tools] or None,
        semantic_similarity_result=SemanticSimilarityResult(score=similarity) if similarity is not None else None,
        hallucination_result=HallucinationResult(score=hallucination) if hallucination is not None else None,
        tool_call_latencies=[ToolCallLatency(tool=t, execution_latency=Duration(n)) for t, n in latencies] or None,
        turn_latency=Duration(turn_nanos) if turn_nanos is not None else None,
    )


def result(version: str | None, status: Outcome | None, *turns: TurnReplayResult,
           state: ExecutionState = ExecutionState.COMPLETED, **extra: Any) -> EvaluationResult:
    return EvaluationResult(
        app_version=f"{APP}/versions/{version}" if version else None, execution_state=state,
        evaluation_status=status, golden_result=GoldenResult(turn_replay_results=list(turns)), **extra)


R1 = result("v1", Outcome.PASS,
            replay([(A, Outcome.PASS)], 4, 1, [(A, SECOND)], 2 * SECOND),
            replay([(B, Outcome.FAIL)], 3, -1, [(B, SECOND // 2)], 3 * SECOND))
R2 = result(None, Outcome.FAIL, replay([(A, Outcome.FAIL)], 1, 0, [(A, 4 * SECOND)], 5 * SECOND))
R3 = result("v1", Outcome.FAIL,
            replay([(A, Outcome.FAIL), (B, Outcome.SKIPPED)], 2, 0, [(A, 2 * SECOND), (A, 1)], SECOND),
            replay([(B, Outcome.PASS), (B, Outcome.PASS)], None, 1, [(B, 1)], 4 * SECOND),
            replay(turn_nanos=SECOND))
R4 = result("v2", Outcome.PASS, replay([(C, Outcome.PASS)], None, -1, [(C, 300_000_000)], SECOND))
IGNORED = [
    result("v1", None, replay([(A, Outcome.PASS)], 4, 1, [(A, SECOND)], SECOND), state=ExecutionState.RUNNING),
    result("v1", Outcome.FAIL, replay([(A, Outcome.FAIL)]), state=ExecutionState.ERROR),
    EvaluationResult(app_version=f"{APP}/versions/v1", execution_state=ExecutionState.RUNNING,
                     scenario_result=ScenarioResult(task="t")),
]


def test_aggregate_by_app_version_and_turn() -> None:
    metrics = aggregate([R1, IGNORED[0], R2, IGNORED[1], R3, IGNORED[2], R4])
    assert AggregatedMetrics.model_validate(metrics.to_json()) == metrics
    v1, draft, v2 = metrics.to_json()["metricsByAppVersion"]  # groups in order of first appearance
    assert v1 == {
        "appVersionId": "v1",
        # a: R1 t0 PASS, R3 t0 FAIL; b: R1 t1 FAIL, R3 t1 PASS twice (R3 t0's b is SKIPPED)
        "toolMetrics": [{"tool": A, "passCount": 1, "failCount": 1}, {"tool": B, "passCount": 2, "failCount": 1}],
        "semanticSimilarityMetrics": [{"score": 3.0}],  # (4 + 3 + 2) / 3
        "hallucinationMetrics": [{"score": 2 / 3}],  # (1 + 0 + 1) / 3; the -1 is left out
        "toolCallLatencyMetrics": [
            {"tool": A, "averageLatency": "1s"},  # (1 s + 2 s + 1 ns) / 3 = 1.000000000333 s -> 1 s
            {"tool": B, "averageLatency": "0.250000001s"},  # (0.5 s + 1 ns) / 2 = 250000000.5 ns -> up
        ],
        "turnLatencyMetrics": [{"averageLatency": "2.200s"}],  # (2 + 3 + 1 + 4 + 1) / 5
        "passCount": 1,
        "failCount": 1,
        "metricsByTurn": [
            {
                "turnIndex": 0,
                "toolMetrics": [{"tool": A, "passCount": 1, "failCount": 1}],
                "semanticSimilarityMetrics": [{"score": 3.0}],  # (4 + 2) / 2
                "hallucinationMetrics": [{"score": 0.5}],  # (1 + 0) / 2
                "toolCallLatencyMetrics": [{"tool": A, "averageLatency": "1s"}],
                "turnLatencyMetrics": [{"averageLatency": "1.500s"}],  # (2 + 1) / 2
            },
            {
                "turnIndex": 1,
                "toolMetrics": [{"tool": B, "passCount": 2, "failCount": 1}],
                "semanticSimilarityMetrics": [{"score": 3.0}],  # R1 only
                "hallucinationMetrics": [{"score": 1.0}],  # -1 left out, then 1
                "toolCallLatencyMetrics": [{"tool": B, "averageLatency": "0.250000001s"}],
                "turnLatencyMetrics": [{"averageLatency": "3.500s"}],  # (3 + 4) / 2
            },
            {"turnIndex": 2, "turnLatencyMetrics": [{"averageLatency": "1s"}]},  # R3 only, nothing else
        ],
    }
    assert draft == {  # the draft: no appVersionId
        "toolMetrics": [{"tool": A, "passCount": 0, "failCount": 1}],
        "semanticSimilarityMetrics": [{"score": 1.0}],
        "hallucinationMetrics": [{"score": 0.0}],
        "toolCallLatencyMetrics": [{"tool": A, "averageLatency": "4s"}],
        "turnLatencyMetrics": [{"averageLatency": "5s"}],
        "passCount": 0,
        "failCount": 1,
        "metricsByTurn": [{
            "turnIndex": 0,
            "toolMetrics": [{"tool": A, "passCount": 0, "failCount": 1}],
            "semanticSimilarityMetrics": [{"score": 1.0}],
            "hallucinationMetrics": [{"score": 0.0}],
            "toolCallLatencyMetrics": [{"tool": A, "averageLatency": "4s"}],
            "turnLatencyMetrics": [{"averageLatency": "5s"}],
        }],
    }
    assert v2 == {  # no similarity at all, and only a -1 hallucination: both omitted
        "appVersionId": "v2",
        "toolMetrics": [{"tool": C, "passCount": 1, "failCount": 0}],
        "toolCallLatencyMetrics": [{"tool": C, "averageLatency": "0.300s"}],
        "turnLatencyMetrics": [{"averageLatency": "1s"}],
        "passCount": 1,
        "failCount": 0,
        "metricsByTurn": [{
            "turnIndex": 0,
            "toolMetrics": [{"tool": C, "passCount": 1, "failCount": 0}],
            "toolCallLatencyMetrics": [{"tool": C, "averageLatency": "0.300s"}],
            "turnLatencyMetrics": [{"averageLatency": "1s"}],
        }],
    }


def test_tools_are_ordered_by_name_and_toolset_tools_named() -> None:
    lookup = ToolsetTool(toolset=f"{APP}/toolsets/ts", tool_id="lookup")
    outcome = GoldenExpectationOutcome(expectation=GoldenExpectation(tool_call=ToolCall(toolset_tool=lookup)),
                                       outcome=Outcome.PASS)
    turn = replay([(C, Outcome.PASS), (A, Outcome.FAIL)])
    turn.expectation_outcome = [outcome, *(turn.expectation_outcome or [])]
    metrics = aggregate([result(None, Outcome.FAIL, turn)])
    assert metrics.metrics_by_app_version is not None
    tools = metrics.metrics_by_app_version[0].tool_metrics or []
    # "…/tools/a" < "…/tools/c" < "…/toolsets/ts/lookup"
    assert [(t.tool, t.pass_count, t.fail_count) for t in tools] == [
        (A, 0, 1), (C, 1, 0), (f"{APP}/toolsets/ts/lookup", 1, 0)]


def test_a_scenario_result_counts_its_turns_and_its_tool_expectations() -> None:
    def span(start: int, nanos: int) -> Span:
        return Span(name="TURN", start_time=Timestamp.from_micros(start), end_time=Timestamp.from_micros(start)
                    + Duration(nanos))

    def expecting(tool: str, outcome: Outcome) -> ScenarioExpectationOutcome:
        call = ToolCall(tool=tool)
        return ScenarioExpectationOutcome(
            expectation=ScenarioExpectation(tool_expectation=ToolExpectation(
                expected_tool_call=call, mock_tool_response=ToolResponse(tool=tool, response={}))), outcome=outcome)

    scenario = EvaluationResult(
        execution_state=ExecutionState.COMPLETED, evaluation_status=Outcome.FAIL,
        root_span=Span(name="EVALUATION", child_spans=[span(0, 2 * SECOND), span(10_000_000, SECOND)]),
        scenario_result=ScenarioResult(
            hallucination_result=[HallucinationResult(score=1), HallucinationResult(score=0)],
            expectation_outcomes=[expecting(A, Outcome.PASS), expecting(B, Outcome.FAIL),
                                  ScenarioExpectationOutcome(outcome=Outcome.FAIL)],  # an agentResponse: no tool
            tool_call_latencies=[ToolCallLatency(tool=A, execution_latency=Duration(SECOND))]))
    (draft,) = aggregate([scenario, R2]).to_json()["metricsByAppVersion"]
    assert draft["passCount"] == 0 and draft["failCount"] == 2
    # Tool outcomes and latencies of the scenario count in the totals (with R2's), not per turn.
    assert draft["toolMetrics"] == [{"tool": A, "passCount": 1, "failCount": 1},
                                    {"tool": B, "passCount": 0, "failCount": 1}]
    assert draft["toolCallLatencyMetrics"] == [{"tool": A, "averageLatency": "2.500s"}]  # (1 s + 4 s) / 2
    assert draft["hallucinationMetrics"] == [{"score": 1 / 3}]  # scenario 1 and 0, R2 0
    turn0, turn1 = draft["metricsByTurn"]
    assert turn0 == {"turnIndex": 0, "toolMetrics": [{"tool": A, "passCount": 0, "failCount": 1}],
                     "semanticSimilarityMetrics": [{"score": 1.0}], "hallucinationMetrics": [{"score": 0.5}],
                     "toolCallLatencyMetrics": [{"tool": A, "averageLatency": "4s"}],
                     "turnLatencyMetrics": [{"averageLatency": "3.500s"}]}  # (2 s + 5 s) / 2
    assert turn1 == {"turnIndex": 1, "hallucinationMetrics": [{"score": 0.0}],
                     "turnLatencyMetrics": [{"averageLatency": "1s"}]}


def test_nothing_to_aggregate() -> None:
    assert aggregate([]) == AggregatedMetrics()
    assert aggregate(IGNORED) == AggregatedMetrics()
    assert AggregatedMetrics().to_json() == {}


def test_helpers() -> None:
    assert app_version_id(R1) == "v1"
    assert app_version_id(R2) is None
    # (1 + 2) / 2 = 1.5 ns -> 2 ns; (1 + 1 + 2) / 3 = 1.33 ns -> 1 ns; (-1 - 2) / 2 = -1.5 ns -> -1 ns
    assert mean_duration([Duration(1), Duration(2)]) == Duration(2)
    assert mean_duration([Duration(1), Duration(1), Duration(2)]) == Duration(1)
    assert mean_duration([Duration(-1), Duration(-2)]) == Duration(-1)
