"""AggregatedMetrics of a set of evaluation results (an evaluation's, or a dataset's), as in seed 001.

Only results whose executionState is COMPLETED count. Results are grouped by app version ID (the last
segment of ``appVersion``; results on the draft have none and form one group with ``appVersionId``
unset), groups in order of first appearance. Per group, and per turn index (``metricsByTurn``, 0-based,
in index order) with the same per-turn metrics:

- ``toolMetrics``: per tool (ordered by name), the PASS and FAIL counts of the toolCall expectation
  outcomes that are not SKIPPED (any outcome other than PASS counts as a failure);
- ``semanticSimilarityMetrics``: the mean of the turns' semanticSimilarityResult scores (omitted when
  there is none);
- ``hallucinationMetrics``: the mean of the hallucination scores that are 0 or 1 (-1, "no claim", is
  left out; omitted when there is none);
- ``toolCallLatencyMetrics``: per tool (ordered by name), the mean executionLatency of its calls;
- ``turnLatencyMetrics``: the mean turn latency (omitted when there is none);
- ``passCount`` / ``failCount`` (per group only): the results' evaluationStatus.

Mean durations are exact to the nanosecond (half a nanosecond rounds up).

What a result contributes is read by :func:`_turn_samples`: a golden result's replayed turns; a scenario
result's turns are its conversation's, each with its hallucination score and its turn latency (the
result's root span's child spans), while its tool expectation outcomes and tool call latencies, which
are not kept per turn, count in the app version's totals only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from convener.api.protojson import Duration
from convener.ces.evaluation.models import (
    AggregatedMetrics,
    EvaluationResult,
    ExecutionState,
    HallucinationMetrics,
    MetricsByAppVersion,
    MetricsByTurn,
    Outcome,
    SemanticSimilarityMetrics,
    ToolCallLatencyMetrics,
    ToolMetrics,
    TurnLatencyMetrics,
)
from convener.ces.evaluation.scoring import tool_name


@dataclass
class _TurnSample:
    """What one turn of one result contributes to the metrics."""

    tool_outcomes: list[tuple[str, bool]] = field(default_factory=list)
    semantic_similarity: int | None = None
    hallucination: int | None = None
    tool_latencies: list[tuple[str, Duration]] = field(default_factory=list)
    turn_latency: Duration | None = None


@dataclass
class _Totals:
    """Sums and counts of turn samples, so that a result can be taken out as exactly as it was put in (means are
    computed on read from exact integer sums: the same figures as averaging the samples themselves)."""

    samples: int = 0
    tools: dict[str, list[int]] = field(default_factory=dict)
    """tool -> [passes, failures]"""
    similarity: list[int] = field(default_factory=lambda: [0, 0])
    hallucination: list[int] = field(default_factory=lambda: [0, 0])
    tool_latencies: dict[str, list[int]] = field(default_factory=dict)
    """tool -> [nanoseconds, calls]"""
    turn_latency: list[int] = field(default_factory=lambda: [0, 0])

    def add(self, sample: _TurnSample, sign: int = 1) -> None:
        self.samples += sign
        for tool, passed in sample.tool_outcomes:
            counts = self.tools.setdefault(tool, [0, 0])
            counts[0 if passed else 1] += sign
            if counts == [0, 0]:
                del self.tools[tool]
        if sample.semantic_similarity is not None:
            self.similarity[0] += sign * sample.semantic_similarity
            self.similarity[1] += sign
        if sample.hallucination in (0, 1):
            self.hallucination[0] += sign * (sample.hallucination or 0)
            self.hallucination[1] += sign
        for tool, latency in sample.tool_latencies:
            sums = self.tool_latencies.setdefault(tool, [0, 0])
            sums[0] += sign * latency.total_nanos
            sums[1] += sign
            if sums[1] == 0:
                del self.tool_latencies[tool]
        if sample.turn_latency is not None:
            self.turn_latency[0] += sign * sample.turn_latency.total_nanos
            self.turn_latency[1] += sign

    def to_json(self) -> dict[str, Any]:
        return {"samples": self.samples, "tools": self.tools, "similarity": self.similarity,
                "hallucination": self.hallucination, "toolLatencies": self.tool_latencies,
                "turnLatency": self.turn_latency}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Totals:
        return cls(samples=data["samples"], tools={k: list(v) for k, v in data["tools"].items()},
                   similarity=list(data["similarity"]), hallucination=list(data["hallucination"]),
                   tool_latencies={k: list(v) for k, v in data["toolLatencies"].items()},
                   turn_latency=list(data["turnLatency"]))

    def tool_metrics(self) -> list[ToolMetrics] | None:
        return [ToolMetrics(tool=tool, pass_count=counts[0], fail_count=counts[1])
                for tool, counts in sorted(self.tools.items())] or None

    def semantic_similarity_metrics(self) -> list[SemanticSimilarityMetrics] | None:
        total, count = self.similarity
        return [SemanticSimilarityMetrics(score=total / count)] if count else None

    def hallucination_metrics(self) -> list[HallucinationMetrics] | None:
        total, count = self.hallucination
        return [HallucinationMetrics(score=total / count)] if count else None

    def tool_call_latency_metrics(self) -> list[ToolCallLatencyMetrics] | None:
        return [ToolCallLatencyMetrics(tool=tool, average_latency=_mean_nanos(*sums))
                for tool, sums in sorted(self.tool_latencies.items())] or None

    def turn_latency_metrics(self) -> list[TurnLatencyMetrics] | None:
        total, count = self.turn_latency
        return [TurnLatencyMetrics(average_latency=_mean_nanos(total, count))] if count else None


def _mean_nanos(total: int, count: int) -> Duration:
    """The mean, rounded to the nearest nanosecond (halves up)."""
    return Duration((2 * total + count) // (2 * count))


def _mean(values: Sequence[int]) -> float:
    return sum(values) / len(values)


def mean_duration(durations: Sequence[Duration]) -> Duration:
    """The mean, rounded to the nearest nanosecond (halves up)."""
    return _mean_nanos(sum(d.total_nanos for d in durations), len(durations))


def _scenario_samples(result: EvaluationResult) -> tuple[list[_TurnSample], _TurnSample]:
    """The per-turn samples of a scenario result, and what counts in the totals only."""
    scenario = result.scenario_result
    assert scenario is not None
    spans = (result.root_span.child_spans if result.root_span else None) or []
    scores = scenario.hallucination_result or []
    turns = [_TurnSample(hallucination=scores[index].score if index < len(scores) else None,
                         turn_latency=span.end_time - span.start_time
                         if span.start_time is not None and span.end_time is not None else None)
             for index, span in enumerate(spans)]
    whole = _TurnSample()
    for outcome in scenario.expectation_outcomes or []:
        expectation = outcome.expectation
        call = expectation.tool_expectation.expected_tool_call if expectation and expectation.tool_expectation else None
        name = tool_name(call) if call is not None else None
        if name is not None:
            whole.tool_outcomes.append((name, outcome.outcome == Outcome.PASS))
    whole.tool_latencies = [(latency.tool, latency.execution_latency) for latency in scenario.tool_call_latencies or []
                            if latency.tool is not None and latency.execution_latency is not None]
    return turns, whole


def _turn_samples(result: EvaluationResult) -> list[_TurnSample]:
    samples = []
    for replay in (result.golden_result.turn_replay_results if result.golden_result else None) or []:
        sample = _TurnSample(
            semantic_similarity=replay.semantic_similarity_result.score
            if replay.semantic_similarity_result is not None else None,
            hallucination=replay.hallucination_result.score if replay.hallucination_result is not None else None,
            turn_latency=replay.turn_latency,
        )
        for outcome in replay.expectation_outcome or []:
            expectation = outcome.expectation
            if expectation is None or expectation.tool_call is None or outcome.outcome == Outcome.SKIPPED:
                continue
            name = tool_name(expectation.tool_call)
            if name is not None:
                sample.tool_outcomes.append((name, outcome.outcome == Outcome.PASS))
        for latency in replay.tool_call_latencies or []:
            if latency.tool is not None and latency.execution_latency is not None:
                sample.tool_latencies.append((latency.tool, latency.execution_latency))
        samples.append(sample)
    return samples


COUNTED_FIELDS = ("executionState", "evaluationStatus", "appVersion", "goldenResult", "scenarioResult")
"""The fields of a stored result that its contribution to the metrics depends on (and a scenario's rootSpan)."""


def counted_view(body: dict[str, Any]) -> EvaluationResult:
    """A stored result's body, read only as far as the metrics need: a golden result's spans (most of its body)
    are not parsed."""
    view = {key: body[key] for key in COUNTED_FIELDS if key in body}
    if "scenarioResult" in body and "rootSpan" in body:
        view["rootSpan"] = body["rootSpan"]
    return EvaluationResult.model_validate(view)


def _counts(result: EvaluationResult) -> bool:
    return result.execution_state == ExecutionState.COMPLETED and (
        result.golden_result is not None or result.scenario_result is not None)


def app_version_id(result: EvaluationResult) -> str | None:
    """The last segment of the result's appVersion; None for the draft."""
    return result.app_version.rstrip("/").rsplit("/", 1)[-1] if result.app_version else None


ResultKey = tuple[int, str]
"""Where a result stands among its evaluation's: (create_time_us, result_id); the oldest counts first."""


@dataclass
class _Group:
    """One app version's results."""

    first: ResultKey
    """The oldest result counted in: groups are listed in the order their first results came."""
    results: int = 0
    passed: int = 0
    failed: int = 0
    totals: _Totals = field(default_factory=_Totals)
    by_turn: dict[int, _Totals] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"first": list(self.first), "results": self.results, "passed": self.passed, "failed": self.failed,
                "totals": self.totals.to_json(), "byTurn": [[index, totals.to_json()]
                                                             for index, totals in self.by_turn.items()]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Group:
        return cls(first=(int(data["first"][0]), str(data["first"][1])), results=data["results"],
                   passed=data["passed"], failed=data["failed"], totals=_Totals.from_json(data["totals"]),
                   by_turn={int(index): _Totals.from_json(totals) for index, totals in data["byTurn"]})


@dataclass
class Aggregate:
    """The sums behind an AggregatedMetrics, to which results are added and from which they can be taken out."""

    groups: dict[str | None, _Group] = field(default_factory=dict)

    def add(self, result: EvaluationResult, key: ResultKey, sign: int = 1) -> str | None | bool:
        """Count ``result`` in (``sign`` 1) or out (-1); results that do not count (not COMPLETED) change nothing.

        Returns False, or the app version ID (None for the draft) of a group whose first result was taken out
        while others remain: the caller finds the group's new first result (see ``refirst``)."""
        if not _counts(result):
            return False
        version = app_version_id(result)
        group = self.groups.get(version)
        if group is None:
            if sign < 0:
                return False
            group = self.groups[version] = _Group(first=key)
        elif sign > 0 and key < group.first:
            group.first = key
        group.results += sign
        if result.evaluation_status == Outcome.PASS:
            group.passed += sign
        elif result.evaluation_status == Outcome.FAIL:
            group.failed += sign
        if result.scenario_result is not None:
            samples, whole = _scenario_samples(result)
            group.totals.add(whole, sign)
        else:
            samples = _turn_samples(result)
        for index, sample in enumerate(samples):
            group.totals.add(sample, sign)
            turn = group.by_turn.setdefault(index, _Totals())
            turn.add(sample, sign)
            if turn.samples == 0:
                del group.by_turn[index]
        if group.results <= 0:
            del self.groups[version]
            return False
        return version if sign < 0 and key == group.first else False

    def refirst(self, version: str | None, key: ResultKey) -> None:
        self.groups[version].first = key

    def to_json(self) -> dict[str, Any]:
        return {"groups": [[version, group.to_json()] for version, group in self.groups.items()]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Aggregate:
        return cls(groups={version: _Group.from_json(group) for version, group in data["groups"]})

    def metrics(self) -> AggregatedMetrics:
        groups = sorted(self.groups.items(), key=lambda item: item[1].first)
        return AggregatedMetrics(metrics_by_app_version=[
            MetricsByAppVersion(
                app_version_id=version,
                tool_metrics=group.totals.tool_metrics(),
                semantic_similarity_metrics=group.totals.semantic_similarity_metrics(),
                hallucination_metrics=group.totals.hallucination_metrics(),
                tool_call_latency_metrics=group.totals.tool_call_latency_metrics(),
                turn_latency_metrics=group.totals.turn_latency_metrics(),
                pass_count=group.passed,
                fail_count=group.failed,
                metrics_by_turn=[
                    MetricsByTurn(
                        turn_index=index,
                        tool_metrics=totals.tool_metrics(),
                        semantic_similarity_metrics=totals.semantic_similarity_metrics(),
                        hallucination_metrics=totals.hallucination_metrics(),
                        tool_call_latency_metrics=totals.tool_call_latency_metrics(),
                        turn_latency_metrics=totals.turn_latency_metrics(),
                    ) for index, totals in sorted(group.by_turn.items())
                ] or None,
            ) for version, group in groups
        ] or None)


def aggregate(results: Iterable[EvaluationResult]) -> AggregatedMetrics:
    """The metrics of ``results``, oldest first."""
    sums = Aggregate()
    for index, result in enumerate(results):
        sums.add(result, (index, ""))
    return sums.metrics()
