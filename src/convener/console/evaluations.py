"""The console's evaluation pages: an app's evaluations and datasets, an evaluation with its trend, its
results (expected against actual, turn by turn), evaluation runs, the comparison of two runs, and a form
that starts a run.

Every page reaches data through ``ConsoleTools`` (the evaluation tools' own handlers); the dataclasses here
are what the templates lay out, built from the wire models by pure functions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from convener.api.errors import InvalidArgument, NotFound
from convener.api.names import check_id
from convener.api.protojson import Duration, ProtoModel
from convener.ces.evaluation.models import (
    AggregatedMetrics,
    Evaluation,
    EvaluationDataset,
    EvaluationResult,
    EvaluationRun,
    GoldenExpectationOutcome,
    Outcome,
    ScenarioExpectationOutcome,
    TurnReplayResult,
)
from convener.ces.evaluation.requests import (
    ListEvaluationResultsResponse,
    ListEvaluationRunsResponse,
    ListEvaluationsResponse,
)
from convener.ces.names import EvaluationDatasetName
from convener.ces.part_tools import part_messages
from convener.ces.models import AgentTransfer, App, Message, ToolCall, ToolResponse
from convener.console.access import Resp, Viewer
from convener.console.present import pretty
from convener.console.views import Console, location_of, page_link, with_paging
from convener.longrunning.models import Operation

TREND_WIDTH = 200
"""The SVG user units the trend chart of an evaluation's last ten results is drawn in."""
TREND_HEIGHT = 60
COMPARED_RESULTS = 10
"""The most results of each evaluation in each run that a comparison reads for its metrics (an evaluation run
100 times in both has its metrics from its newest 10 in each; its verdicts and pass rates from the runs'
summaries, which count every result)."""
RESULTS_SHOWN = 20
"""An evaluation's results its page lists at a time unless ``pageSize`` says otherwise (each is read whole by
``list_evaluation_results``; the trend above already shows the last ten)."""
SHOWN_EVALUATIONS = 50
"""Evaluations a run's page (its summaries) and a comparison show at a time: each one shown costs a
``get_evaluation`` for its display name."""


class ListDatasetsResponse(ProtoModel):
    evaluation_datasets: list[EvaluationDataset] | None = None
    next_page_token: str | None = None


DATASETS_RESPONSE = part_messages(EvaluationDataset, EvaluationDatasetName, "evaluation_dataset",
                                  "evaluation_datasets", "evaluation dataset").listed
"""What list_evaluation_datasets answers (a response class made per kind, shared by every server)."""


# --- what the pages show -------------------------------------------------------------------------------------


def short(name: str | None) -> str:
    """The ID at the end of a resource name."""
    return (name or "").rsplit("/", 1)[-1]


def _outcome(value: Outcome | None) -> str:
    return value.value if value is not None and value is not Outcome.OUTCOME_UNSPECIFIED else ""


def _seconds(value: Duration | None) -> str:
    return "" if value is None else f"{value.seconds() * 1000:.1f} ms"


@dataclass(frozen=True)
class TrendPoint:
    """One of an evaluation's last results, as a bar of the trend chart."""

    href: str
    outcome: str
    """PASS, FAIL, SKIPPED, or "" while it runs or when it errored."""
    state: str
    when: str
    share: float
    """Share of its checks that passed, 0 to 1 (what the bar's height shows)."""
    x: int
    height: int
    label: str


@dataclass(frozen=True)
class EvaluationRow:
    name: str
    id: str
    display_name: str
    kind: str
    tags: list[str]
    invalid: bool
    latest: str
    latest_href: str
    passed: int
    failed: int
    trend: list[TrendPoint]


@dataclass(frozen=True)
class VersionMetrics:
    version: str
    passed: int
    failed: int
    similarity: str
    hallucination: str
    turn_latency: str
    tools: list[str]


@dataclass(frozen=True)
class Side:
    """Expected or actual: what kind of thing, its title (a tool, an agent) and its text or JSON."""

    title: str = ""
    text: str = ""
    json: str = ""
    missing: bool = False


@dataclass(frozen=True)
class Check:
    """One expectation of a turn (golden) or of a scenario: expected beside actual, and the verdict."""

    kind: str
    note: str
    expected: Side
    actual: Side
    outcome: str
    scores: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Verdict:
    title: str
    score: str
    label: str
    explanation: str
    outcome: str = ""


@dataclass(frozen=True)
class TurnView:
    index: int
    user_inputs: list[Side]
    checks: list[Check]
    verdicts: list[Verdict]
    latency: str
    conversation: str
    error: str
    outcome: str


