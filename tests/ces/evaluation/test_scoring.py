"""Scoring of replayed golden turns: crafted turns whose every metric is worked out by hand here.

The judge is a scripted fake, so each similarity, hallucination and criterion score is the one the test
chose; the arithmetic of the other metrics is written next to each assertion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import pytest

from convener.api.protojson import Duration, ProtoModel, Timestamp
from convener.ces.evaluation.models import (
    ComparisonType,
    ErrorType,
    Evaluation,
    EvaluationConfig,
    EvaluationErrorInfo,
    EvaluationExpectation,
    EvaluationExpectationResult,
    EvaluationMetricsConfig,
    EvaluationMetricsThresholds,
    EvaluationResult,
    ExpectationLevelMetricsThresholds,
    ExtraToolCallBehavior,
    Golden,
    GoldenEvaluationMetricsThresholds,
    GoldenExpectation,
    GoldenMetricsConfig,
    GoldenResult,
    GoldenTurn,
    HallucinationMetricBehavior,
    HallucinationMetricsConfig,
    LlmCriteria,
    Outcome,
    SemanticSimilarityMetricsConfig,
    SemanticSimilarityResult,
    SpanLatency,
    SpanType,
    Step,
    ToolCallLatency,
    ToolCorrectnessMetricsConfig,
    ToolMatchingSettings,
    TurnLevelMetricsThresholds,
    TurnReplayResult,
)
from convener.ces.evaluation.scoring import (
    ObservedTurn,
    context_of,
    evaluation_outcome,
    score_criteria,
    score_turn,
    tool_name,
    transcript_of,
)
from convener.ces.evaluation.thresholds import effective_thresholds, turn_thresholds
from convener.ces.models import (
    AgentTransfer,
    Chunk,
    Message,
    Span,
    ToolCall,
    ToolResponse,
    ToolsetTool,
    Turn,
)
from convener.ces.session_models import SessionInput
from convener.llm.judges import HALLUCINATION_LABELS, SIMILARITY_LABELS, Verdict

APP = "projects/p/locations/l/apps/a"
TOOLSET = f"{APP}/toolsets/ts"
M = TypeVar("M", bound=ProtoModel)


def tool(short: str) -> str:
    return f"{APP}/tools/{short}"


def agent(short: str) -> str:
    return f"{APP}/agents/{short}"


class FakeJudge:
    """Answers from tables set by the test; records every question."""

    name = "fake"

    def __init__(self, similarity: dict[tuple[str, str], int] | None = None, hallucination: int = 1,
                 criteria: dict[str, int] | None = None) -> None:
        self.similarities = similarity or {}
        self.hallucination_score = hallucination
        self.criteria = criteria or {}
        self.asked: list[tuple[str, Any, Any]] = []

    def similarity(self, expected: str, actual: str) -> Verdict:
        self.asked.append(("similarity", expected, actual))
        score = self.similarities[(expected, actual)]
        return Verdict(score, "fake", f"similarity {score}")

    def hallucination(self, response: str, context: Sequence[str]) -> Verdict:
        self.asked.append(("hallucination", response, list(context)))
        return Verdict(self.hallucination_score, "fake", f"hallucination {self.hallucination_score}")

    def criterion(self, prompt: str, transcript: str) -> Verdict:
        self.asked.append(("criterion", prompt, transcript))
        score = self.criteria[prompt]
        return Verdict(score, "fake", f"criterion {score}")


# -- building blocks --------------------------------------------------------------------------------


def roundtrip(model: M) -> M:
    assert type(model).model_validate(model.to_json()) == model
    return model


def call(short: str, args: dict[str, Any] | None = None, call_id: str | None = None,
         display_name: str | None = None) -> Chunk:
    return Chunk(tool_call=ToolCall(id=call_id, tool=tool(short), args=args, display_name=display_name))


def response(short: str, body: dict[str, Any], call_id: str | None = None) -> Chunk:
    return Chunk(tool_response=ToolResponse(id=call_id, tool=tool(short), response=body))


def recorded(user: str, *chunks: Chunk, root_span: Span | None = None) -> Turn:
    messages = [Message(role="user", chunks=[Chunk(text=user)])]
    if chunks:
        messages.append(Message(role="agent", chunks=list(chunks)))
    return Turn(messages=messages, root_span=root_span)


def observed(turn: Turn | None, context: tuple[str, ...] = (), error: EvaluationErrorInfo | None = None,
             ) -> ObservedTurn:
    return ObservedTurn(turn=turn, conversation=f"{APP}/conversations/c1", context=context, error=error)


def golden(*expectations: GoldenExpectation, user: str = "hi", **overrides: Any) -> GoldenTurn:
    steps = [Step(user_input=SessionInput(text=user)), *(Step(expectation=e) for e in expectations)]
    return GoldenTurn(steps=steps, **overrides)


def evaluation(*turns: GoldenTurn, thresholds: EvaluationMetricsThresholds | None = None,
               config: GoldenMetricsConfig | None = None) -> Evaluation:
    return Evaluation(
        name=f"{APP}/evaluations/e", display_name="e", golden=Golden(turns=list(turns)),
        evaluation_metrics_threshold_override=thresholds,
        evaluation_metrics_config_override=EvaluationMetricsConfig(golden_metrics_config=config) if config else None,
    )


def golden_thresholds(turn: TurnLevelMetricsThresholds | None = None, parameter: float | None = None,
                      extra: ExtraToolCallBehavior | None = None) -> EvaluationMetricsThresholds:
    return EvaluationMetricsThresholds(golden_evaluation_metrics_thresholds=GoldenEvaluationMetricsThresholds(
        turn_level_metrics_thresholds=turn,
        expectation_level_metrics_thresholds=ExpectationLevelMetricsThresholds(
            tool_invocation_parameter_correctness_threshold=parameter) if parameter is not None else None,
        tool_matching_settings=ToolMatchingSettings(extra_tool_call_behavior=extra) if extra else None,
    ))


def expect_call(short: str, args: dict[str, Any] | None = None, **options: Any) -> GoldenExpectation:
    return GoldenExpectation(tool_call=ToolCall(tool=tool(short), args=args), **options)


def says(text: str, *more: str, **options: Any) -> GoldenExpectation:
    chunks = [Chunk(text=t) for t in (text, *more)]
    return GoldenExpectation(agent_response=Message(role="agent", chunks=chunks), **options)


def score(turn: GoldenTurn, seen: ObservedTurn, judge: FakeJudge | None = None,
          within: Evaluation | None = None) -> TurnReplayResult:
    result = score_turn(turn, seen, within or evaluation(turn), judge or FakeJudge())
    return roundtrip(result)


def outcomes(result: TurnReplayResult) -> list[Outcome | None]:
    return [o.outcome for o in result.expectation_outcome or []]


# -- toolCall -----------------------------------------------------------------------------------------


def test_tool_call_parameter_correctness_against_each_threshold_level() -> None:
    expected = expect_call("a", {"a": 1, "b": 2, "c": 3})
    seen = observed(recorded("hi", call("a", {"a": 1, "b": 5}, "1")))
    # expected args {a, b, c}; actual {a equal, b different, c missing} -> 1/3
    default = score(golden(expected), seen)
    result = default.expectation_outcome[0]  # type: ignore[index]
    assert result.tool_invocation_result is not None
    assert result.tool_invocation_result.parameter_correctness_score == pytest.approx(1 / 3)
    assert result.tool_invocation_result.outcome == Outcome.FAIL  # 1/3 < 1.0 (the default)
    assert result.outcome == Outcome.FAIL
    assert result.tool_invocation_result.explanation == (
        "1 of 3 expected parameters match; missing: c; different: b (expected 2, got 5).")
    assert result.observed_tool_call == seen.turn.messages[1].chunks[0].tool_call  # type: ignore[union-attr,index]

    # evaluation level 0.3: 1/3 >= 0.3 -> PASS
    lenient = evaluation(golden(expected), thresholds=golden_thresholds(parameter=0.3))
    assert outcomes(score(golden(expected), seen, within=lenient)) == [Outcome.PASS]

    # expectation level 0.3 over the default 1.0 -> PASS
    overridden = expect_call("a", {"a": 1, "b": 2, "c": 3}, expectation_level_metrics_thresholds_override=(
        ExpectationLevelMetricsThresholds(tool_invocation_parameter_correctness_threshold=0.3)))
    assert outcomes(score(golden(overridden), seen)) == [Outcome.PASS]

    # expectation level 0.5 over the evaluation's 0.3: 1/3 < 0.5 -> FAIL
    strict = expect_call("a", {"a": 1, "b": 2, "c": 3}, expectation_level_metrics_thresholds_override=(
        ExpectationLevelMetricsThresholds(tool_invocation_parameter_correctness_threshold=0.5)))
    assert outcomes(score(golden(strict), seen, within=lenient)) == [Outcome.FAIL]


def test_tool_call_pass_no_args_and_not_called() -> None:
    seen = observed(recorded("hi", call("a", {"x": [1, 2], "y": {"z": 1.0}}, "1"), response("a", {"ok": True}, "1")))
    # both expected keys equal as JSON (1.0 == 1) -> 2/2 = 1.0 -> PASS
    exact = (score(golden(expect_call("a", {"x": [1, 2], "y": {"z": 1}})), seen).expectation_outcome or [])[0]
    assert exact.outcome == Outcome.PASS
    assert exact.tool_invocation_result is not None
    assert exact.tool_invocation_result.parameter_correctness_score == 1.0
    assert exact.tool_invocation_result.explanation == "All 2 expected parameters match."
    # no expected args -> 1.0 whatever the call's args
    bare = score(golden(expect_call("a")), seen).expectation_outcome[0]  # type: ignore[index]
    assert bare.outcome == Outcome.PASS
    assert bare.tool_invocation_result is not None and bare.tool_invocation_result.parameter_correctness_score == 1.0
    # another tool -> not called: score 0, FAIL
    missing = score(golden(expect_call("b", {"x": 1})), seen).expectation_outcome[0]  # type: ignore[index]
    assert missing.outcome == Outcome.FAIL
    assert missing.observed_tool_call is None
    assert missing.tool_invocation_result is not None
    assert missing.tool_invocation_result.parameter_correctness_score == 0
    assert missing.tool_invocation_result.outcome == Outcome.FAIL
    assert missing.tool_invocation_result.explanation == f"{tool('b')} was not called"


def test_tool_call_matches_the_best_candidate_once() -> None:
    first, second = call("a", {"q": 1, "r": 9}, "1"), call("a", {"q": 1, "r": 2}, "2")
    seen = observed(recorded("hi", first, second))
    # expectation 1 {q:1, r:2}: first scores 1/2, second 2/2 -> second matched
    # expectation 2 {q:1, r:2}: only first is left -> 1/2 -> FAIL at 1.0
    # expectation 3 {q:1}: nothing left -> not called
    result = score(golden(expect_call("a", {"q": 1, "r": 2}), expect_call("a", {"q": 1, "r": 2}),
                          expect_call("a", {"q": 1})), seen)
    got = result.expectation_outcome or []
    assert got[0].observed_tool_call is not None and got[0].observed_tool_call.id == "2"
    assert got[1].observed_tool_call is not None and got[1].observed_tool_call.id == "1"
    assert got[1].tool_invocation_result is not None
    assert got[1].tool_invocation_result.parameter_correctness_score == 0.5
    assert outcomes(result) == [Outcome.PASS, Outcome.FAIL, Outcome.FAIL]
    assert got[2].observed_tool_call is None
    # a tie (both 1/1 on {q:1}) goes to the first call
    tie = score(golden(expect_call("a", {"q": 1})), seen).expectation_outcome[0]  # type: ignore[index]
    assert tie.observed_tool_call is not None and tie.observed_tool_call.id == "1"


def test_toolset_tools_match_on_toolset_and_tool_id() -> None:
    lookup = ToolsetTool(toolset=TOOLSET, tool_id="lookup")
    seen = observed(recorded("hi", Chunk(tool_call=ToolCall(id="1", toolset_tool=lookup, args={"k": 1}))))
    same = GoldenExpectation(tool_call=ToolCall(toolset_tool=lookup, args={"k": 1}))
    other = GoldenExpectation(tool_call=ToolCall(toolset_tool=ToolsetTool(toolset=TOOLSET, tool_id="other")))
    assert outcomes(score(golden(same), seen)) == [Outcome.PASS]
    assert outcomes(score(golden(other), seen)) == [Outcome.FAIL]
    assert tool_name(lookup_call := ToolCall(toolset_tool=lookup)) == f"{TOOLSET}/lookup"
    assert tool_name(ToolCall(tool=tool("a"))) == tool("a") and lookup_call.tool is None


def test_step_level_tool_correctness_off_checks_only_that_the_tool_was_called() -> None:
    switched_off = GoldenMetricsConfig(
        step_tool_correctness_metrics_config=ToolCorrectnessMetricsConfig(enable_tool_correctness_metrics=False))
    turn = golden(expect_call("a", {"q": 1}), expect_call("b"))
    seen = observed(recorded("hi", call("a", {"q": 2}, "1")))
    # a: called (args differ, but parameters are not checked) -> PASS; b: not called -> FAIL
    result = score(turn, seen, within=evaluation(turn, config=switched_off))
    assert outcomes(result) == [Outcome.PASS, Outcome.FAIL]
    assert all(o.tool_invocation_result is None for o in result.expectation_outcome or [])
    # turn-level tool correctness is still on: 1 of 2 expected tools invoked -> 0.5
    assert result.overall_tool_invocation_result is not None
    assert result.overall_tool_invocation_result.tool_invocation_score == 0.5


# -- toolResponse, agentTransfer, updatedVariables, mockToolResponse, noToolCalls ---------------------------


def test_tool_response_is_subset_equality_and_used_once() -> None:
    seen = observed(recorded("hi", call("a", {}, "1"), response("a", {"output": 42, "extra": "x"}, "1"),
                             call("a", {}, "2"), response("a", {"output": 7}, "2")))
    subset = GoldenExpectation(tool_response=ToolResponse(tool=tool("a"), response={"output": 42}))
    second = GoldenExpectation(tool_response=ToolResponse(tool=tool("a"), response={"output": 7.0}))
    third = GoldenExpectation(tool_response=ToolResponse(tool=tool("a"), response={}))
    # first -> response 1 ({output 42} is a subset); second -> response 2 (7.0 == 7); third -> none left
    result = score(golden(subset, second, third), seen)
    assert outcomes(result) == [Outcome.PASS, Outcome.PASS, Outcome.FAIL]
    got = result.expectation_outcome or []
    assert got[0].observed_tool_response is not None and got[0].observed_tool_response.id == "1"
    assert got[1].observed_tool_response is not None and got[1].observed_tool_response.id == "2"
    assert got[2].observed_tool_response is None
    # a different value, or a key the response lacks -> FAIL
    wrong = GoldenExpectation(tool_response=ToolResponse(tool=tool("a"), response={"output": 41}))
    absent = GoldenExpectation(tool_response=ToolResponse(tool=tool("a"), response={"missing": 1}))
    assert outcomes(score(golden(wrong), seen)) == [Outcome.FAIL]
    assert outcomes(score(golden(absent), seen)) == [Outcome.FAIL]


def test_agent_transfer() -> None:
    billing = AgentTransfer(target_agent=agent("billing"), display_name="Billing")
    seen = observed(recorded("hi", Chunk(text="moving you"), Chunk(agent_transfer=billing)))
    hit = score(golden(GoldenExpectation(agent_transfer=AgentTransfer(target_agent=agent("billing")))), seen)
    assert outcomes(hit) == [Outcome.PASS]
    assert hit.expectation_outcome[0].observed_agent_transfer == billing  # type: ignore[index]
    miss = score(golden(GoldenExpectation(agent_transfer=AgentTransfer(target_agent=agent("sales")))), seen)
    assert outcomes(miss) == [Outcome.FAIL]
    assert miss.expectation_outcome[0].observed_agent_transfer == billing  # type: ignore[index]  # the first seen
    none = score(golden(GoldenExpectation(agent_transfer=AgentTransfer(target_agent=agent("sales")))),
                 observed(recorded("hi", Chunk(text="no"))))
    assert outcomes(none) == [Outcome.FAIL]
    assert none.expectation_outcome[0].observed_agent_transfer is None  # type: ignore[index]


def test_updated_variables_merge_later_wins() -> None:
    seen = observed(recorded("hi", Chunk(updated_variables={"a": 1, "b": "old"}),
                             Chunk(updated_variables={"b": "new", "c": [1]})))
    # merged: {a: 1, b: "new", c: [1]}
    assert outcomes(score(golden(GoldenExpectation(updated_variables={"b": "new", "c": [1.0]})), seen)) == [
        Outcome.PASS]
    assert outcomes(score(golden(GoldenExpectation(updated_variables={"b": "old"})), seen)) == [Outcome.FAIL]
    assert outcomes(score(golden(GoldenExpectation(updated_variables={"d": None})), seen)) == [Outcome.FAIL]
    # the user's own variables are not the agent's updates
    user_side = Turn(messages=[Message(role="user", chunks=[Chunk(updated_variables={"d": 1})])])
    assert outcomes(score(golden(GoldenExpectation(updated_variables={"d": 1})), observed(user_side))) == [
        Outcome.FAIL]


def test_mock_tool_response_is_skipped_and_reports_the_response() -> None:
    mock = GoldenExpectation(mock_tool_response=ToolResponse(tool=tool("a"), response={"output": 1}))
    seen = observed(recorded("hi", call("a", {}, "1"), response("a", {"output": 1}, "1")))
    result = score(golden(mock), seen)
    assert outcomes(result) == [Outcome.SKIPPED]
    assert result.expectation_outcome[0].observed_tool_response is not None  # type: ignore[index]
    # the mocked call is no extra call: 0 expected -> score 1.0, no extra -> PASS
    assert result.overall_tool_invocation_result is not None
    assert result.overall_tool_invocation_result.tool_invocation_score == 1.0
    assert result.overall_tool_invocation_result.outcome == Outcome.PASS
    quiet = score(golden(mock), observed(recorded("hi", Chunk(text="ok"))))
    assert quiet.expectation_outcome[0].observed_tool_response is None  # type: ignore[index]


def test_no_tool_calls() -> None:
    expectation = GoldenExpectation(no_tool_calls=True)
    assert outcomes(score(golden(expectation), observed(recorded("hi", Chunk(text="ok"))))) == [Outcome.PASS]
    busy = score(golden(expectation), observed(recorded("hi", call("a", {}, "1"), call("b", {}, "2"))))
    assert outcomes(busy) == [Outcome.FAIL]
    assert busy.expectation_outcome[0].observed_tool_call.id == "1"  # type: ignore[index,union-attr]


def test_skip_evaluation_computes_nothing() -> None:
    judge = FakeJudge()
    skipped = [
        expect_call("a", {"q": 1}, skip_evaluation=True),
        says("hello", skip_evaluation=True),
        GoldenExpectation(no_tool_calls=True, skip_evaluation=True),
    ]
    result = score(golden(*skipped), observed(recorded("hi", Chunk(text="hello"), call("a", {"q": 2}, "1"))), judge)
    assert outcomes(result) == [Outcome.SKIPPED] * 3
    assert all(o.tool_invocation_result is None and o.semantic_similarity_result is None
               and o.observed_tool_call is None for o in result.expectation_outcome or [])
    assert result.semantic_similarity_result is None  # its only agentResponse is skipped
    assert [kind for kind, *_ in judge.asked] == ["hallucination"]
    # the skipped toolCall is not expected (no ordered score, 0 expected -> 1.0) but still covers its call
    assert result.tool_ordered_invocation_score is None
    assert result.overall_tool_invocation_result is not None
    assert result.overall_tool_invocation_result.tool_invocation_score == 1.0
    assert result.overall_tool_invocation_result.outcome == Outcome.PASS


# -- agentResponse and semantic similarity --------------------------------------------------------------


def test_equals_contains_and_semantic_comparisons() -> None:
    seen = observed(recorded("hi", Chunk(text="  Your order ships"), Chunk(text="tomorrow.  ")))
    actual = "  Your order ships\ntomorrow.  "  # the agent's text chunks joined with "\n"
    equals = ComparisonType.EQUALS
    contains = ComparisonType.CONTAINS
    # EQUALS compares stripped texts
    assert outcomes(score(golden(says("Your order ships", "tomorrow.", comparison_type=equals)), seen)) == [
        Outcome.PASS]
    assert outcomes(score(golden(says("Your order ships", comparison_type=equals)), seen)) == [Outcome.FAIL]
    # CONTAINS: the stripped expected text is a substring
    assert outcomes(score(golden(says(" ships\ntomorrow ", comparison_type=contains)), seen)) == [Outcome.PASS]
    assert outcomes(score(golden(says("ships today", comparison_type=contains)), seen)) == [Outcome.FAIL]
    # EQUALS and CONTAINS ask no judge and give no turn-level similarity
    judge = FakeJudge()
    result = score(golden(says("x", comparison_type=contains)), seen, judge)
    assert result.semantic_similarity_result is None
    assert [kind for kind, *_ in judge.asked] == ["hallucination"]
    observed_response = result.expectation_outcome[0].observed_agent_response  # type: ignore[index]
    assert observed_response == Message(role="agent", chunks=[Chunk(text="  Your order ships"),
                                                                  Chunk(text="tomorrow.  ")])
    # SEMANTIC_SIMILARITY (or unset): the judge's score against the threshold, 3 by default
    for comparison in (None, ComparisonType.SEMANTIC_SIMILARITY):
        judge = FakeJudge(similarity={("Ships tomorrow.", actual): 3})
        result = score(golden(says("Ships tomorrow.", comparison_type=comparison)), seen, judge)
        assert outcomes(result) == [Outcome.PASS]  # 3 >= 3
        own = result.expectation_outcome[0].semantic_similarity_result  # type: ignore[index]
        assert own is not None and (own.score, own.label, own.outcome) == (3, SIMILARITY_LABELS[3], Outcome.PASS)
        assert result.semantic_similarity_result == own  # one semantic expectation: the same question
        assert judge.asked.count(("similarity", "Ships tomorrow.", actual)) == 1  # asked once, reused
    low = FakeJudge(similarity={("Ships tomorrow.", actual): 2})
    result = score(golden(says("Ships tomorrow.")), seen, low)
    assert outcomes(result) == [Outcome.FAIL]  # 2 < 3
    assert result.semantic_similarity_result is not None
    assert result.semantic_similarity_result.outcome == Outcome.FAIL
    assert result.semantic_similarity_result.explanation == "similarity 2"


def test_semantic_threshold_levels() -> None:
    seen = observed(recorded("hi", Chunk(text="b")))
    expectation = says("a")
    judge = FakeJudge(similarity={("a", "b"): 3})

    def similarity(turn: GoldenTurn, thresholds: EvaluationMetricsThresholds | None) -> Outcome | None:
        result = score(turn, seen, judge, evaluation(turn, thresholds=thresholds))
        assert result.semantic_similarity_result is not None
        return result.semantic_similarity_result.outcome

    strict = golden_thresholds(TurnLevelMetricsThresholds(semantic_similarity_success_threshold=4))
    assert similarity(golden(expectation), None) == Outcome.PASS  # 3 >= 3 (default)
    assert similarity(golden(expectation), strict) == Outcome.FAIL  # evaluation: 3 < 4
    relaxed_turn = golden(expectation, turn_level_metrics_thresholds_override=TurnLevelMetricsThresholds(
        semantic_similarity_success_threshold=3))
    assert similarity(relaxed_turn, strict) == Outcome.PASS  # turn 3 over evaluation 4: 3 >= 3
    strict_turn = golden(expectation, turn_level_metrics_thresholds_override=TurnLevelMetricsThresholds(
        semantic_similarity_success_threshold=4))
    assert similarity(strict_turn, None) == Outcome.FAIL  # turn 4 over the default 3


def test_turn_level_similarity_joins_the_semantic_expectations() -> None:
    seen = observed(recorded("hi", Chunk(text="Hello."), Chunk(text="Bye.")))
    actual = "Hello.\nBye."
    judge = FakeJudge(similarity={("Hi", actual): 2, ("Goodbye", actual): 1, ("Hi\nGoodbye", actual): 4})
    turn = golden(says("Hi"), says("Hello.", comparison_type=ComparisonType.CONTAINS), says("Goodbye"))
    result = score(turn, seen, judge)
    # per expectation: 2 < 3 FAIL, CONTAINS PASS, 1 < 3 FAIL; turn: "Hi\nGoodbye" (CONTAINS left out) -> 4 PASS
    assert outcomes(result) == [Outcome.FAIL, Outcome.PASS, Outcome.FAIL]
    assert result.semantic_similarity_result is not None
    assert (result.semantic_similarity_result.score, result.semantic_similarity_result.label,
            result.semantic_similarity_result.outcome) == (4, SIMILARITY_LABELS[4], Outcome.PASS)


def test_semantic_similarity_switches() -> None:
    seen = observed(recorded("hi", Chunk(text="b")))
    off = GoldenMetricsConfig(semantic_similarity_metrics_config=SemanticSimilarityMetricsConfig(
        enable_semantic_similarity_metrics=False))
    judge = FakeJudge(similarity={("a", "b"): 4})
    # switched off for the evaluation: the semantic check is not evaluated, no turn-level result
    turn = golden(says("a"))
    result = score(turn, seen, judge, evaluation(turn, config=off))
    assert outcomes(result) == [Outcome.SKIPPED]
    assert result.semantic_similarity_result is None
    assert result.expectation_outcome[0].observed_agent_response is not None  # type: ignore[index]
    # an expectation's override switches it back on
    back_on = golden(says("a", agent_response_semantic_similarity_metrics_config_override=(
        SemanticSimilarityMetricsConfig(enable_semantic_similarity_metrics=True))))
    result = score(back_on, seen, judge, evaluation(back_on, config=off))
    assert outcomes(result) == [Outcome.PASS]
    assert result.semantic_similarity_result is not None and result.semantic_similarity_result.score == 4
    # and an expectation's override switches it off while the evaluation has it on
    own_off = golden(says("a", agent_response_semantic_similarity_metrics_config_override=(
        SemanticSimilarityMetricsConfig(enable_semantic_similarity_metrics=False))))
    result = score(own_off, seen, judge)
    assert outcomes(result) == [Outcome.SKIPPED] and result.semantic_similarity_result is None


def test_agent_said_nothing() -> None:
    judge = FakeJudge()
    result = score(golden(says("Hello")), observed(recorded("hi", call("a", {}, "1"))), judge)
    # no text: similarity 0 without a judge, hallucination -1
    assert outcomes(result) == [Outcome.FAIL]
    assert result.expectation_outcome[0].observed_agent_response is None  # type: ignore[index]
    assert result.semantic_similarity_result is not None
    assert (result.semantic_similarity_result.score, result.semantic_similarity_result.outcome) == (0, Outcome.FAIL)
    assert result.hallucination_result is not None
    assert (result.hallucination_result.score, result.hallucination_result.label) == (-1, HALLUCINATION_LABELS[-1])
    assert judge.asked == []


# -- hallucination --------------------------------------------------------------------------------------------


def test_hallucination_context_and_switch() -> None:
    judge = FakeJudge(hallucination=0)
    seen = observed(recorded("what is my balance?", call("balance", {}, "1"),
                             response("balance", {"output": 12}, "1"), Chunk(text="It is 13.")),
                    context=("earlier user text", "earlier agent text"))
    result = score(golden(says("It is 12.", comparison_type=ComparisonType.EQUALS)), seen, judge)
    assert result.hallucination_result is not None
    assert (result.hallucination_result.score, result.hallucination_result.label) == (0, HALLUCINATION_LABELS[0])
    assert result.hallucination_result.explanation == "hallucination 0"
    assert judge.asked == [("hallucination", "It is 13.", [
        "earlier user text", "earlier agent text", "what is my balance?",
        f'{{"response": {{"output": 12}}, "tool": "{tool("balance")}"}}',
    ])]
    # an agentResponse expectation may switch the metric off for its turn
    off = says("It is 12.", comparison_type=ComparisonType.EQUALS,
               agent_response_hallucination_metrics_config_override=HallucinationMetricsConfig(
                   enable_hallucination_metrics=False))
    assert score(golden(off), seen, FakeJudge()).hallucination_result is None


def test_hallucination_counts_only_when_enabled() -> None:
    seen = observed(recorded("hi", Chunk(text="made up")))
    judge = FakeJudge(hallucination=0)

    def verdict(turn: GoldenTurn, thresholds: EvaluationMetricsThresholds | None) -> Outcome:
        within = evaluation(turn, thresholds=thresholds)
        result = score(turn, seen, judge, within)
        assert result.hallucination_result is not None and result.hallucination_result.score == 0
        return evaluation_outcome(roundtrip(GoldenResult(turn_replay_results=[result])), within)

    def behaviour(golden_behaviour: HallucinationMetricBehavior | None = None,
                  deprecated: HallucinationMetricBehavior | None = None) -> EvaluationMetricsThresholds:
        return EvaluationMetricsThresholds(golden_hallucination_metric_behavior=golden_behaviour,
                                           hallucination_metric_behavior=deprecated)

    enabled, disabled = HallucinationMetricBehavior.ENABLED, HallucinationMetricBehavior.DISABLED
    plain = golden()
    assert verdict(plain, None) == Outcome.PASS  # DISABLED by default: a 0 does not count
    assert verdict(plain, behaviour(enabled)) == Outcome.FAIL
    assert verdict(plain, behaviour(deprecated=enabled)) == Outcome.FAIL  # the deprecated field still works
    assert verdict(plain, behaviour(disabled, deprecated=enabled)) == Outcome.PASS  # the new field wins
    assert verdict(golden(hallucination_metric_behavior_override=enabled), behaviour(disabled)) == Outcome.FAIL
    assert verdict(golden(hallucination_metric_behavior_override=disabled), behaviour(enabled)) == Outcome.PASS
    unspecified = HallucinationMetricBehavior.HALLUCINATION_METRIC_BEHAVIOR_UNSPECIFIED
    assert verdict(golden(hallucination_metric_behavior_override=unspecified), behaviour(enabled)) == Outcome.FAIL
    # a score of 1 or -1 never fails
    justified = score(plain, seen, FakeJudge(hallucination=1), evaluation(plain, thresholds=behaviour(enabled)))
    assert evaluation_outcome(GoldenResult(turn_replay_results=[justified]),
                              evaluation(plain, thresholds=behaviour(enabled))) == Outcome.PASS


# -- turn-level tool correctness ------------------------------------------------------------------------------


def test_multiset_tool_matching_and_extra_calls() -> None:
    turn = golden(expect_call("a"), expect_call("a"), expect_call("b"))
    seen = observed(recorded("hi", call("a", {}, "1"), call("b", {}, "2"), call("c", {}, "3")))

    def overall(thresholds: EvaluationMetricsThresholds | None) -> Outcome | None:
        result = score(turn, seen, within=evaluation(turn, thresholds=thresholds))
        assert result.overall_tool_invocation_result is not None
        assert result.overall_tool_invocation_result.tool_invocation_score == pytest.approx(2 / 3)
        assert result.tool_invocation_score == result.overall_tool_invocation_result.tool_invocation_score
        return result.overall_tool_invocation_result.outcome

    # expected {a: 2, b: 1}, observed {a: 1, b: 1, c: 1}: intersection {a: 1, b: 1} -> 2/3; c is extra
    assert overall(None) == Outcome.FAIL  # 2/3 < 1.0
    relaxed = TurnLevelMetricsThresholds(overall_tool_invocation_correctness_threshold=0.6)
    assert overall(golden_thresholds(relaxed)) == Outcome.FAIL  # 2/3 >= 0.6, but the extra c fails it
    assert overall(golden_thresholds(relaxed, extra=ExtraToolCallBehavior.ALLOW)) == Outcome.PASS
    # the turn's own threshold beats the evaluation's: 0.7 > 2/3 -> FAIL even with extras allowed
    stricter = golden(expect_call("a"), expect_call("a"), expect_call("b"),
                      turn_level_metrics_thresholds_override=TurnLevelMetricsThresholds(
                          overall_tool_invocation_correctness_threshold=0.7))
    result = score(stricter, seen, within=evaluation(
        stricter, thresholds=golden_thresholds(relaxed, extra=ExtraToolCallBehavior.ALLOW)))
    assert result.overall_tool_invocation_result is not None
    assert result.overall_tool_invocation_result.outcome == Outcome.FAIL


def test_a_repeated_call_is_extra() -> None:
    turn = golden(expect_call("a"))
    seen = observed(recorded("hi", call("a", {}, "1"), call("a", {}, "2")))
    # expected {a: 1}, observed {a: 2}: 1/1 = 1.0, but the second a is extra
    fail = score(turn, seen).overall_tool_invocation_result
    assert fail is not None and (fail.tool_invocation_score, fail.outcome) == (1.0, Outcome.FAIL)
    allow = score(turn, seen, within=evaluation(turn, thresholds=golden_thresholds(
        extra=ExtraToolCallBehavior.ALLOW))).overall_tool_invocation_result
    assert allow is not None and (allow.tool_invocation_score, allow.outcome) == (1.0, Outcome.PASS)
    # no toolCall expectation and no call: no turn-level tool metric at all
    quiet = score(golden(says("x", comparison_type=ComparisonType.EQUALS)), observed(recorded("hi", Chunk(text="x"))))
    assert quiet.overall_tool_invocation_result is None and quiet.tool_invocation_score is None
    # a call no expectation names: 0 expected -> 1.0, extra -> FAIL
    stray = score(golden(), observed(recorded("hi", call("z", {}, "1")))).overall_tool_invocation_result
    assert stray is not None and (stray.tool_invocation_score, stray.outcome) == (1.0, Outcome.FAIL)


def test_ordered_invocation_score_is_the_longest_common_subsequence() -> None:
    turn = golden(expect_call("a"), expect_call("b"), expect_call("c"))
    # expected [a, b, c], observed [b, a, c]: LCS [a, c] or [b, c] -> 2/3; all invoked -> 3/3
    result = score(turn, observed(recorded("hi", call("b", {}, "1"), call("a", {}, "2"), call("c", {}, "3"))))
    assert result.tool_ordered_invocation_score == pytest.approx(2 / 3)
    assert result.overall_tool_invocation_result is not None
    assert result.overall_tool_invocation_result.tool_invocation_score == 1.0
    # expected [a, b, c], observed [c, x, a]: LCS 1 -> 1/3; invoked {a, c} -> 2/3
    result = score(turn, observed(recorded("hi", call("c", {}, "1"), call("x", {}, "2"), call("a", {}, "3"))))
    assert result.tool_ordered_invocation_score == pytest.approx(1 / 3)
    assert result.overall_tool_invocation_result is not None
    assert result.overall_tool_invocation_result.tool_invocation_score == pytest.approx(2 / 3)


def test_turn_level_tool_correctness_off() -> None:
    off = GoldenMetricsConfig(tool_correctness_metrics_config=ToolCorrectnessMetricsConfig(
        enable_tool_correctness_metrics=False))
    turn = golden(expect_call("a"))
    result = score(turn, observed(recorded("hi", call("b", {}, "1"))), within=evaluation(turn, config=off))
    assert result.overall_tool_invocation_result is None
    assert result.tool_invocation_score is None and result.tool_ordered_invocation_score is None
    assert outcomes(result) == [Outcome.FAIL]  # the step-level check still runs


# -- latencies ------------------------------------------------------------------------------------------------


def at(clock: str) -> Timestamp:
    return Timestamp.parse(f"2030-01-01T10:00:{clock}Z")


def test_latencies_from_the_span_tree() -> None:
    guardrail = f"{APP}/guardrails/g"
    tree = Span(name="TURN", start_time=at("00"), end_time=at("02.5"), child_spans=[
        Span(name="AGENT", start_time=at("00.1"), end_time=at("02.4"), attributes={"agent": agent("root")},
             child_spans=[
                 Span(name="USER_CALLBACK", start_time=at("00.1"), end_time=at("00.15"),
                      attributes={"stage": "beforeAgent", "entryPoint": "mod:before"}),
                 Span(name="GUARDRAIL", start_time=at("00.15"), end_time=at("00.2"),
                      attributes={"guardrail": guardrail, "displayName": "Safety", "stage": "userInput"}),
                 Span(name="LLM", start_time=at("00.2"), end_time=at("00.7"), attributes={"agent": agent("root")}),
                 Span(name="TOOL", start_time=at("00.7"), end_time=at("00.95"),
                      attributes={"tool": tool("a"), "label": "a", "args": {}, "response": {}}),
                 Span(name="TOOL", duration=Duration.from_seconds(0.125),
                      attributes={"toolset": TOOLSET, "toolId": "lookup", "label": "ts/lookup",
                                  "errorInfo": {"code": "NOT_FOUND", "message": "gone"}}),
                 Span(name="USER_CALLBACK", start_time=at("01"), end_time=at("01.000000001"),
                      attributes={"entryPoint": "mod:after"}),
             ]),
    ])
    seen = observed(recorded("hi", call("a", {}, "1", display_name="Tool A"), root_span=tree))
    result = score(golden(), seen)
    assert result.turn_latency == Duration.from_seconds(2.5)  # 10:00:02.5 - 10:00:00
    assert result.tool_call_latencies == [
        # 00.95 - 00.7 = 0.25 s; display name from the turn's call
        ToolCallLatency(tool=tool("a"), display_name="Tool A", start_time=at("00.7"), end_time=at("00.95"),
                        execution_latency=Duration(250_000_000)),
        # no times: the recorded duration; no known display name: the label
        ToolCallLatency(tool=f"{TOOLSET}/lookup", display_name="ts/lookup", execution_latency=Duration(125_000_000)),
    ]
    assert result.span_latencies == [
        SpanLatency(type=SpanType.USER_CALLBACK, start_time=at("00.1"), end_time=at("00.15"),
                    execution_latency=Duration(50_000_000), callback="beforeAgent"),
        SpanLatency(type=SpanType.GUARDRAIL, display_name="Safety", start_time=at("00.15"), end_time=at("00.2"),
                    execution_latency=Duration(50_000_000), resource=guardrail),
        SpanLatency(type=SpanType.LLM, start_time=at("00.2"), end_time=at("00.7"),
                    execution_latency=Duration(500_000_000), model=agent("root")),
        SpanLatency(type=SpanType.TOOL, display_name="Tool A", start_time=at("00.7"), end_time=at("00.95"),
                    execution_latency=Duration(250_000_000), resource=tool("a")),
        SpanLatency(type=SpanType.TOOL, display_name="ts/lookup", execution_latency=Duration(125_000_000),
                    toolset=ToolsetTool(toolset=TOOLSET, tool_id="lookup")),
        SpanLatency(type=SpanType.USER_CALLBACK, start_time=at("01"), end_time=at("01.000000001"),
                    execution_latency=Duration(1), callback="mod:after"),
    ]
    assert result.to_json()["turnLatency"] == "2.500s"
    assert result.conversation == f"{APP}/conversations/c1"
    no_spans = score(golden(), observed(recorded("hi", Chunk(text="x"))))
    assert no_spans.turn_latency is None and no_spans.tool_call_latencies is None and no_spans.span_latencies is None


# -- failures, the whole evaluation, criteria ------------------------------------------------------------


def test_a_failed_replay() -> None:
    error = EvaluationErrorInfo(error_type=ErrorType.RUNTIME_FAILURE, error_message="boom")
    judge = FakeJudge()
    turn = golden(expect_call("a"), says("x"))
    result = score(turn, observed(None, error=error), judge)
    assert outcomes(result) == [Outcome.SKIPPED, Outcome.SKIPPED]
    assert result.error_info == error and result.conversation == f"{APP}/conversations/c1"
    assert result.hallucination_result is None and result.overall_tool_invocation_result is None
    assert judge.asked == []
    assert evaluation_outcome(GoldenResult(turn_replay_results=[result]), evaluation(turn)) == Outcome.FAIL
    # a turn recorded in part still carries its error, and fails the evaluation however it scored
    partial = score(golden(), observed(recorded("hi", Chunk(text="x")), error=error), judge)
    assert partial.error_info == error and partial.hallucination_result is not None
    assert evaluation_outcome(GoldenResult(turn_replay_results=[partial]), evaluation(golden())) == Outcome.FAIL


def test_evaluation_outcome() -> None:
    first = golden(expect_call("a"), says("Hello"))
    second = golden(GoldenExpectation(no_tool_calls=True), says("Bye", skip_evaluation=True))
    within = evaluation(first, second)
    seen = [observed(recorded("hi", call("a", {}, "1"), Chunk(text="Hello there"))),
            observed(recorded("bye", Chunk(text="Bye")), context=("hi", "Hello there"))]
    judge = FakeJudge(similarity={("Hello", "Hello there"): 4})
    turns = [score(first, seen[0], judge, within), score(second, seen[1], judge, within)]
    passing = GoldenResult(turn_replay_results=turns)
    # every check passes (the skipped one does not count)
    assert outcomes(turns[0]) == [Outcome.PASS, Outcome.PASS]
    assert outcomes(turns[1]) == [Outcome.PASS, Outcome.SKIPPED]
    assert evaluation_outcome(passing, within) == Outcome.PASS
    criteria = [EvaluationExpectationResult(evaluation_expectation="x", outcome=Outcome.PASS)]
    assert evaluation_outcome(GoldenResult(turn_replay_results=turns, evaluation_expectation_results=criteria),
                              within) == Outcome.PASS
    failed_criterion = [EvaluationExpectationResult(evaluation_expectation="x", outcome=Outcome.FAIL)]
    assert evaluation_outcome(GoldenResult(turn_replay_results=turns,
                                           evaluation_expectation_results=failed_criterion), within) == Outcome.FAIL
    # a failed expectation, a failed similarity, a failed tool invocation each fail it
    low = FakeJudge(similarity={("Hello", "Hello there"): 2})
    assert evaluation_outcome(GoldenResult(turn_replay_results=[score(first, seen[0], low, within), turns[1]]),
                              within) == Outcome.FAIL
    # the turn-level similarity alone failing (its expectations passing) fails it too
    failed_similarity = turns[0].model_copy(
        update={"semantic_similarity_result": SemanticSimilarityResult(score=2, outcome=Outcome.FAIL)})
    assert outcomes(failed_similarity) == [Outcome.PASS, Outcome.PASS]
    assert evaluation_outcome(GoldenResult(turn_replay_results=[failed_similarity]), within) == Outcome.FAIL
    extra = observed(recorded("hi", call("a", {}, "1"), call("b", {}, "2"), Chunk(text="Hello there")))
    with_extra = score(first, extra, judge, within)
    assert outcomes(with_extra) == [Outcome.PASS, Outcome.PASS]  # only the turn-level tool result fails
    assert evaluation_outcome(GoldenResult(turn_replay_results=[with_extra]), within) == Outcome.FAIL


def test_transcript_and_criteria() -> None:
    first = recorded("Where is my order?", Chunk(text="Let me check."),
                     call("orders", {"id": 7}, "c1", display_name="Orders"),
                     response("orders", {"status": "shipped"}, "c1"), Chunk(text="It has shipped."),
                     Chunk(updated_variables={"status": "shipped"}))
    second = recorded("Thanks", Chunk(agent_transfer=AgentTransfer(target_agent=agent("survey"),
                                                                  display_name="Survey")))
    error = EvaluationErrorInfo(error_type=ErrorType.RUNTIME_FAILURE, error_message="boom")
    transcript = transcript_of([observed(first), observed(second, context=context_of(first)),
                                observed(None, error=error)])
    assert transcript.split("\n") == [
        "user: Where is my order?",
        "agent: Let me check.",
        'agent called tool Orders({"id": 7}) -> {"status": "shipped"}',
        "agent: It has shipped.",
        'agent set variables {"status": "shipped"}',
        "user: Thanks",
        "agent transferred to Survey",
        "error: boom",
    ]
    assert context_of(first) == ("Where is my order?", "Let me check.",
                                 f'{{"response": {{"status": "shipped"}}, "tool": "{tool("orders")}"}}',
                                 "It has shipped.")
    polite = EvaluationExpectation(name=f"{APP}/evaluationExpectations/polite", display_name="polite",
                                   llm_criteria=LlmCriteria(prompt="The agent is polite."))
    tracked = EvaluationExpectation(name=f"{APP}/evaluationExpectations/tracked", display_name="tracked",
                                    llm_criteria=LlmCriteria(prompt="The agent gave a tracking number."))
    empty = EvaluationExpectation(name=f"{APP}/evaluationExpectations/empty", display_name="empty")
    judge = FakeJudge(criteria={"The agent is polite.": 1, "The agent gave a tracking number.": 0})
    results = [roundtrip(r) for r in score_criteria([polite, tracked, empty], transcript, judge)]
    assert results == [
        EvaluationExpectationResult(evaluation_expectation=polite.name, prompt="The agent is polite.",
                                    outcome=Outcome.PASS, explanation="criterion 1"),
        EvaluationExpectationResult(evaluation_expectation=tracked.name, prompt="The agent gave a tracking number.",
                                    outcome=Outcome.FAIL, explanation="criterion 0"),
        EvaluationExpectationResult(evaluation_expectation=empty.name, outcome=Outcome.FAIL,
                                    explanation="The evaluation expectation has no llmCriteria.prompt to judge."),
    ]
    assert [asked[2] for asked in judge.asked] == [transcript, transcript]


# -- thresholds reported ----------------------------------------------------------------------------------------


def test_effective_thresholds_fill_every_default() -> None:
    defaults = roundtrip(effective_thresholds(evaluation(golden())))
    assert defaults.to_json() == {
        "goldenEvaluationMetricsThresholds": {
            "turnLevelMetricsThresholds": {"semanticSimilaritySuccessThreshold": 3,
                                           "overallToolInvocationCorrectnessThreshold": 1.0},
            "expectationLevelMetricsThresholds": {"toolInvocationParameterCorrectnessThreshold": 1.0},
            "toolMatchingSettings": {"extraToolCallBehavior": "FAIL"},
        },
        "hallucinationMetricBehavior": "DISABLED",
        "goldenHallucinationMetricBehavior": "DISABLED",
    }
    given = golden_thresholds(TurnLevelMetricsThresholds(semantic_similarity_success_threshold=2), parameter=0.5,
                              extra=ExtraToolCallBehavior.ALLOW)
    given.hallucination_metric_behavior = HallucinationMetricBehavior.ENABLED
    overridden = roundtrip(effective_thresholds(evaluation(golden(), thresholds=given)))
    assert overridden.to_json() == {
        "goldenEvaluationMetricsThresholds": {
            "turnLevelMetricsThresholds": {"semanticSimilaritySuccessThreshold": 2,
                                           "overallToolInvocationCorrectnessThreshold": 1.0},
            "expectationLevelMetricsThresholds": {"toolInvocationParameterCorrectnessThreshold": 0.5},
            "toolMatchingSettings": {"extraToolCallBehavior": "ALLOW"},
        },
        "hallucinationMetricBehavior": "ENABLED",
        "goldenHallucinationMetricBehavior": "ENABLED",
    }
    # what a result reports round-trips with it
    result = EvaluationResult(evaluation_metrics_thresholds=overridden, config=EvaluationConfig())
    assert roundtrip(result).evaluation_metrics_thresholds == overridden
    # the turn layer
    turn = golden(turn_level_metrics_thresholds_override=TurnLevelMetricsThresholds(
        overall_tool_invocation_correctness_threshold=0.25), hallucination_metric_behavior_override=(
        HallucinationMetricBehavior.DISABLED))
    resolved = turn_thresholds(evaluation(turn, thresholds=given), turn)
    assert (resolved.semantic_similarity_success_threshold, resolved.overall_tool_invocation_correctness_threshold,
            resolved.tool_invocation_parameter_correctness_threshold, resolved.extra_tool_call_behavior,
            resolved.golden_hallucination_metric_behavior) == (
        2, 0.25, 0.5, ExtraToolCallBehavior.ALLOW, HallucinationMetricBehavior.DISABLED)
