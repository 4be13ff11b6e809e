"""Scoring of a replayed golden turn: every metric of seed 001's TurnReplayResult, computed here.

The runner replays each golden turn and hands over what happened as an :class:`ObservedTurn`; this module
compares it with the turn's expectations. Thresholds, behaviours and metric switches are resolved by
:mod:`convener.ces.evaluation.thresholds`; judgements that need reading are asked of a
:class:`~convener.llm.judges.Judge`. The rules below are the contract.

Reading a recorded turn: ``messages[0]`` is the user's message; the chunks of the later messages (the
agent's) are, in order, the agent's texts, tool calls and responses, transfers and variable updates.
A tool is identified by its full name (``tool``) or, for a toolset's tool, by ``"{toolset}/{toolId}"``
(:func:`tool_name`); two exchanges name the same tool when these are equal.

Expectations, in step order, each give a GoldenExpectationOutcome; ``skipEvaluation`` gives SKIPPED and
nothing is computed.

- toolCall: the candidates are the turn's tool calls of the same tool not yet matched by an earlier
  toolCall expectation of the turn. A candidate's parameterCorrectnessScore is the share of the
  expected ``args`` keys present in its args with an equal JSON value (1.0 when none are expected); the
  best candidate (the first on ties) is matched and reported as ``observedToolCall``, and
  ``toolInvocationResult`` says PASS when the score reaches the parameter correctness threshold, FAIL
  otherwise; the outcome is that outcome. No candidate: FAIL, score 0, "<tool> was not called". When
  step-level tool correctness is off: PASS if and only if a candidate exists, no toolInvocationResult.
- toolResponse: the first response of the same tool not used by an earlier toolResponse expectation of
  the turn is ``observedToolResponse``; PASS when every top-level key of the expected ``response`` is in
  it with an equal value (subset equality). None: FAIL.
- agentResponse: expected = the expectation's text chunks joined with "\\n", actual = the agent's text
  chunks joined with "\\n". EQUALS: equal once stripped; CONTAINS: the stripped expected text occurs in
  the actual one; SEMANTIC_SIMILARITY or unset: the judge's similarity score reaches the turn's semantic
  similarity threshold, reported in the (deprecated) ``semanticSimilarityResult`` too. When the agent
  said nothing the similarity is 0 without asking the judge. When semantic similarity is switched off
  for the expectation, a semantic comparison is SKIPPED. ``observedAgentResponse`` is an agent message of
  the agent's text chunks (absent when it said nothing).
- agentTransfer: PASS when the agent transferred to the same targetAgent; ``observedAgentTransfer`` is
  that transfer, else the first transfer observed.
- updatedVariables: the agent's variable updates of the turn merged (later wins); PASS when every
  expected key is present with an equal value.
- mockToolResponse: a setup, not a check: SKIPPED, with ``observedToolResponse`` the first response of
  that tool in the turn if there was one.
- noToolCalls: PASS when the turn has no tool call, else FAIL with the first call as
  ``observedToolCall``. ``noToolCalls: false`` asserts nothing and is SKIPPED.

Turn-level metrics:

- ``semanticSimilarityResult``: when some non-skipped agentResponse expectation compares semantically
  with the metric on (evaluation switch, then the expectation's override), the judge's similarity of
  those expectations' texts (joined with "\\n") with the agent's whole text; outcome against the turn's
  threshold.
- ``hallucinationResult``: the judge's verdict on the agent's text given ``observed.context``, this
  turn's user texts and this turn's tool responses as JSON; score -1 when the agent said nothing; absent
  when an agentResponse expectation of the turn switches the hallucination metric off. It counts only in
  :func:`evaluation_outcome`, and only when the golden hallucination behaviour is ENABLED.
- ``overallToolInvocationResult`` (turn-level tool correctness on, and the turn expects or makes tool
  calls): toolInvocationScore = the size of the multiset intersection of the tools of the non-skipped
  toolCall expectations and the tools called, over the number of those expectations (1.0 when there is
  none). Extra calls are calls covered by no toolCall expectation (one call each, skipped ones included:
  skipping a check does not make its call extra) and by no mockToolResponse expectation (which covers
  every call of its tool). PASS when the score reaches the threshold and there is no extra call or
  extraToolCallBehavior is ALLOW. The deprecated ``toolInvocationScore`` repeats the score.
- ``toolOrderedInvocationScore`` (turn-level tool correctness on, and non-skipped toolCall
  expectations): the longest common subsequence of the expected tools (in step order) and the tools
  called (in call order), over the number expected.
- ``turnLatency``: the root span's end minus its start. ``toolCallLatencies``: one per TOOL span, in
  span-tree order (depth first): tool = ``attributes.tool`` (or the toolset tool's name), displayName =
  the tool's display name seen in the turn, else ``attributes.label``. ``spanLatencies``: one per TOOL,
  GUARDRAIL, LLM and USER_CALLBACK span in the same order: resource = the tool (or ``toolset`` for a
  toolset's tool) or the guardrail; model = ``attributes.agent`` for LLM; callback =
  ``attributes.stage``, else ``attributes.entryPoint``. A span's latency is endTime - startTime, or its
  ``duration`` when a time is missing.
- ``conversation`` and ``errorInfo`` come from the ObservedTurn. A turn that failed before anything was
  recorded (``turn`` None) has every expectation SKIPPED and no metric.

:func:`evaluation_outcome` is PASS when no turn has errorInfo, every non-SKIPPED expectation outcome
is PASS, every semanticSimilarityResult and overallToolInvocationResult present is PASS, no
hallucination score is 0 in a turn whose golden hallucination behaviour is ENABLED, and every
evaluation expectation result is PASS; FAIL otherwise.

:func:`score_criteria` judges each evaluation expectation's ``llmCriteria.prompt`` against the
transcript (:func:`transcript_of`): PASS when the judge's score is 1.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from convener.api.protojson import Duration, same_json
from convener.ces.evaluation import adk_criteria
from convener.ces.evaluation.models import (
    ComparisonType,
    Evaluation,
    EvaluationErrorInfo,
    EvaluationExpectation,
    EvaluationExpectationResult,
    ExtraToolCallBehavior,
    GoldenExpectation,
    GoldenExpectationOutcome,
    GoldenResult,
    GoldenTurn,
    HallucinationResult,
    Outcome,
    OverallToolInvocationResult,
    SemanticSimilarityResult,
    SpanLatency,
    SpanType,
    ToolCallLatency,
    ToolInvocationResult,
    TurnReplayResult,
)
from convener.ces.evaluation.thresholds import (
    MetricSwitches,
    Thresholds,
    evaluation_thresholds,
    metric_switches,
    turn_thresholds,
)
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
from convener.llm.judges import HALLUCINATION_LABELS, SIMILARITY_LABELS, Judge, Verdict
from convener.llm.offline_judge import ESCALATED, SESSION_ENDED

SPAN_TYPES = {SpanType.TOOL.value, SpanType.GUARDRAIL.value, SpanType.LLM.value, SpanType.USER_CALLBACK.value}


@dataclass(frozen=True)
class ObservedTurn:
    """What the runner saw of one replayed golden turn."""

    turn: Turn | None
    """The recorded turn; None when the replay failed before anything was recorded."""
    conversation: str | None
    """Name of the recorded conversation of this replay."""
    context: tuple[str, ...]
    """What the agent could rely on before this turn: :func:`context_of` of each earlier turn."""
    error: EvaluationErrorInfo | None = None


# -- reading a recorded turn ----------------------------------------------------------------------


def tool_name(exchange: ToolCall | ToolResponse) -> str | None:
    """The tool's full name, or ``"{toolset}/{toolId}"`` for a toolset's tool; None when unnamed."""
    if exchange.tool:
        return exchange.tool
    if exchange.toolset_tool is not None:
        return _toolset_tool_name(exchange.toolset_tool.toolset, exchange.toolset_tool.tool_id)
    return None


def _toolset_tool_name(toolset: str | None, tool_id: str | None) -> str | None:
    if toolset is None and tool_id is None:
        return None
    return f"{toolset or ''}/{tool_id or ''}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _response_json(response: ToolResponse) -> str:
    return _json({"tool": tool_name(response), "response": response.response or {}})


@dataclass
class _Seen:
    """The parts of a recorded turn the metrics read."""

    user_texts: list[str] = field(default_factory=list)
    agent_chunks: list[Chunk] = field(default_factory=list)

    @property
    def agent_texts(self) -> list[str]:
        return [chunk.text for chunk in self.agent_chunks if chunk.text is not None]

    @property
    def agent_text(self) -> str:
        return "\n".join(self.agent_texts)

    @property
    def said_something(self) -> bool:
        return bool(self.agent_text.strip())

    @property
    def calls(self) -> list[ToolCall]:
        return [chunk.tool_call for chunk in self.agent_chunks if chunk.tool_call is not None]

    @property
    def responses(self) -> list[ToolResponse]:
        return [chunk.tool_response for chunk in self.agent_chunks if chunk.tool_response is not None]

    @property
    def transfers(self) -> list[AgentTransfer]:
        return [chunk.agent_transfer for chunk in self.agent_chunks if chunk.agent_transfer is not None]

    @property
    def variables(self) -> dict[str, JsonValue]:
        merged: dict[str, JsonValue] = {}
        for chunk in self.agent_chunks:
            merged.update(chunk.updated_variables or {})
        return merged

    def pairing(self) -> list[int | None]:
        """For each tool call, in order, the index in ``responses`` of the response it got: the response with
        its id, else (calls without an id) the next unused response of the same tool; None when it got none."""
        responses = self.responses
        used: set[int] = set()
        found: list[int | None] = []
        for call in self.calls:
            index = next((i for i, r in enumerate(responses) if i not in used and (
                r.id == call.id if call.id else tool_name(r) == tool_name(call))), None)
            if index is not None:
                used.add(index)
            found.append(index)
        return found

    def display_names(self) -> dict[str, str]:
        names: dict[str, str] = {}
        exchanges: list[ToolCall | ToolResponse] = [*self.calls, *self.responses]
        for exchange in exchanges:
            name = tool_name(exchange)
            if name is not None and exchange.display_name and name not in names:
                names[name] = exchange.display_name
        return names


def _seen(turn: Turn | None) -> _Seen:
    seen = _Seen()
    for index, message in enumerate((turn.messages if turn is not None else None) or []):
        if message.role == "user" or (index == 0 and message.role is None):
            seen.user_texts.extend(chunk.text for chunk in message.chunks or [] if chunk.text is not None)
        else:
            seen.agent_chunks.extend(message.chunks or [])
    return seen


def context_of(turn: Turn) -> tuple[str, ...]:
    """What a turn adds to the context of the turns after it: the user's texts, then the agent's texts
    and tool responses (as JSON) in the order they happened."""
    seen = _seen(turn)
    context = list(seen.user_texts)
    for chunk in seen.agent_chunks:
        if chunk.text is not None:
            context.append(chunk.text)
        elif chunk.tool_response is not None:
            context.append(_response_json(chunk.tool_response))
    return tuple(context)


def _text_of(message: Message | None) -> str:
    return "\n".join(chunk.text for chunk in (message.chunks if message else None) or [] if chunk.text is not None)


# -- one turn -------------------------------------------------------------------------------------


def _lcs(left: Sequence[str | None], right: Sequence[str | None]) -> int:
    previous = [0] * (len(right) + 1)
    for item in left:
        current = [0]
        for column, other in enumerate(right):
            if item is not None and item == other:
                current.append(previous[column] + 1)
            else:
                current.append(max(previous[column + 1], current[column]))
        previous = current
    return previous[-1]


def _is_semantic(expectation: GoldenExpectation) -> bool:
    return expectation.comparison_type in (
        None, ComparisonType.COMPARISON_TYPE_UNSPECIFIED, ComparisonType.SEMANTIC_SIMILARITY)


def _outcome(passed: bool) -> Outcome:
    return Outcome.PASS if passed else Outcome.FAIL


class _TurnScorer:
    def __init__(self, seen: _Seen, thresholds: Thresholds, switches: MetricSwitches, judge: Judge) -> None:
        self.seen = seen
        self.calls = seen.calls
        self.responses = seen.responses
        self.thresholds = thresholds
        self.switches = switches
        self.judge = judge
        self.matched_calls: set[int] = set()
        self.used_responses: set[int] = set()
        self._verdicts: dict[tuple[str, str], Verdict] = {}

    def similarity(self, expected: str, actual: str) -> SemanticSimilarityResult:
        if not actual.strip():
            score, label, explanation = 0, SIMILARITY_LABELS[0], "The agent said nothing."
        else:
            verdict = self._verdicts.get((expected, actual))
            if verdict is None:
                verdict = self._verdicts[(expected, actual)] = self.judge.similarity(expected, actual)
            score, label, explanation = verdict.score, SIMILARITY_LABELS.get(verdict.score, verdict.label), \
                verdict.explanation
        return SemanticSimilarityResult(
            score=score, label=label, explanation=explanation,
            outcome=_outcome(score >= self.thresholds.semantic_similarity_success_threshold),
        )

    def expectation(self, expectation: GoldenExpectation) -> GoldenExpectationOutcome:
        if expectation.skip_evaluation:
            return GoldenExpectationOutcome(expectation=expectation, outcome=Outcome.SKIPPED)
        if expectation.tool_call is not None:
            return self.tool_call(expectation, expectation.tool_call)
        if expectation.tool_response is not None:
            return self.tool_response(expectation, expectation.tool_response)
        if expectation.agent_response is not None:
            return self.agent_response(expectation, expectation.agent_response)
        if expectation.agent_transfer is not None:
            target = expectation.agent_transfer.target_agent
            transfers = self.seen.transfers
            match = next((t for t in transfers if t.target_agent == target), None)
            return GoldenExpectationOutcome(
                expectation=expectation, outcome=_outcome(match is not None),
                observed_agent_transfer=match or next(iter(transfers), None),
            )
        if expectation.updated_variables is not None:
            variables = self.seen.variables
            passed = all(key in variables and same_json(value, variables[key])
                         for key, value in expectation.updated_variables.items())
            return GoldenExpectationOutcome(expectation=expectation, outcome=_outcome(passed))
        if expectation.mock_tool_response is not None:
            name = tool_name(expectation.mock_tool_response)
            response = next((r for r in self.responses if name is not None and tool_name(r) == name), None)
            return GoldenExpectationOutcome(
                expectation=expectation, outcome=Outcome.SKIPPED, observed_tool_response=response)
        if expectation.no_tool_calls:
            first = next(iter(self.calls), None)
            return GoldenExpectationOutcome(
                expectation=expectation, outcome=_outcome(first is None), observed_tool_call=first)
        return GoldenExpectationOutcome(expectation=expectation, outcome=Outcome.SKIPPED)

    def tool_call(self, expectation: GoldenExpectation, expected: ToolCall) -> GoldenExpectationOutcome:
        name = tool_name(expected)
        best: tuple[int, float, list[str], list[str]] | None = None
        for index, call in enumerate(self.calls):
            if index in self.matched_calls or name is None or tool_name(call) != name:
                continue
            missing, different = compare_args(expected.args or {}, call.args or {})
            wanted = len(expected.args or {})
            score = (wanted - len(missing) - len(different)) / wanted if wanted else 1.0
            if best is None or score > best[1]:
                best = (index, score, missing, different)
        label = name or "an unnamed tool"
        if best is None:
            return GoldenExpectationOutcome(
                expectation=expectation, outcome=Outcome.FAIL,
                tool_invocation_result=ToolInvocationResult(
                    parameter_correctness_score=0.0, outcome=Outcome.FAIL, explanation=f"{label} was not called",
                ) if self.switches.step_tool_correctness else None,
            )
        index, score, missing, different = best
        self.matched_calls.add(index)
        call = self.calls[index]
        if not self.switches.step_tool_correctness:
            return GoldenExpectationOutcome(expectation=expectation, outcome=Outcome.PASS, observed_tool_call=call)
        outcome = _outcome(score >= self.thresholds.parameter_correctness_threshold(expectation))
        return GoldenExpectationOutcome(
            expectation=expectation, outcome=outcome, observed_tool_call=call,
            tool_invocation_result=ToolInvocationResult(
                parameter_correctness_score=score, outcome=outcome,
                explanation=_args_explanation(expected.args or {}, call.args or {}, missing, different),
            ),
        )

    def tool_response(self, expectation: GoldenExpectation, expected: ToolResponse) -> GoldenExpectationOutcome:
        name = tool_name(expected)
        index = next((i for i, response in enumerate(self.responses)
                      if i not in self.used_responses and name is not None and tool_name(response) == name), None)
        if index is None:
            return GoldenExpectationOutcome(expectation=expectation, outcome=Outcome.FAIL)
        self.used_responses.add(index)
        observed = self.responses[index]
        actual = observed.response or {}
        passed = all(key in actual and same_json(value, actual[key])
                     for key, value in (expected.response or {}).items())
        return GoldenExpectationOutcome(
            expectation=expectation, outcome=_outcome(passed), observed_tool_response=observed)

    def agent_response(self, expectation: GoldenExpectation, expected_message: Message) -> GoldenExpectationOutcome:
        expected, actual = _text_of(expected_message), self.seen.agent_text
        texts = self.seen.agent_texts
        observed = Message(role="agent", chunks=[Chunk(text=text) for text in texts]) if texts else None
        if expectation.comparison_type == ComparisonType.EQUALS:
            return GoldenExpectationOutcome(
                expectation=expectation, outcome=_outcome(expected.strip() == actual.strip()),
                observed_agent_response=observed)
        if expectation.comparison_type == ComparisonType.CONTAINS:
            return GoldenExpectationOutcome(
                expectation=expectation, outcome=_outcome(expected.strip() in actual),
                observed_agent_response=observed)
        if not self.switches.semantic_similarity_for(expectation):
            return GoldenExpectationOutcome(
                expectation=expectation, outcome=Outcome.SKIPPED, observed_agent_response=observed)
        similarity = self.similarity(expected, actual)
        return GoldenExpectationOutcome(
            expectation=expectation, outcome=similarity.outcome, semantic_similarity_result=similarity,
            observed_agent_response=observed)


def compare_args(expected: dict[str, JsonValue], actual: dict[str, JsonValue]) -> tuple[list[str], list[str]]:
    missing = [key for key in expected if key not in actual]
    different = [key for key in expected if key in actual and not same_json(expected[key], actual[key])]
    return missing, different


def _args_explanation(expected: dict[str, JsonValue], actual: dict[str, JsonValue],
                      missing: list[str], different: list[str]) -> str:
    if not expected:
        return "No parameters were expected."
    wanted = len(expected)
    if not missing and not different:
        return f"All {wanted} expected parameters match."
    parts = [f"{wanted - len(missing) - len(different)} of {wanted} expected parameters match"]
    if missing:
        parts.append("missing: " + ", ".join(missing))
    if different:
        parts.append("different: " + ", ".join(
            f"{key} (expected {_json(expected[key])}, got {_json(actual[key])})" for key in different))
    return "; ".join(parts) + "."


def score_turn(turn: GoldenTurn, observed: ObservedTurn, evaluation: Evaluation, judge: Judge) -> TurnReplayResult:
    """The TurnReplayResult of one golden turn (see the module's rules)."""
    expectations = [step.expectation for step in turn.steps or [] if step.expectation is not None]
    if observed.turn is None:
        return TurnReplayResult(
            conversation=observed.conversation,
            expectation_outcome=[GoldenExpectationOutcome(expectation=e, outcome=Outcome.SKIPPED)
                                 for e in expectations] or None,
            error_info=observed.error,
        )
    thresholds = turn_thresholds(evaluation, turn)
    switches = metric_switches(evaluation)
    seen = _seen(observed.turn)
    scorer = _TurnScorer(seen, thresholds, switches, judge)
    outcomes = [scorer.expectation(expectation) for expectation in expectations]

    semantic = [e for e in expectations if e.agent_response is not None and not e.skip_evaluation
                and _is_semantic(e) and switches.semantic_similarity_for(e)]
    similarity = None
    if semantic:
        similarity = scorer.similarity("\n".join(_text_of(e.agent_response) for e in semantic), seen.agent_text)

    hallucination = None
    if all(switches.hallucination_for(e) for e in expectations if e.agent_response is not None):
        hallucination = hallucination_of(observed, judge)

    overall, ordered = _tool_invocation(expectations, seen.calls, thresholds, switches)
    tool_calls, span_latencies = latencies_of(observed.turn)
    return TurnReplayResult(
        conversation=observed.conversation,
        expectation_outcome=outcomes or None,
        hallucination_result=hallucination,
        tool_invocation_score=overall.tool_invocation_score if overall is not None else None,
        turn_latency=_latency(observed.turn.root_span) if observed.turn.root_span is not None else None,
        tool_call_latencies=tool_calls or None,
        semantic_similarity_result=similarity,
        overall_tool_invocation_result=overall,
        error_info=observed.error,
        span_latencies=span_latencies or None,
        tool_ordered_invocation_score=ordered,
    )


def agent_text_of(turn: Turn | None) -> str:
    """What the agent said in a recorded turn: its text chunks joined with newlines."""
    return _seen(turn).agent_text


def exchanges_of(turn: Turn | None) -> list[tuple[ToolCall, ToolResponse | None]]:
    """Each tool call of a recorded turn with the response it got (see ``_Seen.pairing``)."""
    seen = _seen(turn)
    responses = seen.responses
    return [(call, responses[index] if index is not None else None)
            for call, index in zip(seen.calls, seen.pairing(), strict=True)]


def hallucination_of(observed: ObservedTurn, judge: Judge) -> HallucinationResult:
    """The judge's verdict on what the agent said in a turn, given what it could rely on (see the rules)."""
    seen = _seen(observed.turn)
    if not seen.said_something:
        return HallucinationResult(score=-1, label=HALLUCINATION_LABELS[-1], explanation="The agent said nothing.")
    context = [*observed.context, *seen.user_texts, *(_response_json(r) for r in seen.responses)]
    verdict = judge.hallucination(seen.agent_text, context)
    return HallucinationResult(score=verdict.score, label=HALLUCINATION_LABELS.get(verdict.score, verdict.label),
                               explanation=verdict.explanation)


def latencies_of(turn: Turn) -> tuple[list[ToolCallLatency], list[SpanLatency]]:
    """The tool call latencies and span latencies of a recorded turn (see the rules)."""
    spans = list(_walk(turn.root_span)) if turn.root_span is not None else []
    display_names = _seen(turn).display_names()
    return ([_tool_call_latency(span, display_names) for span in spans if span.name == SpanType.TOOL.value],
            [_span_latency(span, display_names) for span in spans if span.name in SPAN_TYPES])


def _tool_invocation(expectations: list[GoldenExpectation], calls: list[ToolCall], thresholds: Thresholds,
                     switches: MetricSwitches) -> tuple[OverallToolInvocationResult | None, float | None]:
    if not switches.turn_tool_correctness:
        return None, None
    expected = [tool_name(e.tool_call) for e in expectations if e.tool_call is not None and not e.skip_evaluation]
    called = [tool_name(call) for call in calls]
    ordered = _lcs(expected, called) / len(expected) if expected else None
    if not expected and not calls:
        return None, ordered
    invoked = Counter(name for name in expected if name is not None) & Counter(
        name for name in called if name is not None)
    score = sum(invoked.values()) / len(expected) if expected else 1.0
    covered = Counter(tool_name(e.tool_call) for e in expectations if e.tool_call is not None)
    mocked = {tool_name(e.mock_tool_response) for e in expectations if e.mock_tool_response is not None} - {None}
    extra = 0
    for name in called:
        if name in mocked:
            continue
        if name is not None and covered[name] > 0:
            covered[name] -= 1
        else:
            extra += 1
    passed = score >= thresholds.overall_tool_invocation_correctness_threshold and (
        extra == 0 or thresholds.extra_tool_call_behavior == ExtraToolCallBehavior.ALLOW)
    return OverallToolInvocationResult(tool_invocation_score=score, outcome=_outcome(passed)), ordered


# -- latencies ------------------------------------------------------------------------------------


def _walk(span: Span) -> Iterator[Span]:
    yield span
    for child in span.child_spans or []:
        yield from _walk(child)


def _latency(span: Span) -> Duration | None:
    if span.start_time is not None and span.end_time is not None:
        return span.end_time - span.start_time
    return span.duration


def _attribute(span: Span, key: str) -> str | None:
    value = (span.attributes or {}).get(key)
    return value if isinstance(value, str) else None


def _span_tool(span: Span) -> str | None:
    return _attribute(span, "tool") or _toolset_tool_name(_attribute(span, "toolset"), _attribute(span, "toolId"))


def _tool_call_latency(span: Span, display_names: dict[str, str]) -> ToolCallLatency:
    tool = _span_tool(span)
    return ToolCallLatency(
        tool=tool, display_name=display_names.get(tool or "") or _attribute(span, "label"),
        start_time=span.start_time, end_time=span.end_time, execution_latency=_latency(span),
    )


def _span_latency(span: Span, display_names: dict[str, str]) -> SpanLatency:
    kind = SpanType(span.name or SpanType.TYPE_UNSPECIFIED.value)
    latency = SpanLatency(type=kind, start_time=span.start_time, end_time=span.end_time,
                          execution_latency=_latency(span))
    if kind == SpanType.TOOL:
        tool = _span_tool(span)
        latency.display_name = display_names.get(tool or "") or _attribute(span, "label")
        if _attribute(span, "tool") is None and _attribute(span, "toolset") is not None:
            latency.toolset = ToolsetTool(toolset=_attribute(span, "toolset"), tool_id=_attribute(span, "toolId"))
        else:
            latency.resource = tool
    elif kind == SpanType.GUARDRAIL:
        latency.resource = _attribute(span, "guardrail")
        latency.display_name = _attribute(span, "displayName")
    elif kind == SpanType.LLM:
        latency.model = _attribute(span, "agent")
    else:
        latency.callback = _attribute(span, "stage") or _attribute(span, "entryPoint")
    return latency


# -- the whole evaluation -------------------------------------------------------------------------


def transcript_of(observed: Sequence[ObservedTurn]) -> str:
    """The replayed conversation as lines for a judge: ``user: …``, ``agent: …``,
    ``agent called tool X({args}) -> {response}``, ``agent transferred to …``, ``agent set variables …``,
    ``agent ended the session[, escalating to a human agent][: reason]``."""
    lines: list[str] = []
    for item in observed:
        seen = _seen(item.turn)
        lines.extend(f"user: {text}" for text in seen.user_texts)
        responses = seen.responses
        pairing = iter(seen.pairing())
        used: set[int] = set()
        for chunk in seen.agent_chunks:
            if chunk.text is not None:
                lines.append(f"agent: {chunk.text}")
            elif chunk.tool_call is not None:
                call = chunk.tool_call
                index = next(pairing)
                line = f"agent called tool {call.display_name or tool_name(call)}({_json(call.args or {})})"
                if index is not None:
                    used.add(index)
                    line += f" -> {_json(responses[index].response or {})}"
                lines.append(line)
            elif chunk.agent_transfer is not None:
                transfer = chunk.agent_transfer
                lines.append(f"agent transferred to {transfer.display_name or transfer.target_agent}")
            elif chunk.updated_variables is not None:
                lines.append(f"agent set variables {_json(chunk.updated_variables)}")
        for index, response in enumerate(responses):
            if index not in used:
                lines.append(f"tool {response.display_name or tool_name(response)} responded "
                             f"{_json(response.response or {})}")
        ended = session_end_of(item.turn)
        if ended is not None:
            lines.append(ended)
        if item.error is not None:
            lines.append(f"error: {item.error.error_message or item.error.error_type}")
    return "\n".join(lines)


def session_end_of(turn: Turn | None) -> str | None:
    """``agent ended the session[, escalating to a human agent][: reason]`` when the agent ended the session in
    this turn (the runtime puts the endSession metadata on the turn's root span), else None."""
    attributes = turn.root_span.attributes if turn is not None and turn.root_span is not None else None
    ended = attributes.get("endSession") if attributes else None
    if not isinstance(ended, dict):
        return None
    reason = " ".join(str(ended.get("reason") or "").split())
    return SESSION_ENDED + (ESCALATED if ended.get("session_escalated") is True else "") + (
        f": {reason}" if reason else "")


def _tool_id(exchange: ToolCall) -> str:
    """The tool's ID, ADK's function name (a toolset's tool: its toolId)."""
    if not exchange.tool and exchange.toolset_tool is not None:
        return exchange.toolset_tool.tool_id or ""
    return (exchange.tool or "").rsplit("/", 1)[-1]


def _transfer(transfer: AgentTransfer) -> tuple[str, Any]:
    return adk_criteria.TRANSFER_TOOL, {"agent_name": (transfer.target_agent or "").rsplit("/", 1)[-1]}


def expected_invocations(turns: Sequence[GoldenTurn]) -> list[adk_criteria.Invocation]:
    """Each golden turn as ADK's metrics read an expected invocation: its toolCall and agentTransfer steps
    (skipped or not: they are the record of what is expected) and its agentResponse texts."""
    invocations = []
    for turn in turns:
        calls: list[tuple[str, Any]] = []
        texts = []
        for step in turn.steps or []:
            expectation = step.expectation
            if expectation is None:
                continue
            if expectation.tool_call is not None:
                calls.append((_tool_id(expectation.tool_call), expectation.tool_call.args or {}))
            elif expectation.agent_transfer is not None:
                calls.append(_transfer(expectation.agent_transfer))
            elif expectation.agent_response is not None:
                texts.append(_text_of(expectation.agent_response))
        invocations.append(adk_criteria.Invocation(tuple(calls), "\n".join(texts)))
    return invocations


def actual_invocation(turn: Turn | None) -> adk_criteria.Invocation:
    """A replayed turn as ADK's metrics read an actual invocation: its tool calls and transfers in order, and
    as the final response the agent's texts after its last tool call, response or transfer (ADK's final
    response is the turn's last event, after any function traffic)."""
    calls: list[tuple[str, Any]] = []
    final: list[str] = []
    for chunk in _seen(turn).agent_chunks:
        if chunk.tool_call is not None:
            calls.append((_tool_id(chunk.tool_call), chunk.tool_call.args or {}))
            final = []
        elif chunk.agent_transfer is not None:
            calls.append(_transfer(chunk.agent_transfer))
            final = []
        elif chunk.tool_response is not None:
            final = []
        elif chunk.text is not None:
            final.append(chunk.text)
    return adk_criteria.Invocation(tuple(calls), "\n".join(text for text in final if text))


def score_golden_criteria(criteria: Sequence[EvaluationExpectation], evaluation: Evaluation,
                          observed: Sequence[ObservedTurn], judge: Judge) -> list[EvaluationExpectationResult]:
    """The evaluation expectations of a golden evaluation: ADK metrics (tagged ``adk-metric``) computed against
    the golden's turns, the others judged against the transcript."""
    turns = (evaluation.golden.turns if evaluation.golden is not None else None) or []
    expected = expected_invocations(turns)
    actual = [actual_invocation(observed[index].turn if index < len(observed) else None)
              for index in range(len(turns))]
    judged = [criterion for criterion in criteria if adk_criteria.criterion_of(criterion) is None]
    verdicts = iter(score_criteria(judged, transcript_of(observed), judge))
    results = []
    for criterion in criteria:
        metric = adk_criteria.criterion_of(criterion)
        results.append(next(verdicts) if metric is None else adk_criteria.result_of(criterion, metric, expected,
                                                                                     actual))
    return results


def score_criteria(criteria: Sequence[EvaluationExpectation], transcript: str,
                   judge: Judge) -> list[EvaluationExpectationResult]:
    """Each evaluation expectation's llmCriteria.prompt judged against the transcript (an ADK metric, which needs
    a golden's expected invocations, FAILs here: only :func:`score_golden_criteria` computes it)."""
    results = []
    for criterion in criteria:
        if adk_criteria.criterion_of(criterion) is not None:
            results.append(EvaluationExpectationResult(
                evaluation_expectation=criterion.name, prompt=criterion.llm_criteria.prompt
                if criterion.llm_criteria is not None else None, outcome=Outcome.FAIL,
                explanation="An ADK metric is computed against a golden's expected invocations; this evaluation "
                            "has no golden."))
            continue
        prompt = criterion.llm_criteria.prompt if criterion.llm_criteria is not None else None
        if not prompt:
            results.append(EvaluationExpectationResult(
                evaluation_expectation=criterion.name, outcome=Outcome.FAIL,
                explanation="The evaluation expectation has no llmCriteria.prompt to judge."))
            continue
        verdict = judge.criterion(prompt, transcript)
        results.append(EvaluationExpectationResult(
            evaluation_expectation=criterion.name, prompt=prompt, outcome=_outcome(verdict.score == 1),
            explanation=verdict.explanation))
    return results


def evaluation_outcome(result: GoldenResult, evaluation: Evaluation) -> Outcome:
    """PASS or FAIL of a golden result (see the module's rules)."""
    base = evaluation_thresholds(evaluation)
    golden_turns = (evaluation.golden.turns if evaluation.golden is not None else None) or []
    for index, replay in enumerate(result.turn_replay_results or []):
        thresholds = base.for_turn(golden_turns[index]) if index < len(golden_turns) else base
        if replay.error_info is not None:
            return Outcome.FAIL
        if any(o.outcome not in (Outcome.SKIPPED, Outcome.PASS) for o in replay.expectation_outcome or []):
            return Outcome.FAIL
        if replay.semantic_similarity_result is not None and replay.semantic_similarity_result.outcome != Outcome.PASS:
            return Outcome.FAIL
        overall = replay.overall_tool_invocation_result
        if overall is not None and overall.outcome != Outcome.PASS:
            return Outcome.FAIL
        hallucination = replay.hallucination_result
        if thresholds.hallucination_counts and hallucination is not None and hallucination.score == 0:
            return Outcome.FAIL
    if any(r.outcome != Outcome.PASS for r in result.evaluation_expectation_results or []):
        return Outcome.FAIL
    return Outcome.PASS