@dataclass(frozen=True)
class RunRow:
    name: str
    id: str
    display_name: str
    state: str
    created: str
    version: str
    kind: str
    total: int
    completed: int
    passed: int
    failed: int
    errors: int
    percent: int


@dataclass(frozen=True)
class ResultRow:
    name: str
    id: str
    evaluation: str
    evaluation_name: str
    display_name: str
    outcome: str
    state: str
    persona: str
    created: str
    run: str = ""
    """The run's ID."""
    version: str = ""


@dataclass(frozen=True)
class Delta:
    evaluation: str
    evaluation_name: str
    display_name: str
    before: str
    after: str
    before_rate: str
    after_rate: str
    changed: str
    """"fixed", "broke", "new", "gone" or ""."""
    metrics: list[tuple[str, str, str, str]]
    """(metric, before, after, delta)."""


# --- pure helpers --------------------------------------------------------------------------------------------


def message_text(message: Message | None) -> str:
    if message is None:
        return ""
    parts: list[str] = []
    for chunk in message.chunks or []:
        if chunk.text is not None:
            parts.append(chunk.text)
        elif chunk.transcript is not None:
            parts.append(chunk.transcript)
        elif chunk.payload is not None:
            parts.append(pretty(chunk.payload))
    return "\n".join(parts)


def _tool_side(exchange: ToolCall | ToolResponse | None, body: Any) -> Side:
    if exchange is None:
        return Side(missing=True)
    title = exchange.display_name or short(exchange.tool) or (
        exchange.toolset_tool.tool_id if exchange.toolset_tool else "") or "tool"
    return Side(title=title or "", json=pretty(body or {}))


def _transfer_side(transfer: AgentTransfer | None) -> Side:
    if transfer is None:
        return Side(missing=True)
    return Side(title=transfer.display_name or short(transfer.target_agent), text=transfer.target_agent or "")


def _actual_tool(outcome: GoldenExpectationOutcome) -> Side:
    call = outcome.observed_tool_call
    return _tool_side(call, call.args if call else None)


def golden_check(outcome: GoldenExpectationOutcome) -> Check:
    expectation = outcome.expectation
    kind = (expectation.condition if expectation else None) or "unknown"
    scores: list[str] = []
    expected, actual = Side(), Side(missing=True)
    if expectation is not None:
        if expectation.tool_call is not None:
            expected = _tool_side(expectation.tool_call, expectation.tool_call.args)
            actual = _actual_tool(outcome)
        elif expectation.tool_response is not None:
            expected = _tool_side(expectation.tool_response, expectation.tool_response.response)
            answer = outcome.observed_tool_response
            actual = _tool_side(answer, answer.response if answer else None)
        elif expectation.mock_tool_response is not None:
            expected = _tool_side(expectation.mock_tool_response, expectation.mock_tool_response.response)
            expected = Side(title=f"{expected.title} (mocked answer)", json=expected.json)
            actual = _actual_tool(outcome)
        elif expectation.agent_response is not None:
            comparison = expectation.comparison_type.value if expectation.comparison_type else "SEMANTIC_SIMILARITY"
            expected = Side(title=comparison, text=message_text(expectation.agent_response))
            observed = outcome.observed_agent_response
            actual = Side(text=message_text(observed)) if observed is not None else Side(missing=True)
        elif expectation.agent_transfer is not None:
            expected = _transfer_side(expectation.agent_transfer)
            actual = _transfer_side(outcome.observed_agent_transfer)
        elif expectation.updated_variables is not None:
            expected = Side(json=pretty(expectation.updated_variables))
            actual = Side(text="(the result reports the verdict, not the variables)", missing=True)
        elif expectation.no_tool_calls:
            expected = Side(text="no tool call")
            actual = _actual_tool(outcome) if outcome.observed_tool_call else Side(text="no tool call")
    if outcome.observed_payload is not None:
        actual = Side(title="payload", json=pretty(outcome.observed_payload))
    if (similarity := outcome.semantic_similarity_result) is not None:
        scores.append(f"semantic similarity {similarity.score}/4 {similarity.label or ''}: {similarity.explanation or ''}")
    if (invocation := outcome.tool_invocation_result) is not None:
        score = invocation.parameter_correctness_score
        scores.append(f"parameter correctness {score if score is not None else '?'}: {invocation.explanation or ''}")
    return Check(kind.replace("_", " "), (expectation.note or "") if expectation else "", expected, actual,
                 _outcome(outcome.outcome), scores)


