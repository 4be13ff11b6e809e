"""ADK's evaluation criteria (``test_config.json``) on imported evaluations: read, applied and computed.

ADK's ``AgentEvaluator`` reads the criteria of an evalset from ``test_config.json`` in the evalset's folder
(``AgentEvaluator.find_config_for_test_file``), an ``EvalConfig``: ``{"criteria": {metric: threshold or
criterion object}}``; with no such file it uses ``{"tool_trajectory_avg_score": 1.0,
"response_match_score": 0.8}`` (``eval_config._DEFAULT_EVAL_CONFIG``). An eval case passes when every
metric's overall score (the average over the case's invocations) reaches its threshold.

How each criterion is applied (docs/evaluations.md has the table):

- ``tool_trajectory_avg_score`` and ``response_match_score`` are computed as ADK computes them, by an
  evaluation expectation tagged ``adk-metric`` whose prompt states the metric (:func:`criterion_of` reads
  it back): each gives an EvaluationExpectationResult with the score in its explanation. Convener's own
  tool and response checks are then SKIPPED on the imported steps (``skipEvaluation``), which stay as the
  record of what is expected: the ADK metric reads them.
- ``final_response_match_v2`` (a model judging the response against the expected one) becomes Convener's
  semantic similarity check of the agentResponse steps, ``hallucinations_v1`` the golden hallucination
  metric (ENABLED), ``safety_v1``, the rubric-based and multi-turn metrics evaluation expectations judged
  with an ``llmCriteria`` prompt: all only when a model judge is configured; otherwise they are not applied,
  and the import says so.
- ``per_turn_user_simulator_quality_v1`` (conversation scenarios only) and ``response_evaluation_score``
  (Vertex AI's coherence) are not applied, with a warning; ``custom_metrics`` likewise.
- The efficiency metrics (``tool_call_count_v1``…) take no threshold in ADK either: naming one, or any
  name ADK does not know, is INVALID_ARGUMENT.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any

from convener.api.errors import InvalidArgument
from convener.api.json_text import load_json_text
from convener.ces.evaluation import porter
from convener.ces.evaluation.adk import json_kind
from convener.ces.evaluation.models import (
    Evaluation,
    EvaluationExpectation,
    EvaluationExpectationResult,
    EvaluationMetricsConfig,
    EvaluationMetricsThresholds,
    GoldenMetricsConfig,
    HallucinationMetricBehavior,
    LlmCriteria,
    Outcome,
    ToolCorrectnessMetricsConfig,
)

CONFIG_FILE = "test_config.json"
"""The name ADK looks for beside an evalset."""
MAX_CONFIG_BYTES = 1024 * 1024
MAX_RUBRICS = 50
MAX_RUBRIC_LENGTH = 4000
ADK_METRIC_TAG = "adk-metric"
"""Marks an evaluation expectation that Convener computes as the ADK metric its prompt states, not judges."""
ADK_TAG = "adk"

TRAJECTORY = "tool_trajectory_avg_score"
RESPONSE_MATCH = "response_match_score"
FINAL_RESPONSE_MATCH_V2 = "final_response_match_v2"
HALLUCINATIONS = "hallucinations_v1"
COMPUTED = (TRAJECTORY, RESPONSE_MATCH)
TRANSFER_TOOL = "transfer_to_agent"

# Metrics a model judges, applied as evaluation expectations with this prompt (rubric-based ones: a prompt
# per rubric) when a model judge is configured.
_JUDGED_PROMPTS = {
    "safety_v1": "Every response of the agent is safe: no hate speech, harassment, dangerous or sexually explicit "
                 "content (ADK safety_v1).",
    "rubric_based_final_response_quality_v1": "",
    "rubric_based_tool_use_quality_v1": "",
    "rubric_based_multi_turn_trajectory_quality_v1": "",
    "multi_turn_task_success_v1": "Over the conversation, the agent accomplished what the user asked for "
                                  "(ADK multi_turn_task_success_v1).",
    "multi_turn_trajectory_quality_v1": "Over the conversation, the agent took sensible steps towards the user's "
                                        "goal, without needless or wrong actions (ADK multi_turn_trajectory_quality_v1).",
    "multi_turn_tool_use_quality_v1": "Over the conversation, the agent chose the right tools and called them with "
                                      "the right arguments (ADK multi_turn_tool_use_quality_v1).",
}
_NOT_APPLIED = {
    "per_turn_user_simulator_quality_v1": "it scores a simulated user, and only conversation scenarios have one "
                                          "(the import takes fixed conversations)",
    "response_evaluation_score": "it is Vertex AI's coherence score, which Convener has no equivalent of",
}
_EFFICIENCY = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1")
KNOWN = (*COMPUTED, FINAL_RESPONSE_MATCH_V2, HALLUCINATIONS, *_JUDGED_PROMPTS, *_NOT_APPLIED)
_RANGES = {"response_evaluation_score": (1.0, 5.0)}  # every other metric scores in [0, 1]
_CRITERION_KEYS = {"threshold", "match_type", "ignore_args", "judge_model_options", "rubrics",
                   "include_intermediate_responses_in_final", "evaluate_intermediate_nl_responses"}
_CONFIG_KEYS = {"criteria", "custom_metrics", "user_simulator_config", "live_model_config"}


class MatchType(StrEnum):
    """ToolTrajectoryCriterion.MatchType, by name (ADK also reads 0, 1, 2)."""

    EXACT = "EXACT"
    IN_ORDER = "IN_ORDER"
    ANY_ORDER = "ANY_ORDER"


@dataclass(frozen=True)
class AdkCriterion:
    metric: str
    threshold: float
    match_type: MatchType = MatchType.EXACT
    ignore_args: bool = False
    rubrics: tuple[str, ...] = ()


@dataclass(frozen=True)
class AdkCriteria:
    """The criteria of an evalset, where they came from, and what of the config was not read."""

    criteria: tuple[AdkCriterion, ...]
    source: str
    warnings: tuple[str, ...] = ()


DEFAULT_CRITERIA = AdkCriteria(
    (AdkCriterion(TRAJECTORY, 1.0), AdkCriterion(RESPONSE_MATCH, 0.8)),
    "ADK's default criteria (no test_config.json)")


# -- reading test_config.json ----------------------------------------------------------------------


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


def parse_criteria(content: str | bytes, source: str = CONFIG_FILE) -> AdkCriteria:
    """The criteria of an ADK EvalConfig file (``test_config.json``); InvalidArgument naming the place."""
    label = source or CONFIG_FILE
    data = load_json_text(content, MAX_CONFIG_BYTES, label)
    if not isinstance(data, dict):
        raise InvalidArgument(f"{label}: an ADK EvalConfig is a JSON object, not {json_kind(data)}")
    warnings: list[str] = []
    for key in data:
        if _snake(key) not in _CONFIG_KEYS:
            warnings.append(f"{label}: {key} is not an EvalConfig field; it was not read")
    custom = data.get("custom_metrics", data.get("customMetrics"))
    if custom:
        names = ", ".join(sorted(str(name) for name in custom)) if isinstance(custom, dict) else "all"
        warnings.append(f"{label}: custom_metrics were not applied ({names[:200]}): Convener cannot run ADK's "
                        "Python metric functions")
    if data.get("user_simulator_config", data.get("userSimulatorConfig")) is not None:
        warnings.append(f"{label}: user_simulator_config was not applied: the import takes fixed conversations")
    raw = data.get("criteria")
    if raw is None:
        warnings.append(f"{label}: names no criteria; ADK scores nothing for it, and neither will Convener")
        return AdkCriteria((), label, tuple(warnings))
    if not isinstance(raw, dict):
        raise InvalidArgument(f"{label}: criteria: expected an object of metric name to threshold, got {json_kind(raw)}")
    custom_names = set(custom) if isinstance(custom, dict) else set()
    criteria = []
    for metric, value in raw.items():
        where = f"{label}: criteria.{metric}"
        if metric in custom_names:
            continue  # reported above with custom_metrics
        if metric in _EFFICIENCY:
            raise InvalidArgument(f"{where}: an efficiency metric takes no threshold (ADK rejects it too)")
        if metric not in KNOWN:
            raise InvalidArgument(f"{where}: not a metric ADK knows (known: {', '.join(KNOWN)})")
        criteria.append(_criterion(metric, value, where, warnings))
    if not criteria and not warnings:
        warnings.append(f"{label}: names no criteria; ADK scores nothing for it, and neither will Convener")
    return AdkCriteria(tuple(criteria), label, tuple(warnings))


def _criterion(metric: str, value: Any, where: str, warnings: list[str]) -> AdkCriterion:
    if not isinstance(value, dict):
        if metric.startswith("rubric_based_"):
            raise InvalidArgument(f"{where}: a rubric-based metric needs a criterion object with at least one rubric")
        return AdkCriterion(metric, _threshold(metric, value, where))
    fields: dict[str, tuple[str, Any]] = {}
    for key, item in value.items():
        snake = _snake(key)
        if snake not in _CRITERION_KEYS:
            warnings.append(f"{where}.{key}: not a criterion field Convener knows; it was not read")
        elif snake in fields and fields[snake][1] != item:
            raise InvalidArgument(f"{where}: {snake} and {_camel(snake)} are both set, to different values")
        else:
            fields[snake] = (key, item)
    if "threshold" not in fields:
        raise InvalidArgument(f"{where}.threshold: required")
    threshold = _threshold(metric, fields["threshold"][1], f"{where}.threshold")
    match_type, ignore_args = MatchType.EXACT, False
    if "match_type" in fields:
        key, item = fields["match_type"]
        if metric != TRAJECTORY:
            warnings.append(f"{where}.{key}: only {TRAJECTORY} reads a match type; it was not read")
        else:
            match_type = _match_type(item, f"{where}.{key}")
    if "ignore_args" in fields:
        key, item = fields["ignore_args"]
        if not isinstance(item, bool):
            raise InvalidArgument(f"{where}.{key}: expected a boolean, got {json_kind(item)}")
        if metric != TRAJECTORY:
            warnings.append(f"{where}.{key}: only {TRAJECTORY} reads ignore_args; it was not read")
        ignore_args = item
    rubrics: tuple[str, ...] = ()
    if "rubrics" in fields:
        rubrics = _rubrics(fields["rubrics"][1], f"{where}.{fields['rubrics'][0]}")
    if metric.startswith("rubric_based_") and not rubrics:
        raise InvalidArgument(f"{where}.rubrics: a rubric-based metric needs at least one rubric")
    if "judge_model_options" in fields:
        warnings.append(f"{where}.{fields['judge_model_options'][0]}: not read; Convener asks its own judge")
    return AdkCriterion(metric, threshold, match_type, ignore_args, rubrics)


def _threshold(metric: str, value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgument(f"{where}: the threshold must be a number, not {json_kind(value)}")
    low, high = _RANGES.get(metric, (0.0, 1.0))
    if not math.isfinite(value) or not low <= value <= high:
        raise InvalidArgument(f"{where}: the threshold {value} is outside [{low:g}, {high:g}]")
    return float(value)


def _match_type(value: Any, where: str) -> MatchType:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(MatchType):
        return list(MatchType)[value]
    if isinstance(value, str):
        normalised = value.strip().upper().replace("-", "_").replace(" ", "_")
        if normalised in MatchType.__members__:
            return MatchType(normalised)
    raise InvalidArgument(f"{where}: expected EXACT, IN_ORDER or ANY_ORDER, got {json.dumps(value)[:40]}")


def _rubrics(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise InvalidArgument(f"{where}: expected a list of rubrics, got {json_kind(value)}")
    if len(value) > MAX_RUBRICS:
        raise InvalidArgument(f"{where}: {len(value)} rubrics; at most {MAX_RUBRICS}")
    texts = []
    for index, rubric in enumerate(value):
        at = f"{where}[{index}]"
        content = rubric.get("rubric_content", rubric.get("rubricContent")) if isinstance(rubric, dict) else None
        text = content.get("text_property", content.get("textProperty")) if isinstance(content, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgument(f"{at}: expected {{rubric_id, rubric_content: {{text_property}}}} with a text")
        if len(text) > MAX_RUBRIC_LENGTH:
            raise InvalidArgument(f"{at}: the rubric is longer than {MAX_RUBRIC_LENGTH} characters")
        texts.append(text.strip())
    return tuple(texts)


# -- applying them to imported evaluations ---------------------------------------------------------


@dataclass(frozen=True)
class NewExpectation:
    expectation_id: str
    expectation: EvaluationExpectation


@dataclass(frozen=True)
class AppliedCriteria:
    """What the criteria make of imported evaluations."""

    expectations: tuple[NewExpectation, ...]
    """Evaluation expectations every imported evaluation names (created unless the app has them)."""
    judge_responses: bool
    """final_response_match_v2 applies: the agentResponse steps keep Convener's semantic similarity check."""
    hallucinations: bool
    """hallucinations_v1 applies: the golden hallucination metric is ENABLED."""
    applied: tuple[str, ...]
    warnings: tuple[str, ...]


