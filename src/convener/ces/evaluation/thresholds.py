"""Effective thresholds, behaviours and metric switches of a golden evaluation (seed 001's defaults).

Thresholds are resolved in layers, lowest to highest; an unset field (or an ``*_UNSPECIFIED`` enum) of a
layer leaves the layer below in force:

1. the defaults: ``semanticSimilaritySuccessThreshold`` 3, ``overallToolInvocationCorrectnessThreshold``
   1.0, ``toolInvocationParameterCorrectnessThreshold`` 1.0, ``extraToolCallBehavior`` FAIL and the
   golden hallucination behaviour DISABLED;
2. ``evaluation.evaluationMetricsThresholdOverride`` (the golden hallucination behaviour is
   ``goldenHallucinationMetricBehavior``, falling back to the deprecated ``hallucinationMetricBehavior``);
3. per golden turn, ``turnLevelMetricsThresholdsOverride`` and ``hallucinationMetricBehaviorOverride``;
4. per expectation, ``expectationLevelMetricsThresholdsOverride``.

Metric switches come from ``evaluation.evaluationMetricsConfigOverride.goldenMetricsConfig``: semantic
similarity, turn-level tool correctness and step-level tool correctness are each enabled unless
explicitly false. An agentResponse expectation may override the semantic similarity switch
(``agentResponseSemanticSimilarityMetricsConfigOverride``) and turn the hallucination metric off
(``agentResponseHallucinationMetricsConfigOverride``).

:func:`effective_thresholds` is what every EvaluationResult reports in ``evaluationMetricsThresholds``:
the evaluation-level layers with every default filled in (the deprecated ``hallucinationMetricBehavior``
mirrors ``goldenHallucinationMetricBehavior``; the semantic similarity channel has no documented default
and is reported as given; the scenario hallucination behaviour is filled in, DISABLED by default, on
scenario evaluations' results).
"""

from __future__ import annotations

from dataclasses import dataclass

from convener.ces.evaluation.models import (
    Evaluation,
    EvaluationMetricsThresholds,
    ExpectationLevelMetricsThresholds,
    ExtraToolCallBehavior,
    GoldenEvaluationMetricsThresholds,
    GoldenExpectation,
    GoldenMetricsConfig,
    GoldenTurn,
    HallucinationMetricBehavior,
    ToolMatchingSettings,
    TurnLevelMetricsThresholds,
)

DEFAULT_SEMANTIC_SIMILARITY_SUCCESS_THRESHOLD = 3
DEFAULT_OVERALL_TOOL_INVOCATION_CORRECTNESS_THRESHOLD = 1.0
DEFAULT_TOOL_INVOCATION_PARAMETER_CORRECTNESS_THRESHOLD = 1.0
DEFAULT_EXTRA_TOOL_CALL_BEHAVIOR = ExtraToolCallBehavior.FAIL
DEFAULT_GOLDEN_HALLUCINATION_METRIC_BEHAVIOR = HallucinationMetricBehavior.DISABLED
DEFAULT_SCENARIO_HALLUCINATION_METRIC_BEHAVIOR = HallucinationMetricBehavior.DISABLED


def _behavior(value: HallucinationMetricBehavior | None) -> HallucinationMetricBehavior | None:
    return None if value in (None, HallucinationMetricBehavior.HALLUCINATION_METRIC_BEHAVIOR_UNSPECIFIED) else value


def _extra(value: ExtraToolCallBehavior | None) -> ExtraToolCallBehavior | None:
    return None if value in (None, ExtraToolCallBehavior.EXTRA_TOOL_CALL_BEHAVIOR_UNSPECIFIED) else value


@dataclass(frozen=True)
class Thresholds:
    """The settings in force at one level (evaluation or turn); expectations add their own on top."""

    semantic_similarity_success_threshold: int
    overall_tool_invocation_correctness_threshold: float
    tool_invocation_parameter_correctness_threshold: float
    extra_tool_call_behavior: ExtraToolCallBehavior
    golden_hallucination_metric_behavior: HallucinationMetricBehavior

    @property
    def hallucination_counts(self) -> bool:
        """Whether a hallucination score of 0 fails the evaluation."""
        return self.golden_hallucination_metric_behavior == HallucinationMetricBehavior.ENABLED

    def parameter_correctness_threshold(self, expectation: GoldenExpectation) -> float:
        override = expectation.expectation_level_metrics_thresholds_override
        if override is not None and override.tool_invocation_parameter_correctness_threshold is not None:
            return override.tool_invocation_parameter_correctness_threshold
        return self.tool_invocation_parameter_correctness_threshold

    def for_turn(self, turn: GoldenTurn) -> Thresholds:
        """These settings with the turn's overrides applied."""
        override = turn.turn_level_metrics_thresholds_override or TurnLevelMetricsThresholds()
        semantic = override.semantic_similarity_success_threshold
        overall = override.overall_tool_invocation_correctness_threshold
        return Thresholds(
            semantic_similarity_success_threshold=(
                self.semantic_similarity_success_threshold if semantic is None else semantic),
            overall_tool_invocation_correctness_threshold=(
                self.overall_tool_invocation_correctness_threshold if overall is None else overall),
            tool_invocation_parameter_correctness_threshold=self.tool_invocation_parameter_correctness_threshold,
            extra_tool_call_behavior=self.extra_tool_call_behavior,
            golden_hallucination_metric_behavior=(
                _behavior(turn.hallucination_metric_behavior_override) or self.golden_hallucination_metric_behavior),
        )