def scenario_check(outcome: ScenarioExpectationOutcome) -> Check:
    expectation = outcome.expectation
    if expectation is not None and expectation.tool_expectation is not None:
        wanted = expectation.tool_expectation
        call = wanted.expected_tool_call
        expected = _tool_side(call, call.args if call else None)
        if wanted.mock_tool_response is not None:
            expected = Side(title=expected.title, json=expected.json + "\n→ mocked answer\n" +
                            pretty(wanted.mock_tool_response.response or {}))
        observed = outcome.observed_tool_call
        actual = Side(missing=True)
        if observed is not None and observed.tool_call is not None:
            actual = _tool_side(observed.tool_call, observed.tool_call.args)
            if observed.tool_response is not None:
                actual = Side(title=actual.title, json=actual.json + "\n→ answer\n" +
                              pretty(observed.tool_response.response or {}))
        return Check("tool call", "", expected, actual, _outcome(outcome.outcome))
    expected = Side(text=message_text(expectation.agent_response if expectation else None))
    said = outcome.observed_agent_response
    actual = Side(text=message_text(said)) if said is not None else Side(missing=True)
    return Check("agent response", "", expected, actual, _outcome(outcome.outcome))


def _verdict(title: str, result: Any, outcome: str = "") -> Verdict | None:
    if result is None:
        return None
    score = getattr(result, "score", None)
    return Verdict(title, "" if score is None else str(score), getattr(result, "label", None) or "",
                   getattr(result, "explanation", None) or "", outcome)


def golden_turns(result: EvaluationResult, evaluation: Evaluation | None) -> list[TurnView]:
    """Each replayed turn: the golden's user inputs, each expectation against what happened, the turn's
    scores."""
    golden_turns_ = (evaluation.golden.turns or []) if evaluation and evaluation.golden else []
    replays = (result.golden_result.turn_replay_results or []) if result.golden_result else []
    turns: list[TurnView] = []
    for index, replay in enumerate(replays):
        inputs: list[Side] = []
        if index < len(golden_turns_):
            for step in golden_turns_[index].steps or []:
                said = step.user_input
                if said is None:
                    continue
                if said.text is not None:
                    inputs.append(Side(text=said.text))
                elif said.event is not None:
                    inputs.append(Side(title="event", json=pretty(said.event.model_dump(by_alias=True, exclude_none=True))))
                else:
                    inputs.append(Side(title="input", json=pretty(said.model_dump(by_alias=True, exclude_none=True,
                                                                                  exclude={"audio"}))))
        turns.append(_turn(index + 1, inputs, replay))
    return turns


def _turn(index: int, inputs: list[Side], replay: TurnReplayResult) -> TurnView:
    checks = [golden_check(outcome) for outcome in replay.expectation_outcome or []]
    verdicts = [verdict for verdict in (
        _verdict("Semantic similarity (0–4)", replay.semantic_similarity_result,
                 _outcome(replay.semantic_similarity_result.outcome) if replay.semantic_similarity_result else ""),
        _verdict("Hallucination (1 justified, 0 not, −1 nothing to assess)", replay.hallucination_result),
    ) if verdict is not None]
    overall = replay.overall_tool_invocation_result
    if overall is not None:
        verdicts.append(Verdict("Expected tools invoked", f"{overall.tool_invocation_score}", "", "",
                                _outcome(overall.outcome)))
    if replay.tool_ordered_invocation_score is not None:
        verdicts.append(Verdict("Expected tools invoked in order", f"{replay.tool_ordered_invocation_score}", "", ""))
    error = ""
    if replay.error_info is not None:
        error = f"{replay.error_info.error_type or 'ERROR'}: {replay.error_info.error_message or ''}"
    outcomes = [check.outcome for check in checks] + [verdict.outcome for verdict in verdicts]
    outcome = "FAIL" if error or "FAIL" in outcomes else ("PASS" if "PASS" in outcomes else "")
    return TurnView(index, inputs, checks, verdicts, _seconds(replay.turn_latency), replay.conversation or "",
                    error, outcome)


def check_share(result: EvaluationResult) -> float:
    """The share of a result's checks that passed (expectations, turn-level verdicts, rubrics, milestones)."""
    outcomes: list[str] = []
    if result.golden_result:
        for replay in result.golden_result.turn_replay_results or []:
            outcomes += [_outcome(o.outcome) for o in replay.expectation_outcome or []]
            if replay.semantic_similarity_result:
                outcomes.append(_outcome(replay.semantic_similarity_result.outcome))
    if result.scenario_result:
        outcomes += [_outcome(o.outcome) for o in result.scenario_result.expectation_outcomes or []]
        outcomes += ["PASS" if (m.status and m.status.value == "COMPLETED") else "FAIL"
                     for m in result.scenario_result.milestone_results or []]
    judged = [outcome for outcome in outcomes if outcome in ("PASS", "FAIL")]
    if not judged:
        return 1.0 if _outcome(result.evaluation_status) == "PASS" else 0.0
    return sum(outcome == "PASS" for outcome in judged) / len(judged)