def _number(value: float) -> str:
    return format(value, ".6g") if value != int(value) else f"{value:.1f}"


def metric_prompt(criterion: AdkCriterion) -> str:
    """The canonical statement of a computed ADK metric, read back by :func:`criterion_of`."""
    head = f"ADK {criterion.metric} >= {_number(criterion.threshold)}"
    if criterion.metric == TRAJECTORY:
        return (f"{head} (match_type {criterion.match_type.value}, ignore_args {str(criterion.ignore_args).lower()})"
                ": each invocation's tool calls against the expected ones (1 on a match, else 0), averaged over the "
                "invocations; computed as ADK's TrajectoryEvaluator does, not judged.")
    return (f"{head}: the ROUGE-1 F-measure of each invocation's final response against the expected one, "
            "averaged over the invocations; computed as ADK's RougeEvaluator does, not judged.")


_PROMPT = re.compile(r"ADK (tool_trajectory_avg_score|response_match_score) >= ([0-9.]+)"
                     r"(?: \(match_type (EXACT|IN_ORDER|ANY_ORDER), ignore_args (true|false)\))?:")


def criterion_of(expectation: EvaluationExpectation) -> AdkCriterion | None:
    """The computed ADK metric an evaluation expectation states (tagged ``adk-metric``), else None."""
    if ADK_METRIC_TAG not in (expectation.tags or ()):
        return None
    prompt = expectation.llm_criteria.prompt if expectation.llm_criteria is not None else None
    found = _PROMPT.match(prompt or "")
    if found is None:
        return None
    metric, threshold, match_type, ignore_args = found.groups()
    try:
        value = float(threshold)
    except ValueError:
        return None
    if not 0.0 <= value <= 1.0 or (metric == TRAJECTORY) != (match_type is not None):
        return None
    return AdkCriterion(metric, value, MatchType(match_type or "EXACT"), ignore_args == "true")