def evaluation_thresholds(evaluation: Evaluation) -> Thresholds:
    """Defaults < ``evaluation.evaluationMetricsThresholdOverride``."""
    override = evaluation.evaluation_metrics_threshold_override or EvaluationMetricsThresholds()
    golden = override.golden_evaluation_metrics_thresholds or GoldenEvaluationMetricsThresholds()
    turn = golden.turn_level_metrics_thresholds or TurnLevelMetricsThresholds()
    expectation = golden.expectation_level_metrics_thresholds or ExpectationLevelMetricsThresholds()
    matching = golden.tool_matching_settings or ToolMatchingSettings()
    semantic = turn.semantic_similarity_success_threshold
    overall = turn.overall_tool_invocation_correctness_threshold
    parameter = expectation.tool_invocation_parameter_correctness_threshold
    return Thresholds(
        semantic_similarity_success_threshold=(
            DEFAULT_SEMANTIC_SIMILARITY_SUCCESS_THRESHOLD if semantic is None else semantic),
        overall_tool_invocation_correctness_threshold=(
            DEFAULT_OVERALL_TOOL_INVOCATION_CORRECTNESS_THRESHOLD if overall is None else overall),
        tool_invocation_parameter_correctness_threshold=(
            DEFAULT_TOOL_INVOCATION_PARAMETER_CORRECTNESS_THRESHOLD if parameter is None else parameter),
        extra_tool_call_behavior=_extra(matching.extra_tool_call_behavior) or DEFAULT_EXTRA_TOOL_CALL_BEHAVIOR,
        golden_hallucination_metric_behavior=(
            _behavior(override.golden_hallucination_metric_behavior)
            or _behavior(override.hallucination_metric_behavior)
            or DEFAULT_GOLDEN_HALLUCINATION_METRIC_BEHAVIOR),
    )


def turn_thresholds(evaluation: Evaluation, turn: GoldenTurn) -> Thresholds:
    """Defaults < evaluation override < the turn's overrides."""
    return evaluation_thresholds(evaluation).for_turn(turn)


def effective_thresholds(evaluation: Evaluation) -> EvaluationMetricsThresholds:
    """The evaluation-level settings with every default filled in, as reported on each result."""
    given = evaluation.evaluation_metrics_threshold_override or EvaluationMetricsThresholds()
    golden = given.golden_evaluation_metrics_thresholds or GoldenEvaluationMetricsThresholds()
    channel = (golden.turn_level_metrics_thresholds or TurnLevelMetricsThresholds()).semantic_similarity_channel
    resolved = evaluation_thresholds(evaluation)
    return EvaluationMetricsThresholds(
        golden_evaluation_metrics_thresholds=GoldenEvaluationMetricsThresholds(
            turn_level_metrics_thresholds=TurnLevelMetricsThresholds(
                semantic_similarity_channel=channel,
                semantic_similarity_success_threshold=resolved.semantic_similarity_success_threshold,
                overall_tool_invocation_correctness_threshold=resolved.overall_tool_invocation_correctness_threshold,
            ),
            expectation_level_metrics_thresholds=ExpectationLevelMetricsThresholds(
                tool_invocation_parameter_correctness_threshold=(
                    resolved.tool_invocation_parameter_correctness_threshold),
            ),
            tool_matching_settings=ToolMatchingSettings(extra_tool_call_behavior=resolved.extra_tool_call_behavior),
        ),
        hallucination_metric_behavior=resolved.golden_hallucination_metric_behavior,
        golden_hallucination_metric_behavior=resolved.golden_hallucination_metric_behavior,
        scenario_hallucination_metric_behavior=scenario_hallucination_behavior(evaluation)
        if evaluation.scenario is not None else given.scenario_hallucination_metric_behavior,
    )


def scenario_hallucination_behavior(evaluation: Evaluation) -> HallucinationMetricBehavior:
    """The scenario hallucination behaviour: as given, else DISABLED (like the golden one)."""
    given = evaluation.evaluation_metrics_threshold_override
    return _behavior(given.scenario_hallucination_metric_behavior if given is not None else None) \
        or DEFAULT_SCENARIO_HALLUCINATION_METRIC_BEHAVIOR


# -- metric switches ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricSwitches:
    """Which golden metrics are computed; each is on unless the evaluation turns it off."""

    semantic_similarity: bool = True
    turn_tool_correctness: bool = True
    """overallToolInvocationResult (and the deprecated toolInvocationScore), toolOrderedInvocationScore."""
    step_tool_correctness: bool = True
    """Each toolCall expectation's toolInvocationResult (parameter correctness)."""

    def semantic_similarity_for(self, expectation: GoldenExpectation) -> bool:
        """The evaluation's switch, unless the expectation's override says otherwise."""
        override = expectation.agent_response_semantic_similarity_metrics_config_override
        if override is not None and override.enable_semantic_similarity_metrics is not None:
            return override.enable_semantic_similarity_metrics
        return self.semantic_similarity

    @staticmethod
    def hallucination_for(expectation: GoldenExpectation) -> bool:
        """False only when the expectation explicitly turns the hallucination metric off."""
        override = expectation.agent_response_hallucination_metrics_config_override
        return override is None or override.enable_hallucination_metrics is not False


def metric_switches(evaluation: Evaluation) -> MetricSwitches:
    config = evaluation.evaluation_metrics_config_override
    golden = (config.golden_metrics_config if config is not None else None) or GoldenMetricsConfig()
    semantic = golden.semantic_similarity_metrics_config
    turn = golden.tool_correctness_metrics_config
    step = golden.step_tool_correctness_metrics_config
    return MetricSwitches(
        semantic_similarity=semantic is None or semantic.enable_semantic_similarity_metrics is not False,
        turn_tool_correctness=turn is None or turn.enable_tool_correctness_metrics is not False,
        step_tool_correctness=step is None or step.enable_tool_correctness_metrics is not False,
    )