def trend(results: list[EvaluationResult]) -> list[TrendPoint]:
    """The last results, oldest on the left, as bars of the chart."""
    ordered = list(reversed(results[:10]))
    step = TREND_WIDTH // 10
    points = []
    for index, result in enumerate(ordered):
        share = check_share(result)
        outcome = _outcome(result.evaluation_status)
        state = result.execution_state.value if result.execution_state else ""
        height = max(int(share * (TREND_HEIGHT - 4)), 2)
        label = f"{outcome or state or 'no outcome'} · {share:.0%} of checks passed · {str(result.create_time or '')[:19]}"
        points.append(TrendPoint(f"/console/{result.name}", outcome, state, str(result.create_time or ""), share,
                                 index * step + 2, height, label))
    return points


def version_metrics(metrics: AggregatedMetrics | None) -> list[VersionMetrics]:
    rows = []
    for group in (metrics.metrics_by_app_version or []) if metrics else []:
        similarity = [m.score for m in group.semantic_similarity_metrics or [] if m.score is not None]
        hallucination = [m.score for m in group.hallucination_metrics or [] if m.score is not None]
        latency = [m.average_latency for m in group.turn_latency_metrics or [] if m.average_latency is not None]
        tools = [f"{short(t.tool)} {t.pass_count or 0}✓ {t.fail_count or 0}✗" for t in group.tool_metrics or []]
        rows.append(VersionMetrics(group.app_version_id or "draft", group.pass_count or 0, group.fail_count or 0,
                                   f"{similarity[0]:.2f}" if similarity else "",
                                   f"{hallucination[0]:.2f}" if hallucination else "",
                                   _seconds(latency[0]) if latency else "", tools))
    return rows


def evaluation_row(evaluation: Evaluation) -> EvaluationRow:
    recent = evaluation.last_ten_results or []
    latest = recent[0] if recent else evaluation.last_completed_result
    passed = failed = 0
    for group in (evaluation.aggregated_metrics.metrics_by_app_version or []) if evaluation.aggregated_metrics else []:
        passed += group.pass_count or 0
        failed += group.fail_count or 0
    latest_text = ""
    if latest is not None:
        latest_text = _outcome(latest.evaluation_status) or (latest.execution_state.value if latest.execution_state else "")
    return EvaluationRow(evaluation.name or "", short(evaluation.name), evaluation.display_name or "",
                         "scenario" if evaluation.scenario is not None else "golden", evaluation.tags or [],
                         bool(evaluation.invalid), latest_text, f"/console/{latest.name}" if latest else "",
                         passed, failed, trend(evaluation.last_ten_results or []))


def run_row(run: EvaluationRun) -> RunRow:
    progress = run.progress
    total = (progress.total_count or 0) if progress else 0
    completed = (progress.completed_count or 0) if progress else 0
    errors = (progress.error_count or 0) if progress else 0
    finished = completed + errors if completed + errors <= total else completed
    return RunRow(run.name or "", short(run.name), run.display_name or "", run.state.value if run.state else "",
                  str(run.create_time or ""), run.app_version_display_name or short(run.app_version) or "draft",
                  run.evaluation_type.value if run.evaluation_type else "", total, completed,
                  (progress.passed_count or 0) if progress else 0, (progress.failed_count or 0) if progress else 0,
                  errors, int(finished * 100 / total) if total else 0)


def result_row(result: EvaluationResult, names: dict[str, str]) -> ResultRow:
    evaluation = (result.name or "").split("/results/")[0]
    return ResultRow(result.name or "", short(result.name), short(evaluation), evaluation,
                     names.get(evaluation, ""), _outcome(result.evaluation_status),
                     result.execution_state.value if result.execution_state else "",
                     result.persona.display_name or short(result.persona.name) if result.persona else "",
                     str(result.create_time or ""), short(result.evaluation_run),
                     result.app_version_display_name or short(result.app_version) or "draft")


def _status(passed: int, failed: int, errors: int) -> str:
    if failed:
        return "FAIL"
    if errors:
        return "ERROR"
    return "PASS" if passed else ""