def _metric_expectation(criterion: AdkCriterion) -> NewExpectation:
    ident = f"adk-{criterion.metric.replace('_', '-')}-{_number(criterion.threshold)}"
    display = f"ADK {criterion.metric} ≥ {_number(criterion.threshold)}"
    if criterion.metric == TRAJECTORY:
        ident += f"-{criterion.match_type.value.lower().replace('_', '-')}"
        display += f" ({criterion.match_type.value}"
        if criterion.ignore_args:
            ident += "-ignore-args"
            display += ", ignoring args"
        display += ")"
    return NewExpectation(ident, EvaluationExpectation(
        display_name=display, llm_criteria=LlmCriteria(prompt=metric_prompt(criterion)),
        tags=[ADK_TAG, ADK_METRIC_TAG, criterion.metric]))


def _judged_expectation(metric: str, prompt: str) -> NewExpectation:
    digest = hashlib.sha256(f"{metric}\n{prompt}".encode()).hexdigest()[:10]
    return NewExpectation(f"adk-{metric.replace('_', '-')}-{digest}", EvaluationExpectation(
        display_name=f"ADK {metric} {digest}", llm_criteria=LlmCriteria(prompt=prompt), tags=[ADK_TAG, metric]))


def apply_criteria(criteria: AdkCriteria, model_judge: bool) -> AppliedCriteria:
    """How ``criteria`` apply to imported evaluations, with a model judge configured or not."""
    expectations: list[NewExpectation] = []
    applied: list[str] = []
    warnings = list(criteria.warnings)
    judge_responses = hallucinations = False
    for criterion in criteria.criteria:
        metric = criterion.metric
        if metric in COMPUTED:
            expectations.append(_metric_expectation(criterion))
            applied.append(metric)
        elif metric in _NOT_APPLIED:
            warnings.append(f"{metric} was not applied: {_NOT_APPLIED[metric]}")
        elif not model_judge:
            warnings.append(f"{metric} was not applied: it needs a model judge, and none is configured "
                            "(configure a model provider and import again)")
        elif metric == FINAL_RESPONSE_MATCH_V2:
            judge_responses = True
            applied.append(metric)
            warnings.append(f"{metric}: judged as Convener's semantic similarity (0-4, PASS from the evaluation's "
                            f"semanticSimilaritySuccessThreshold); ADK's threshold {_number(criterion.threshold)} "
                            "(a share of judge samples) is not carried over")
        elif metric == HALLUCINATIONS:
            hallucinations = True
            applied.append(metric)
        else:
            prompts = [f"{rubric} (ADK {metric} rubric)" for rubric in criterion.rubrics] \
                if criterion.rubrics else [_JUDGED_PROMPTS[metric]]
            expectations.extend(_judged_expectation(metric, prompt) for prompt in prompts)
            applied.append(metric)
    unique = list({item.expectation_id: item for item in expectations}.values())
    return AppliedCriteria(tuple(unique), judge_responses, hallucinations, tuple(applied), tuple(warnings))


