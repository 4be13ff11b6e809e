"""Evaluation results as people and CI servers read them: one-line summaries, and JUnit XML.

``summarise`` reduces an EvaluationResult to what a report shows: its status (PASS, FAIL, ERROR,
CANCELLED), how many of its turns passed, why it failed (every failed check, in turn order, as
text) and its turn latencies. ``junit_xml`` writes a run's summaries as a JUnit XML document: one
``<testsuite>`` for the run, one ``<testcase>`` per result, ``<failure>`` for FAIL and ``<error>``
for ERROR and CANCELLED, as Jenkins, GitLab and GitHub test reporters read them.

A turn passes under the rules of ``scoring.evaluation_outcome``: no error, no failed expectation,
no failed semantic similarity or overall tool invocation result, and no hallucination (score 0)
when the result's golden hallucination behaviour is ENABLED (a turn's own override is not on the
result, so the result's behaviour is used for every turn).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from convener.ces.evaluation.models import (
    EvaluationResult,
    ExecutionState,
    GoldenExpectation,
    GoldenExpectationOutcome,
    HallucinationMetricBehavior,
    MilestoneStatus,
    Outcome,
    ScenarioResult,
    TurnReplayResult,
)
from convener.ces.models import ToolCall, ToolResponse

PASSED = (Outcome.PASS, Outcome.SKIPPED)
CLIP = 80

# XML 1.0 allows tab, newline, carriage return and everything from U+0020 except surrogates and U+FFFE/F.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass
class ResultSummary:
    """What a report says about one evaluation result."""

    name: str
    """The result's resource name."""
    display_name: str
    """The evaluation's display name, with " #k" for the k-th repetition when the run repeats."""
    status: str
    """PASS or FAIL (completed), ERROR, CANCELLED, or the execution state of an unfinished result."""
    turns_passed: int = 0
    turns_total: int = 0
    failures: list[str] = field(default_factory=list)
    """Every failed check, "turn N: …", in order; for ERROR and CANCELLED, the reason."""
    reason: str = ""
    """One short line for a table: the first failed expectation's note (else its condition), or the error."""
    latencies: list[float] = field(default_factory=list)
    """Turn latencies in seconds, of the turns that report one."""

    @property
    def passed(self) -> bool:
        return self.status == Outcome.PASS.value

    @property
    def total_latency(self) -> float:
        return sum(self.latencies)

    @property
    def mean_latency(self) -> float | None:
        return self.total_latency / len(self.latencies) if self.latencies else None


def summarise(result: EvaluationResult, display_name: str) -> ResultSummary:
    state = result.execution_state
    turns = (result.golden_result.turn_replay_results if result.golden_result else None) or []
    summary = ResultSummary(name=result.name or "", display_name=display_name, status=_status(result),
                            turns_total=len(turns))
    summary.latencies = [turn.turn_latency.seconds() for turn in turns if turn.turn_latency is not None]
    if state == ExecutionState.ERROR:
        message = _error_message(result) or "the evaluation failed to execute"
        summary.failures, summary.reason = [message], message
        return summary
    if state == ExecutionState.CANCELLED:
        summary.failures, summary.reason = ["cancelled before it ran"], "cancelled"
        return summary
    if state != ExecutionState.COMPLETED:
        message = f"not finished ({summary.status})"
        summary.failures, summary.reason = [message], message
        return summary
    if result.scenario_result is not None:
        return _scenario_summary(summary, result, result.scenario_result)
    hallucination_counts = _hallucination_counts(result)
    first_expectation: str | None = None
    for index, turn in enumerate(turns, start=1):
        problems, short = _turn_failures(turn, hallucination_counts)
        if not problems:
            summary.turns_passed += 1
        summary.failures.extend(f"turn {index}: {problem}" for problem in problems)
        if first_expectation is None and short is not None:
            first_expectation = f"turn {index}: {short}" if len(turns) > 1 else short
    for criterion in (result.golden_result.evaluation_expectation_results if result.golden_result else None) or []:
        if criterion.outcome != Outcome.PASS:
            label = (criterion.evaluation_expectation or "").rsplit("/", 1)[-1] or "evaluation expectation"
            summary.failures.append(_joined(f"expectation {label}", criterion.explanation))
    if summary.status == Outcome.FAIL.value:
        summary.reason = first_expectation or (summary.failures[0] if summary.failures else "failed")
    return summary