def _means(results: list[EvaluationResult]) -> dict[str, float]:
    """Per metric, the mean over a run's results of one evaluation."""
    values: dict[str, list[float]] = {}
    for result in results:
        values.setdefault("checks passed", []).append(check_share(result))
        for replay in (result.golden_result.turn_replay_results or []) if result.golden_result else []:
            if replay.semantic_similarity_result and replay.semantic_similarity_result.score is not None:
                values.setdefault("semantic similarity", []).append(replay.semantic_similarity_result.score)
            if replay.hallucination_result and replay.hallucination_result.score not in (None, -1):
                values.setdefault("hallucination", []).append(float(replay.hallucination_result.score or 0))
            if replay.overall_tool_invocation_result and replay.overall_tool_invocation_result.tool_invocation_score is not None:
                values.setdefault("tools invoked", []).append(replay.overall_tool_invocation_result.tool_invocation_score)
        if result.scenario_result and result.scenario_result.user_goal_satisfaction_result:
            score = result.scenario_result.user_goal_satisfaction_result.score
            if score is not None:
                values.setdefault("user goal", []).append(float(score))
    return {key: sum(found) / len(found) for key, found in values.items() if found}


def compare(before: EvaluationRun, after: EvaluationRun, before_results: list[EvaluationResult],
            after_results: list[EvaluationResult], names: dict[str, str],
            only: Iterable[str] | None = None) -> list[Delta]:
    """Per evaluation of either run (or of ``only`` those): its status and pass rate in each, whether it
    flipped, metric deltas."""
    summaries_a = before.evaluation_run_summaries or {}
    summaries_b = after.evaluation_run_summaries or {}

    def grouped(results: list[EvaluationResult]) -> dict[str, list[EvaluationResult]]:
        groups: dict[str, list[EvaluationResult]] = {}
        for result in results:
            groups.setdefault((result.name or "").split("/results/")[0], []).append(result)
        return groups

    results_a, results_b = grouped(before_results), grouped(after_results)
    deltas = []
    compared = set(summaries_a) | set(summaries_b)
    for evaluation in sorted(compared if only is None else compared & set(only)):
        a, b = summaries_a.get(evaluation), summaries_b.get(evaluation)
        status_a = _status(a.passed_count or 0, a.failed_count or 0, a.error_count or 0) if a else ""
        status_b = _status(b.passed_count or 0, b.failed_count or 0, b.error_count or 0) if b else ""

        def rate(summary: Any) -> str:
            if summary is None:
                return ""
            total = (summary.passed_count or 0) + (summary.failed_count or 0) + (summary.error_count or 0)
            return f"{summary.passed_count or 0}/{total}"

        if a is None:
            changed = "new"
        elif b is None:
            changed = "gone"
        elif status_a == "PASS" and status_b in ("FAIL", "ERROR"):
            changed = "broke"
        elif status_a in ("FAIL", "ERROR") and status_b == "PASS":
            changed = "fixed"
        else:
            changed = ""
        means_a, means_b = _means(results_a.get(evaluation, [])), _means(results_b.get(evaluation, []))
        metrics = []
        for metric in sorted(set(means_a) | set(means_b)):
            value_a, value_b = means_a.get(metric), means_b.get(metric)
            delta = f"{value_b - value_a:+.2f}" if value_a is not None and value_b is not None else ""
            metrics.append((metric, "" if value_a is None else f"{value_a:.2f}",
                            "" if value_b is None else f"{value_b:.2f}", delta))
        deltas.append(Delta(short(evaluation), evaluation, names.get(evaluation, ""), status_a, status_b, rate(a),
                            rate(b), changed, metrics))
    order = {"broke": 0, "fixed": 1, "new": 2, "gone": 3, "": 4}
    return sorted(deltas, key=lambda delta: order[delta.changed])


# --- the pages -----------------------------------------------------------------------------------------------


def _with_query(request: Request, key: str, value: str) -> str:
    """This page's URL with ``key`` set to ``value`` (left out when empty), its other parameters kept."""
    kept = [(name, text) for name, text in request.query_params.multi_items() if name != key]
    if value:
        kept.append((key, value))
    return f"{request.url.path}?{urlencode(kept)}" if kept else request.url.path


def _at_results(link: str) -> str:
    """A link to another page of an evaluation's results, scrolled to them."""
    return f"{link}#results" if link else ""


def _app(request: Request) -> str:
    return f"{location_of(request)}/apps/{request.path_params['app']}"