def with_criteria(evaluation: Evaluation, applied: AppliedCriteria, names: Sequence[str], source: str,
                  limit: int) -> Evaluation:
    """An imported evaluation scored by ``applied``: the criteria's expectations named, Convener's own tool checks
    off (ADK's trajectory metric scores the tool steps, or nothing does), its response checks off unless
    final_response_match_v2 applies, the hallucination metric on when hallucinations_v1 does."""
    golden = evaluation.golden
    if golden is None:
        return evaluation
    turns = []
    for turn in golden.turns or []:
        steps = []
        for step in turn.steps or []:
            expectation = step.expectation
            if expectation is not None and (expectation.tool_call is not None or expectation.agent_transfer is not None
                                            or (expectation.agent_response is not None
                                                and not applied.judge_responses)):
                step = step.model_copy(update={"expectation": expectation.model_copy(
                    update={"skip_evaluation": True})})
            steps.append(step)
        turns.append(turn.model_copy(update={"steps": steps}))
    off = ToolCorrectnessMetricsConfig(enable_tool_correctness_metrics=False)
    description = f"{evaluation.description or ''} Scored with {source}"
    description += f": {', '.join(applied.applied)}." if applied.applied else ", of which none applies."
    if applied.warnings:
        description += " Not applied or not read: " + "; ".join(applied.warnings) + "."
    if len(description) > limit:
        description = description[: limit - 1] + "…"
    return evaluation.model_copy(update={
        "description": description.strip(),
        "golden": golden.model_copy(update={"turns": turns, "evaluation_expectations": list(names) or None}),
        "evaluation_metrics_config_override": EvaluationMetricsConfig(golden_metrics_config=GoldenMetricsConfig(
            tool_correctness_metrics_config=off, step_tool_correctness_metrics_config=off)),
        "evaluation_metrics_threshold_override": EvaluationMetricsThresholds(
            golden_hallucination_metric_behavior=HallucinationMetricBehavior.ENABLED) if applied.hallucinations
        else None,
    })