def _scenario_summary(summary: ResultSummary, result: EvaluationResult, scenario: ScenarioResult) -> ResultSummary:
    """A scenario's turns are the simulated conversation's; its failures, every reason it did not pass."""
    turns = (result.root_span.child_spans if result.root_span else None) or []
    summary.turns_total = summary.turns_passed = len(turns)
    summary.latencies = [(span.end_time - span.start_time).seconds() for span in turns
                         if span.start_time is not None and span.end_time is not None]
    if result.error_info is not None and result.error_info.error_message:
        summary.failures.append(f"the agent failed: {result.error_info.error_message}")
    for outcome in scenario.expectation_outcomes or ():
        expectation = outcome.expectation
        if outcome.outcome == Outcome.PASS or expectation is None:
            continue
        tool = expectation.tool_expectation.expected_tool_call if expectation.tool_expectation else None
        condition = describe_condition(GoldenExpectation(tool_call=tool, agent_response=expectation.agent_response))
        summary.failures.append(f"{condition}: not observed in the conversation")
    for criterion in scenario.evaluation_expectation_results or ():
        if criterion.outcome != Outcome.PASS:
            label = (criterion.evaluation_expectation or "").rsplit("/", 1)[-1] or "evaluation expectation"
            summary.failures.append(_joined(f"expectation {label}", criterion.explanation))
    goal = scenario.user_goal_satisfaction_result
    if goal is not None and not scenario.task_completed and scenario.all_expectations_satisfied:
        summary.failures.append(_joined(f"user goal: {goal.label}", goal.explanation))
    for milestone in scenario.milestone_results or ():
        if milestone.status != MilestoneStatus.COMPLETED and milestone.milestone is not None:
            summary.failures.append(_joined(f"milestone not completed: {milestone.milestone.goal}",
                                            milestone.justification))
    if summary.status == Outcome.FAIL.value:
        summary.reason = summary.failures[0] if summary.failures else "hallucination in a turn"
    return summary


def _status(result: EvaluationResult) -> str:
    state = result.execution_state
    if state == ExecutionState.COMPLETED:
        return Outcome.PASS.value if result.evaluation_status == Outcome.PASS else Outcome.FAIL.value
    return (state or ExecutionState.EXECUTION_STATE_UNSPECIFIED).value


def _error_message(result: EvaluationResult) -> str | None:
    if result.error_info is not None and result.error_info.error_message:
        return result.error_info.error_message
    if result.error is not None and result.error.message:
        return result.error.message
    return None


def _hallucination_counts(result: EvaluationResult) -> bool:
    thresholds = result.evaluation_metrics_thresholds
    if thresholds is None:
        return False
    behaviour = thresholds.golden_hallucination_metric_behavior or thresholds.hallucination_metric_behavior
    return behaviour == HallucinationMetricBehavior.ENABLED


def _turn_failures(turn: TurnReplayResult, hallucination_counts: bool) -> tuple[list[str], str | None]:
    """The failed checks of one replayed turn, and the table's short line for its first failed expectation."""
    problems: list[str] = []
    short: str | None = None
    if turn.error_info is not None:
        problems.append(turn.error_info.error_message or "the turn failed")
    for outcome in turn.expectation_outcome or []:
        if outcome.outcome in PASSED:
            continue
        expectation = outcome.expectation or GoldenExpectation()
        condition = describe_condition(expectation)
        detail = _observed(outcome)
        text = f'"{expectation.note}" {condition}' if expectation.note else condition
        problems.append(_joined(text, detail))
        if short is None:
            short = _clip(expectation.note or condition)
    similarity = turn.semantic_similarity_result
    if similarity is not None and similarity.outcome != Outcome.PASS:
        problems.append(_joined(f"semantic similarity {similarity.score} ({similarity.label or 'FAIL'})",
                                similarity.explanation))
    overall = turn.overall_tool_invocation_result
    if overall is not None and overall.outcome != Outcome.PASS:
        score = overall.tool_invocation_score
        problems.append("tool calls not as expected (an expected tool not called, or a tool called that no "
                        f"expectation names; tool invocation score {score if score is not None else 0:.2f})")
    hallucination = turn.hallucination_result
    if hallucination_counts and hallucination is not None and hallucination.score == 0:
        problems.append(_joined("hallucination", hallucination.explanation))
    return problems, short


def describe_condition(expectation: GoldenExpectation) -> str:
    """The condition of a golden expectation in a few words, e.g. ``toolCall lookup_order {"order_id": "AC-1"}``."""
    if expectation.tool_call is not None:
        args = expectation.tool_call.args
        shown = f" {_clip(json.dumps(args, ensure_ascii=False, sort_keys=True))}" if args else ""
        return f"toolCall {_tool(expectation.tool_call)}{shown}"
    if expectation.tool_response is not None:
        return f"toolResponse {_tool(expectation.tool_response)}"
    if expectation.mock_tool_response is not None:
        return f"mockToolResponse {_tool(expectation.mock_tool_response)}"
    if expectation.agent_response is not None:
        text = "\n".join(c.text for c in expectation.agent_response.chunks or [] if c.text is not None)
        return f"agentResponse {json.dumps(_clip(text), ensure_ascii=False)}"
    if expectation.agent_transfer is not None:
        return f"agentTransfer {_last(expectation.agent_transfer.target_agent) or '?'}"
    if expectation.updated_variables is not None:
        return f"updatedVariables {', '.join(sorted(expectation.updated_variables)) or '{}'}"
    if expectation.no_tool_calls is not None:
        return "noToolCalls"
    return "expectation"