@dataclass
class EvaluationPages:
    console: Console

    async def _call(self, viewer: Viewer, tool: str, arguments: dict[str, Any], response: type[Resp]) -> Resp:
        return await self.console.tools.call(tool, arguments, viewer.caller, response)

    async def _names(self, viewer: Viewer, evaluations: Iterable[str]) -> dict[str, str]:
        """Display names of the evaluations a page shows, by resource name ("" for one deleted since). Only
        those: listing the app's evaluations instead gave each its aggregates and newest results, a second
        for 500 of them, whatever the page showed."""
        names: dict[str, str] = {}
        for name in sorted(set(evaluations)):
            try:
                names[name] = (await self._call(viewer, "get_evaluation", {"name": name}, Evaluation)).display_name or ""
            except NotFound:
                names[name] = ""
        return names

    async def _datasets(self, viewer: Viewer, app: str) -> ListDatasetsResponse:
        """The app's datasets (the first 100): the tool's own response class, read into a typed one."""
        answered = await self._call(viewer, "list_evaluation_datasets", {"parent": app, "pageSize": 100},
                                    DATASETS_RESPONSE)
        return ListDatasetsResponse.model_validate(answered, from_attributes=True)

    async def evaluations(self, request: Request, viewer: Viewer) -> Response:
        app_name = _app(request)
        app = await self._call(viewer, "get_app", {"name": app_name}, App)
        dataset = request.query_params.get("dataset", "")
        arguments = with_paging(request, {"parent": app_name, "lastTenResults": True})
        if dataset:
            arguments["evaluationFilter"] = f'evaluation_datasets:"{app_name}/evaluationDatasets/{check_id(dataset, "dataset")}"'
        listed = await self._call(viewer, "list_evaluations", arguments, ListEvaluationsResponse)
        datasets = await self._datasets(viewer, app_name)
        rows = [evaluation_row(evaluation) for evaluation in listed.evaluations or []]
        choices = [(e.name or "", e.display_name or short(e.name)) for e in listed.evaluations or []]
        return self.console.render(
            request, "evaluations_list.html", viewer, app=app, app_name=app_name, rows=rows,
            datasets=datasets.evaluation_datasets or [], dataset=dataset, choices=choices,
            trend_width=TREND_WIDTH, trend_height=TREND_HEIGHT,
            next_page=page_link(request, listed.next_page_token),
            first_page=page_link(request, "") if request.query_params.get("pageToken") else "")

    async def evaluation(self, request: Request, viewer: Viewer) -> Response:
        app_name = _app(request)
        name = f"{app_name}/evaluations/{request.path_params['evaluation']}"
        evaluation = await self._call(viewer, "get_evaluation", {"name": name, "lastTenResults": True}, Evaluation)
        row = evaluation_row(evaluation)
        definition = []
        if evaluation.golden is not None:
            for index, turn in enumerate(evaluation.golden.turns or []):
                steps = []
                for step in turn.steps or []:
                    if step.user_input is not None:
                        said = step.user_input
                        steps.append(("user", Side(text=said.text) if said.text is not None else
                                      Side(json=pretty(said.model_dump(by_alias=True, exclude_none=True,
                                                                       exclude={"audio"})))))
                    elif step.agent_transfer is not None:
                        steps.append(("transfer", _transfer_side(step.agent_transfer)))
                    elif step.expectation is not None:
                        check = golden_check(GoldenExpectationOutcome(expectation=step.expectation))
                        steps.append((f"expect {check.kind}", Side(title=" ".join(
                            part for part in (check.expected.title, check.note) if part),
                            text=check.expected.text, json=check.expected.json)))
                definition.append((index + 1, steps))
        # Its results a page at a time, newest first, with the tool's keyset tokens: an evaluation run ten
        # thousand times lists no more than a page of them.
        arguments = with_paging(request, {"parent": name})
        arguments.setdefault("pageSize", RESULTS_SHOWN)
        listed = await self._call(viewer, "list_evaluation_results", arguments, ListEvaluationResultsResponse)
        return self.console.render(
            request, "evaluations_evaluation.html", viewer, evaluation=evaluation, name=name, app_name=app_name,
            row=row, definition=definition, metrics=version_metrics(evaluation.aggregated_metrics),
            trend_width=TREND_WIDTH, trend_height=TREND_HEIGHT,
            results=[result_row(result, {}) for result in listed.evaluation_results or []],
            next_page=_at_results(page_link(request, listed.next_page_token)),
            first_page=_at_results(page_link(request, "")) if request.query_params.get("pageToken") else "")

    async def result(self, request: Request, viewer: Viewer) -> Response:
        app_name = _app(request)
        evaluation_name = f"{app_name}/evaluations/{request.path_params['evaluation']}"
        name = f"{evaluation_name}/results/{request.path_params['result']}"
        result = await self._call(viewer, "get_evaluation_result", {"name": name}, EvaluationResult)
        evaluation: Evaluation | None
        try:
            evaluation = await self._call(viewer, "get_evaluation", {"name": evaluation_name}, Evaluation)
        except NotFound:
            evaluation = None
        scenario = result.scenario_result
        scenario_checks = [scenario_check(o) for o in scenario.expectation_outcomes or []] if scenario else []
        goal = None
        if scenario is not None:
            goal = _verdict("User goal (2 graceful handoff, 1 completed, 0 not, −1 unspecified)",
                            scenario.user_goal_satisfaction_result)
        error = ""
        if result.error_info is not None:
            error = f"{result.error_info.error_type or 'ERROR'}: {result.error_info.error_message or ''}"
        elif result.error is not None:
            error = f"{result.error.code}: {result.error.message or ''}"
        return self.console.render(
            request, "evaluations_result.html", viewer, result=result, name=name, app_name=app_name,
            evaluation=evaluation, evaluation_name=evaluation_name, turns=golden_turns(result, evaluation),
            scenario=scenario, scenario_checks=scenario_checks, goal=goal, error=error,
            thresholds=pretty(result.evaluation_metrics_thresholds.model_dump(by_alias=True, exclude_none=True))
            if result.evaluation_metrics_thresholds else "")

    async def runs(self, request: Request, viewer: Viewer) -> Response:
        if request.method == "POST":
            return await self.start(request, viewer)
        app_name = _app(request)
        app = await self._call(viewer, "get_app", {"name": app_name}, App)
        listed = await self._call(viewer, "list_evaluation_runs", with_paging(request, {"parent": app_name}),
                                  ListEvaluationRunsResponse)
        return self.console.render(
            request, "evaluations_runs.html", viewer, app=app, app_name=app_name,
            runs=[run_row(run) for run in listed.evaluation_runs or []],
            next_page=page_link(request, listed.next_page_token),
            first_page=page_link(request, "") if request.query_params.get("pageToken") else "")

    async def run(self, request: Request, viewer: Viewer) -> Response:
        app_name = _app(request)
        name = f"{app_name}/evaluationRuns/{request.path_params['run']}"
        run = await self._call(viewer, "get_evaluation_run", {"name": name}, EvaluationRun)
        arguments = with_paging(request, {"parent": f"{app_name}/evaluations/-",
                                      "filter": f'evaluation_run = "{name}"'})
        listed = await self._call(viewer, "list_evaluation_results", arguments, ListEvaluationResultsResponse)
        others = await self._call(viewer, "list_evaluation_runs", {"parent": app_name, "pageSize": 50},
                                  ListEvaluationRunsResponse)
        # The run's summaries by evaluation ID, SHOWN_EVALUATIONS at a time after ?evaluationsAfter=<ID>.
        after = request.query_params.get("evaluationsAfter", "")
        every = sorted((short(key), key, value) for key, value in (run.evaluation_run_summaries or {}).items())
        following = [summary for summary in every if summary[0] > after]
        shown = following[:SHOWN_EVALUATIONS]
        results = listed.evaluation_results or []
        names = await self._names(viewer, [key for _, key, _ in shown] +
                                  [(result.name or "").split("/results/")[0] for result in results])
        summaries = [(id_, key, names.get(key, ""), value.passed_count or 0, value.failed_count or 0,
                      value.error_count or 0) for id_, key, value in shown]
        row = run_row(run)
        return self.console.render(
            request, "evaluations_run.html", viewer, run=run, row=row, name=name, app_name=app_name,
            results=[result_row(result, names) for result in results],
            summaries=summaries, others=[run_row(o) for o in others.evaluation_runs or [] if o.name != name],
            summaries_total=len(every),
            summaries_next=_with_query(request, "evaluationsAfter", shown[-1][0])
            if len(following) > SHOWN_EVALUATIONS else "",
            summaries_first=_with_query(request, "evaluationsAfter", "") if after else "",
            running=row.state == "RUNNING",
            next_page=page_link(request, listed.next_page_token),
            first_page=page_link(request, "") if request.query_params.get("pageToken") else "")

    async def _results_of(self, viewer: Viewer, evaluation: str, run: str) -> tuple[list[EvaluationResult], bool]:
        """The newest COMPARED_RESULTS results of ``evaluation`` in ``run``, and whether it has more."""
        listed = await self._call(viewer, "list_evaluation_results", {
            "parent": evaluation, "pageSize": COMPARED_RESULTS, "filter": f'evaluation_run = "{run}"'},
            ListEvaluationResultsResponse)
        return listed.evaluation_results or [], bool(listed.next_page_token)

    async def comparison(self, request: Request, viewer: Viewer) -> Response:
        app_name = _app(request)
        name = f"{app_name}/evaluationRuns/{request.path_params['run']}"
        other = request.query_params.get("with", "")
        if not other:
            raise InvalidArgument("with: name the run to compare with (?with=<run ID>)")
        other_name = f"{app_name}/evaluationRuns/{check_id(short(other), 'with')}"
        if other_name == name:
            raise InvalidArgument("with: a run compared with itself changes nothing; pick another run")
        after = await self._call(viewer, "get_evaluation_run", {"name": name}, EvaluationRun)
        before = await self._call(viewer, "get_evaluation_run", {"name": other_name}, EvaluationRun)
        if str(before.create_time or "") > str(after.create_time or ""):  # the older run is "before", either way
            before, after = after, before
        # Verdicts of every evaluation of either run from their summaries; SHOWN_EVALUATIONS at a time (?page=N)
        # with their names and metrics, read from their own results in each run.
        deltas = compare(before, after, [], [], {})
        asked = request.query_params.get("page", "1")
        pages = max(1, -(-len(deltas) // SHOWN_EVALUATIONS))
        if not asked.isdigit() or len(asked) > 9 or not 1 <= int(asked) <= pages:
            raise InvalidArgument(f"page: {asked[:20]!r} is not a page of this comparison (it has {pages})")
        page = int(asked)
        shown = [delta.evaluation_name for delta in deltas[(page - 1) * SHOWN_EVALUATIONS:page * SHOWN_EVALUATIONS]]
        results_before: list[EvaluationResult] = []
        results_after: list[EvaluationResult] = []
        cut = False
        for evaluation in shown:
            for run, results in ((before, results_before), (after, results_after)):
                read, more = await self._results_of(viewer, evaluation, run.name or "")
                results += read
                cut = cut or more
        names = await self._names(viewer, shown)
        return self.console.render(
            request, "evaluations_compare.html", viewer, app_name=app_name, name=name, before=run_row(before),
            after=run_row(after), deltas=compare(before, after, results_before, results_after, names, shown),
            cut=cut, compared=len(deltas), most_results=COMPARED_RESULTS,
            changed=sum(1 for delta in deltas if delta.changed in ("broke", "fixed")),
            previous_page=_with_query(request, "page", str(page - 1)) if page > 1 else "",
            next_page=_with_query(request, "page", str(page + 1)) if page < pages else "")

    async def generate(self, request: Request, viewer: Viewer) -> Response:
        """The conversation page's button: a golden evaluation made from the conversation (its inputs the steps,
        what the agent did the expectations), then to the new evaluation's page."""
        form = await self.console.checked_form(request)
        if isinstance(form, Response):
            return form
        conversation = f"{_app(request)}/conversations/{check_id(request.path_params['conversation'], 'conversation')}"
        evaluation = await self._call(viewer, "generate_evaluation", {"conversation": conversation}, Evaluation)
        return RedirectResponse(f"/console/{evaluation.name}", status_code=303)

    async def start(self, request: Request, viewer: Viewer) -> Response:
        """The evaluations page's form: run a dataset or an evaluation, then to the new run's page."""
        form = await self.console.checked_form(request)
        if isinstance(form, Response):
            return form
        app_name = _app(request)
        target = form.get("target", "")
        kind, _, target_id = target.partition(":")
        arguments: dict[str, Any] = {"app": app_name}
        if kind == "dataset":
            arguments["evaluationDataset"] = f"{app_name}/evaluationDatasets/{check_id(target_id, 'target')}"
        elif kind == "evaluation":
            arguments["evaluations"] = [f"{app_name}/evaluations/{check_id(target_id, 'target')}"]
        else:
            raise InvalidArgument("target: pick a dataset or an evaluation to run")
        if version := form.get("appVersion", "").strip():
            arguments["appVersion"] = f"{app_name}/versions/{check_id(short(version), 'appVersion')}"
        if count := form.get("runCount", "").strip():
            if not count.isdigit() or len(count) > 4:
                raise InvalidArgument(f"runCount: {count[:20]!r} is not a whole number")
            arguments["runCount"] = int(count)
        if display := form.get("displayName", "").strip():
            arguments["displayName"] = display[:200]
        operation = await self._call(viewer, "run_evaluation", arguments, Operation)
        run = str((operation.metadata or {}).get("evaluationRun") or "")
        if not run.startswith(f"{app_name}/evaluationRuns/"):
            return RedirectResponse(f"/console/{app_name}/evaluationRuns", status_code=303)
        return RedirectResponse(f"/console/{run}", status_code=303)