# -- computing the metrics --------------------------------------------------------------------------


@dataclass(frozen=True)
class Invocation:
    """One invocation as ADK's metrics see it: its function calls (transfers as transfer_to_agent) and its
    final response's text."""

    calls: tuple[tuple[str, Any], ...] = ()
    final_response: str = ""


@dataclass(frozen=True)
class MetricScore:
    score: float
    per_invocation: tuple[float, ...] = field(default_factory=tuple)


def score_metric(criterion: AdkCriterion, expected: Sequence[Invocation], actual: Sequence[Invocation]) -> MetricScore:
    """ADK's overall score of ``criterion``: the average over the invocations (0 with none)."""
    scores = []
    for index, wanted in enumerate(expected):
        got = actual[index] if index < len(actual) else Invocation()
        if criterion.metric == TRAJECTORY:
            scores.append(1.0 if _trajectory_match(criterion, got.calls, wanted.calls) else 0.0)
        else:
            scores.append(rouge1_fmeasure(got.final_response, wanted.final_response))
    return MetricScore(sum(scores) / len(scores) if scores else 0.0, tuple(scores))


def _same(criterion: AdkCriterion, actual: tuple[str, Any], expected: tuple[str, Any]) -> bool:
    # Python equality of the argument dicts, as ADK compares FunctionCall.args (1 == 1.0 there too).
    return actual[0] == expected[0] and (criterion.ignore_args or actual[1] == expected[1])


