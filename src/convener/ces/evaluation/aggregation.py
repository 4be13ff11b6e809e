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

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

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
    tools: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    similarities: list[int] = field(default_factory=list)
    hallucinations: list[int] = field(default_factory=list)
    tool_latencies: dict[str, list[Duration]] = field(default_factory=lambda: defaultdict(list))
    turn_latencies: list[Duration] = field(default_factory=list)

    def add(self, sample: _TurnSample) -> None:
        for tool, passed in sample.tool_outcomes:
            self.tools[tool][0 if passed else 1] += 1
        if sample.semantic_similarity is not None:
            self.similarities.append(sample.semantic_similarity)
        if sample.hallucination in (0, 1):
            self.hallucinations.append(sample.hallucination)
        for tool, latency in sample.tool_latencies:
            self.tool_latencies[tool].append(latency)
        if sample.turn_latency is not None:
            self.turn_latencies.append(sample.turn_latency)

    def tool_metrics(self) -> list[ToolMetrics] | None:
        return [ToolMetrics(tool=tool, pass_count=counts[0], fail_count=counts[1])
                for tool, counts in sorted(self.tools.items())] or None

    def semantic_similarity_metrics(self) -> list[SemanticSimilarityMetrics] | None:
        return [SemanticSimilarityMetrics(score=_mean(self.similarities))] if self.similarities else None

    def hallucination_metrics(self) -> list[HallucinationMetrics] | None:
        return [HallucinationMetrics(score=_mean(self.hallucinations))] if self.hallucinations else None

    def tool_call_latency_metrics(self) -> list[ToolCallLatencyMetrics] | None:
        return [ToolCallLatencyMetrics(tool=tool, average_latency=mean_duration(latencies))
                for tool, latencies in sorted(self.tool_latencies.items())] or None

    def turn_latency_metrics(self) -> list[TurnLatencyMetrics] | None:
        if not self.turn_latencies:
            return None
        return [TurnLatencyMetrics(average_latency=mean_duration(self.turn_latencies))]


def _mean(values: Sequence[int]) -> float:
    return sum(values) / len(values)


def mean_duration(durations: Sequence[Duration]) -> Duration:
    """The mean, rounded to the nearest nanosecond (halves up)."""
    total, count = sum(d.total_nanos for d in durations), len(durations)
    return Duration((2 * total + count) // (2 * count))


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


def _counts(result: EvaluationResult) -> bool:
    return result.execution_state == ExecutionState.COMPLETED and (
        result.golden_result is not None or result.scenario_result is not None)


def app_version_id(result: EvaluationResult) -> str | None:
    """The last segment of the result's appVersion; None for the draft."""
    return result.app_version.rstrip("/").rsplit("/", 1)[-1] if result.app_version else None


@dataclass
class _Group:
    totals: _Totals = field(default_factory=_Totals)
    by_turn: dict[int, _Totals] = field(default_factory=lambda: defaultdict(_Totals))
    passed: int = 0
    failed: int = 0


def aggregate(results: Iterable[EvaluationResult]) -> AggregatedMetrics:
    groups: dict[str | None, _Group] = {}
    for result in results:
        if not _counts(result):
            continue
        group = groups.setdefault(app_version_id(result), _Group())
        if result.evaluation_status == Outcome.PASS:
            group.passed += 1
        elif result.evaluation_status == Outcome.FAIL:
            group.failed += 1
        if result.scenario_result is not None:
            samples, whole = _scenario_samples(result)
            group.totals.add(whole)
        else:
            samples = _turn_samples(result)
        for index, sample in enumerate(samples):
            group.totals.add(sample)
            group.by_turn[index].add(sample)
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
        ) for version, group in groups.items()
    ] or None)