def _observed(outcome: GoldenExpectationOutcome) -> str | None:
    """What was seen instead, as far as the outcome says."""
    expectation = outcome.expectation or GoldenExpectation()
    if outcome.tool_invocation_result is not None and outcome.tool_invocation_result.explanation:
        return outcome.tool_invocation_result.explanation
    if expectation.tool_call is not None:
        return "called with other arguments" if outcome.observed_tool_call else "not called"
    if expectation.tool_response is not None:
        observed = outcome.observed_tool_response
        if observed is None:
            return "no response of that tool"
        return f"responded {_clip(json.dumps(observed.response, ensure_ascii=False, sort_keys=True))}"
    if expectation.agent_response is not None:
        if outcome.semantic_similarity_result is not None and outcome.semantic_similarity_result.explanation:
            said = _said(outcome)
            return _joined(said, outcome.semantic_similarity_result.explanation) if said else \
                outcome.semantic_similarity_result.explanation
        return _said(outcome) or "the agent said nothing"
    if expectation.agent_transfer is not None:
        target = outcome.observed_agent_transfer.target_agent if outcome.observed_agent_transfer else None
        return f"transferred to {_last(target)}" if target else "no transfer"
    if expectation.updated_variables is not None:
        if outcome.observed_payload:
            return f"set {_clip(json.dumps(outcome.observed_payload, ensure_ascii=False, sort_keys=True))}"
        return "no variable set"
    if expectation.no_tool_calls and outcome.observed_tool_call is not None:
        return f"called {_tool(outcome.observed_tool_call)}"
    return None


def _said(outcome: GoldenExpectationOutcome) -> str | None:
    message = outcome.observed_agent_response
    text = "\n".join(c.text for c in (message.chunks if message else None) or [] if c.text is not None)
    return f"said {json.dumps(_clip(text), ensure_ascii=False)}" if text else None


def _tool(exchange: ToolCall | ToolResponse) -> str:
    if exchange.tool:
        return _last(exchange.tool) or exchange.tool
    if exchange.toolset_tool is not None:
        return f"{_last(exchange.toolset_tool.toolset) or '?'}/{exchange.toolset_tool.tool_id or '?'}"
    return exchange.display_name or "?"


def _last(name: str | None) -> str | None:
    return name.rsplit("/", 1)[-1] if name else None


def _joined(text: str, detail: str | None) -> str:
    return f"{text}: {detail}" if detail else text


def _clip(text: str, limit: int = CLIP) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- JUnit XML ----------------------------------------------------------------------------------


def _xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold (control characters, lone surrogates) replaced."""
    return _NOT_XML.sub("\ufffd", text)


def junit_xml(suite: str, classname: str, summaries: Sequence[ResultSummary],
              properties: dict[str, str] | None = None, timestamp: str | None = None) -> ET.ElementTree:
    """A JUnit XML document: one testsuite ``suite``, one testcase per summary, of class ``classname``."""
    failures = sum(1 for s in summaries if s.status == Outcome.FAIL.value)
    errors = sum(1 for s in summaries if s.status not in (Outcome.PASS.value, Outcome.FAIL.value))
    time = f"{sum(s.total_latency for s in summaries):.3f}"
    counts = {"tests": str(len(summaries)), "failures": str(failures), "errors": str(errors), "skipped": "0",
              "time": time}
    root = ET.Element("testsuites", {"name": _xml_text(suite), **counts})
    attributes = {"name": _xml_text(suite), **counts}
    if timestamp:
        attributes["timestamp"] = timestamp
    testsuite = ET.SubElement(root, "testsuite", attributes)
    if properties:
        listed = ET.SubElement(testsuite, "properties")
        for key, value in properties.items():
            ET.SubElement(listed, "property", {"name": _xml_text(key), "value": _xml_text(value)})
    for summary in summaries:
        case = ET.SubElement(testsuite, "testcase", {
            "classname": _xml_text(classname), "name": _xml_text(summary.display_name),
            "time": f"{summary.total_latency:.3f}",
        })
        if not summary.passed:
            _problem(case, summary)
        ET.SubElement(case, "system-out").text = _xml_text(summary.name)
    ET.indent(root)
    return ET.ElementTree(root)


def _problem(case: ET.Element, summary: ResultSummary) -> None:
    """The ``<failure>`` (FAIL) or ``<error>`` (anything else not passed) of a testcase, listing what went wrong."""
    if summary.status == Outcome.FAIL.value:
        count = len(summary.failures)
        message = (f"{count} failed check{'s' if count != 1 else ''}: " + "; ".join(summary.failures)
                   if summary.failures else "failed")
        element = ET.SubElement(case, "failure", {"message": _xml_text(_clip(message, 1000)), "type": "FAIL"})
    else:
        element = ET.SubElement(case, "error", {
            "message": _xml_text(_clip(summary.reason or summary.status, 1000)), "type": summary.status})
    element.text = _xml_text("\n".join(summary.failures))


def write_junit(path: Path, tree: ET.ElementTree) -> None:
    with path.open("wb") as file:
        tree.write(file, encoding="utf-8", xml_declaration=True)
        file.write(b"\n")