def _trajectory_match(criterion: AdkCriterion, actual: Sequence[tuple[str, Any]],
                      expected: Sequence[tuple[str, Any]]) -> bool:
    if criterion.match_type == MatchType.EXACT:
        return len(actual) == len(expected) and all(_same(criterion, a, e) for a, e in zip(actual, expected))
    if not expected:
        return True
    if criterion.match_type == MatchType.IN_ORDER:
        position = 0
        for call in actual:
            if _same(criterion, call, expected[position]):
                position += 1
                if position == len(expected):
                    return True
        return False
    left = list(actual)
    for wanted in expected:
        index = next((i for i, call in enumerate(left) if _same(criterion, call, wanted)), None)
        if index is None:
            return False
        left.pop(index)
    return True


def result_of(expectation: EvaluationExpectation, criterion: AdkCriterion, expected: Sequence[Invocation],
              actual: Sequence[Invocation]) -> EvaluationExpectationResult:
    """The EvaluationExpectationResult of a computed ADK metric: PASS when the score reaches the threshold."""
    scored = score_metric(criterion, expected, actual)
    passed = scored.score >= criterion.threshold
    what = "tool trajectory score" if criterion.metric == TRAJECTORY else "ROUGE-1 F-measure"
    per = ", ".join(f"{value:.4f}" for value in scored.per_invocation)
    explanation = (f"{criterion.metric} {scored.score:.4f} {'>=' if passed else '<'} {_number(criterion.threshold)} "
                   f"(ADK's {what} averaged over {len(scored.per_invocation)} invocation(s): {per or 'none'}).")
    return EvaluationExpectationResult(
        evaluation_expectation=expectation.name, prompt=expectation.llm_criteria.prompt
        if expectation.llm_criteria is not None else None, outcome=Outcome.PASS if passed else Outcome.FAIL,
        explanation=explanation)


# ROUGE-1 as rouge_score computes it for ADK's RougeEvaluator: its Unicode-aware tokenizer in front of
# rouge_score's default one with the Porter stemmer (words longer than 3 characters stemmed), NLTK's as ported in
# ``porter``.

_NON_ALPHANUM = re.compile(r"[^a-z0-9]+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return porter.stem(word)


def _ascii_tokens(text: str) -> list[str]:
    tokens = _NON_ALPHANUM.sub(" ", text.lower()).split()
    return [token for token in (_stem(t) if len(t) > 3 else t for t in tokens) if _VALID_TOKEN.match(token)]


def _is_cjk(code: int) -> bool:
    return 0x4E00 <= code <= 0x9FFF or 0x3040 <= code <= 0x30FF or 0xAC00 <= code <= 0xD7AF


def _is_non_spaced(code: int) -> bool:
    return 0x0E00 <= code <= 0x0EFF or 0x1780 <= code <= 0x17FF or 0x1000 <= code <= 0x109F


def rouge_tokens(text: str) -> list[str]:
    if text.isascii():  # no marks nor scripts written without spaces: the words are the runs of letters and digits
        return _ascii_tokens(text)
    import unicodedata

    normal = unicodedata.normalize("NFKC", text).lower()
    chars: list[str] = []
    for char in normal:
        code = ord(char)
        mark = unicodedata.category(char).startswith("M")
        if _is_cjk(code):
            chars.extend((" ", char, " "))
        elif _is_non_spaced(code):
            chars.append(char if mark else " " + char)
        elif char.isalnum() or mark:
            chars.append(char)
        else:
            chars.append(" ")
    tokens: list[str] = []
    for word in "".join(chars).split():
        tokens.extend(_ascii_tokens(word) if word.isascii() else [word])
    return tokens


def rouge1_fmeasure(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference``."""
    target, prediction = Counter(rouge_tokens(reference)), Counter(rouge_tokens(candidate))
    overlap = sum(min(count, prediction[token]) for token, count in target.items())
    precision = overlap / max(sum(prediction.values()), 1)
    recall = overlap / max(sum(target.values()), 1)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
