"""Scoring of a simulated conversation: every field of seed 001's ScenarioResult, computed here.

The rules are the contract:

- ``expectationOutcomes`` (unless ``scenarioMetricsConfig.expectationsMetMetricsConfig`` turns them off):
  a ``toolExpectation`` is PASS when some call of the conversation is the expected one (the same tool,
  and every parameter the expectation gives equal; the others are free); ``observedToolCall`` is that
  call with its response, or, on FAIL, the first call of the same tool, if any. An ``agentResponse``
  expectation is PASS when some agent turn's text contains the expected text (case and spacing aside)
  or the judge rates them at least the semantic similarity threshold (3 unless overridden);
  ``observedAgentResponse`` is that turn's text, or, on FAIL, the closest turn's.
- ``rubricOutcomes``: each rubric judged as a criterion against the whole transcript; the score is 1.0
  when met and 0.0 when not. QUALITY_OPTIMIZED (the default) re-checks a rubric found unmet with a
  fresh judgement and scores the mean of the two; SPEED_OPTIMIZED asks a judge taking one sample and
  re-checks nothing. The explanation says which mode scored it.
- ``hallucinationResult``: one per turn, as the golden turns' (score -1 when the agent said nothing).
- ``userGoalSatisfactionResult`` (unless ``userGoalMetMetricsConfig`` turns it off): the judge's
  ``user_goal`` verdict on the task and transcript: 2 graceful handoff, 1 completed, 0 not completed,
  -1 unspecified; the explanation adds why the simulated user stopped.
- ``taskCompletionResult`` (deprecated) says the same on its scale: 1 when the user goal scored 1 or 2,
  0 when 0, -1 when -1.
- The user goal is *met* as ``userGoalBehavior`` (or the deprecated ``taskCompletionBehavior``) wants:
  USER_GOAL_SATISFIED (the default) when the score is 1 or 2, USER_GOAL_REJECTED when it is 0,
  USER_GOAL_IGNORED always; a metric switched off is met.
- ``allExpectationsSatisfied``: every expectation outcome and evaluation expectation result is PASS.
- ``taskCompleted``: all expectations satisfied, the user goal met, and, when the scenario hallucination
  behaviour is ENABLED (it is DISABLED by default), no turn scored 0 (hallucinated).
- ``evaluationStatus`` PASS when the task was completed, every milestone COMPLETED and the agent did not
  fail; ``outcomeMetadata`` GRACEFUL_HANDOFF when the user goal scored 2.
- ``toolCallLatencies`` and ``spanLatencies``: those of every turn, in order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from convener.ces.evaluation.models import (
    Evaluation,
    EvaluationExpectation,
    HallucinationMetricBehavior,
    ObservedToolCall,
    Outcome,
    OutcomeMetadata,
    ScenarioExecutionMode,
    ScenarioExpectation,
    ScenarioExpectationOutcome,
    ScenarioResult,
    ScenarioRubricOutcome,
    TaskCompletionBehavior,
    TaskCompletionResult,
    UserGoalBehavior,
    UserGoalSatisfactionResult,
)
from convener.ces.evaluation.scoring import (
    agent_text_of,
    exchanges_of,
    hallucination_of,
    latencies_of,
    score_criteria,
    tool_name,
)
from convener.ces.evaluation.simulation import Simulation, matches, milestone_results
from convener.ces.evaluation.thresholds import evaluation_thresholds, scenario_hallucination_behavior
from convener.ces.models import Chunk, Message
from convener.llm.judges import USER_GOAL_LABELS, Judge

TASK_COMPLETION_LABELS = {1: "Task completed", 0: "Task not completed", -1: "User goal undefined"}
QUALITY_NOTE = "QUALITY_OPTIMIZED: judged with the judge's full sampling; an unmet rubric is re-checked."
SPEED_NOTE = "SPEED_OPTIMIZED: judged with one judge sample; rubrics are not re-checked."


@dataclass(frozen=True)
class ScenarioScore:
    result: ScenarioResult
    status: Outcome
    metadata: OutcomeMetadata | None
    judge: str
    """The name of the judge that scored it."""


def execution_mode(evaluation: Evaluation) -> ScenarioExecutionMode:
    mode = evaluation.scenario.scenario_execution_mode if evaluation.scenario is not None else None
    if mode in (None, ScenarioExecutionMode.SCENARIO_EXECUTION_MODE_UNSPECIFIED):
        return ScenarioExecutionMode.QUALITY_OPTIMIZED
    assert mode is not None
    return mode


def judge_for(judge: Judge, mode: ScenarioExecutionMode) -> Judge:
    return judge.with_samples(1) if mode == ScenarioExecutionMode.SPEED_OPTIMIZED else judge


def _squashed(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


class _Scorer:
    def __init__(self, simulation: Simulation, evaluation: Evaluation, judge: Judge,
                 mode: ScenarioExecutionMode) -> None:
        self.simulation = simulation
        self.evaluation = evaluation
        self.judge = judge
        self.mode = mode
        self.transcript = simulation.transcript
        self.threshold = evaluation_thresholds(evaluation).semantic_similarity_success_threshold

    def expectation(self, expectation: ScenarioExpectation) -> ScenarioExpectationOutcome:
        if expectation.tool_expectation is not None and expectation.tool_expectation.expected_tool_call is not None:
            expected = expectation.tool_expectation.expected_tool_call
            pairs = [pair for turn in self.simulation.observed for pair in exchanges_of(turn.turn)]
            hit = next(((call, response) for call, response in pairs if matches(expected, call)), None)
            shown = hit or next(((call, response) for call, response in pairs if tool_name(call) == tool_name(expected)),
                                None)
            return ScenarioExpectationOutcome(
                expectation=expectation, outcome=Outcome.PASS if hit else Outcome.FAIL,
                observed_tool_call=ObservedToolCall(tool_call=shown[0], tool_response=shown[1]) if shown else None)
        wanted = "\n".join(chunk.text for chunk in (expectation.agent_response.chunks
                                                    if expectation.agent_response else None) or () if chunk.text)
        best: tuple[int, str] | None = None
        for turn in self.simulation.observed:
            said = agent_text_of(turn.turn)
            if not said.strip():
                continue
            if wanted.strip() and _squashed(wanted) in _squashed(said):
                return self._agent_outcome(expectation, Outcome.PASS, said)
            score = self.judge.similarity(wanted, said).score
            if score >= self.threshold:
                return self._agent_outcome(expectation, Outcome.PASS, said)
            if best is None or score > best[0]:
                best = (score, said)
        return self._agent_outcome(expectation, Outcome.FAIL, best[1] if best else None)

    @staticmethod
    def _agent_outcome(expectation: ScenarioExpectation, outcome: Outcome,
                       said: str | None) -> ScenarioExpectationOutcome:
        observed = Message(role="agent", chunks=[Chunk(text=said)]) if said else None
        return ScenarioExpectationOutcome(expectation=expectation, outcome=outcome, observed_agent_response=observed)

    def rubric(self, rubric: str) -> ScenarioRubricOutcome:
        verdict = self.judge.criterion(rubric, self.transcript)
        if self.mode == ScenarioExecutionMode.SPEED_OPTIMIZED:
            return ScenarioRubricOutcome(rubric=rubric, score=float(verdict.score),
                                         score_explanation=f"{verdict.explanation} [{SPEED_NOTE}]")
        if verdict.score == 1 or self.judge.name == "offline":
            note = QUALITY_NOTE if verdict.score == 1 else \
                f"{QUALITY_NOTE} Not re-checked: the offline judge is deterministic."
            return ScenarioRubricOutcome(rubric=rubric, score=float(verdict.score),
                                         score_explanation=f"{verdict.explanation} [{note}]")
        # A fresh question (the cache keys on the text), so the model is really asked again.
        again = self.judge.criterion(f"{rubric}\n(Re-check: read the whole conversation again before deciding.)",
                                     self.transcript)
        score = (verdict.score + again.score) / 2
        return ScenarioRubricOutcome(rubric=rubric, score=score, score_explanation=(
            f"{verdict.explanation} Re-check: {again.explanation} [{QUALITY_NOTE}]"))

    def user_goal(self) -> UserGoalSatisfactionResult:
        task = self.evaluation.scenario.task if self.evaluation.scenario is not None else ""
        verdict = self.judge.user_goal(task or "", self.transcript)
        ended = f" The simulation ended because {self.simulation.ended_by}." if self.simulation.ended_by else ""
        return UserGoalSatisfactionResult(score=verdict.score, label=USER_GOAL_LABELS.get(verdict.score, verdict.label),
                                          explanation=f"{verdict.explanation}{ended}")


def _goal_behavior(evaluation: Evaluation) -> UserGoalBehavior:
    scenario = evaluation.scenario
    assert scenario is not None
    if scenario.user_goal_behavior not in (None, UserGoalBehavior.USER_GOAL_BEHAVIOR_UNSPECIFIED):
        assert scenario.user_goal_behavior is not None
        return scenario.user_goal_behavior
    if scenario.task_completion_behavior == TaskCompletionBehavior.TASK_REJECTED:
        return UserGoalBehavior.USER_GOAL_REJECTED
    return UserGoalBehavior.USER_GOAL_SATISFIED


def goal_met(behavior: UserGoalBehavior, score: int | None) -> bool:
    if score is None or behavior == UserGoalBehavior.USER_GOAL_IGNORED:
        return True
    if behavior == UserGoalBehavior.USER_GOAL_REJECTED:
        return score == 0
    return score in (1, 2)


def _switches(evaluation: Evaluation) -> tuple[bool, bool]:
    """(user goal met, expectations met): each on unless the evaluation turns it off."""
    config = evaluation.evaluation_metrics_config_override
    scenario = config.scenario_metrics_config if config is not None else None
    goal = scenario.user_goal_met_metrics_config if scenario is not None else None
    expectations = scenario.expectations_met_metrics_config if scenario is not None else None
    return (goal is None or goal.enable_user_goal_met_metrics is not False,
            expectations is None or expectations.enable_expectations_met_metrics is not False)


def _hallucination_counts(evaluation: Evaluation) -> bool:
    return scenario_hallucination_behavior(evaluation) == HallucinationMetricBehavior.ENABLED


def score_scenario(simulation: Simulation, evaluation: Evaluation, criteria: Sequence[EvaluationExpectation],
                   judge: Judge) -> ScenarioScore:
    """The ScenarioResult of a simulated conversation, its outcome and metadata (see the module's rules).

    ``judge`` is the one the evaluation's execution mode asks for (:func:`judge_for`)."""
    scenario = evaluation.scenario
    assert scenario is not None
    mode = execution_mode(evaluation)
    scorer = _Scorer(simulation, evaluation, judge, mode)
    goal_on, expectations_on = _switches(evaluation)

    outcomes = [scorer.expectation(e) for e in scenario.scenario_expectations or ()] if expectations_on else []
    criteria_results = score_criteria(criteria, scorer.transcript, judge)
    hallucinations = [hallucination_of(turn, judge) for turn in simulation.observed if turn.turn is not None]
    goal = scorer.user_goal() if goal_on else None
    tool_calls, spans = [], []
    for turn in simulation.observed:
        if turn.turn is not None:
            calls, span_latencies = latencies_of(turn.turn)
            tool_calls.extend(calls)
            spans.extend(span_latencies)

    all_satisfied = all(o.outcome == Outcome.PASS for o in outcomes) and all(
        r.outcome == Outcome.PASS for r in criteria_results)
    met = goal_met(_goal_behavior(evaluation), goal.score if goal is not None else None)
    hallucinated = _hallucination_counts(evaluation) and any(h.score == 0 for h in hallucinations)
    completed = all_satisfied and met and not hallucinated
    task = None
    if goal is not None and goal.score is not None:
        task_score = min(goal.score, 1)
        task = TaskCompletionResult(score=task_score, label=TASK_COMPLETION_LABELS[task_score],
                                    explanation=goal.explanation)
    milestones = milestone_results(simulation)
    result = ScenarioResult(
        conversation=simulation.conversation if simulation.observed else None,
        task=scenario.task,
        user_facts=scenario.user_facts,
        expectation_outcomes=outcomes or None,
        rubric_outcomes=[scorer.rubric(rubric) for rubric in scenario.rubrics or ()] or None,
        hallucination_result=hallucinations or None,
        task_completion_result=task,
        tool_call_latencies=tool_calls or None,
        user_goal_satisfaction_result=goal,
        span_latencies=spans or None,
        evaluation_expectation_results=criteria_results or None,
        milestone_results=milestones or None,
        all_expectations_satisfied=all_satisfied,
        task_completed=completed,
    )
    passed = completed and simulation.error is None and all(m.status == "COMPLETED" for m in milestones)
    handoff = goal is not None and goal.score == 2
    return ScenarioScore(result, Outcome.PASS if passed else Outcome.FAIL,
                         OutcomeMetadata.GRACEFUL_HANDOFF if handoff else None, judge.name)


def report(simulation: Simulation, score: ScenarioScore) -> list[str]:
    """What ``convener simulate`` says after the conversation: how it ended and how it was judged."""
    result = score.result
    lines = [f"ended: {simulation.ended_by or 'the conversation ended'} ({len(simulation.observed)} turns)",
             f"conversation: {simulation.conversation}",
             f"simulated user: {simulation.user.name}" + (f" ({simulation.user.limits})" if simulation.user.limits
                                                          else "")]
    goal = result.user_goal_satisfaction_result
    if goal is not None:
        lines.append(f"user goal: {goal.score} {goal.label}: {goal.explanation}")
    for milestone in result.milestone_results or ():
        goal_text = milestone.milestone.goal if milestone.milestone else ""
        lines.append(f"milestone {goal_text!r}: {milestone.status}: {milestone.justification}")
    lines.append(f"verdict: {score.status.value}"
                 + (f" ({score.metadata.value})" if score.metadata is not None else ""))
    return lines
