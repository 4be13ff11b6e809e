"""Wire models of CES's EvaluationService, field for field as in seed 001 (get_evaluation).

Every field is optional so that proto3's "unset" stays distinguishable from a default; defaults
(thresholds, behaviours) are applied where they are used, in ``thresholds.py``, and reported back on
each result in ``evaluationMetricsThresholds``.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

# EvaluationToolCallBehaviour and GoldenRunMethod live with the App, whose evaluationSettings name them.
from convener.api.protojson import Duration, ProtoModel, Struct, Timestamp
from convener.ces.models import (
    AgentTransfer,
    EvaluationToolCallBehaviour,
    GoldenRunMethod,
    Message,
    Span,
    ToolCall,
    ToolResponse,
    ToolsetTool,
    at_most_one,
)
from convener.ces.session_models import Event, SessionInput
from convener.longrunning.models import Status

# -- enums ----------------------------------------------------------------------------------------


class Outcome(StrEnum):
    OUTCOME_UNSPECIFIED = "OUTCOME_UNSPECIFIED"
    PASS = "PASS"
    FAIL = "FAIL"
    SKIPPED = "SKIPPED"


class ComparisonType(StrEnum):
    COMPARISON_TYPE_UNSPECIFIED = "COMPARISON_TYPE_UNSPECIFIED"
    EQUALS = "EQUALS"
    CONTAINS = "CONTAINS"
    SEMANTIC_SIMILARITY = "SEMANTIC_SIMILARITY"


class SemanticSimilarityChannel(StrEnum):
    SEMANTIC_SIMILARITY_CHANNEL_UNSPECIFIED = "SEMANTIC_SIMILARITY_CHANNEL_UNSPECIFIED"
    TEXT = "TEXT"
    AUDIO = "AUDIO"


class HallucinationMetricBehavior(StrEnum):
    HALLUCINATION_METRIC_BEHAVIOR_UNSPECIFIED = "HALLUCINATION_METRIC_BEHAVIOR_UNSPECIFIED"
    DISABLED = "DISABLED"
    ENABLED = "ENABLED"


class TaskCompletionBehavior(StrEnum):
    TASK_COMPLETION_BEHAVIOR_UNSPECIFIED = "TASK_COMPLETION_BEHAVIOR_UNSPECIFIED"
    TASK_SATISFIED = "TASK_SATISFIED"
    TASK_REJECTED = "TASK_REJECTED"


class UserGoalBehavior(StrEnum):
    USER_GOAL_BEHAVIOR_UNSPECIFIED = "USER_GOAL_BEHAVIOR_UNSPECIFIED"
    USER_GOAL_SATISFIED = "USER_GOAL_SATISFIED"
    USER_GOAL_REJECTED = "USER_GOAL_REJECTED"
    USER_GOAL_IGNORED = "USER_GOAL_IGNORED"


class ScenarioExecutionMode(StrEnum):
    SCENARIO_EXECUTION_MODE_UNSPECIFIED = "SCENARIO_EXECUTION_MODE_UNSPECIFIED"
    QUALITY_OPTIMIZED = "QUALITY_OPTIMIZED"
    SPEED_OPTIMIZED = "SPEED_OPTIMIZED"


class ErrorType(StrEnum):
    ERROR_TYPE_UNSPECIFIED = "ERROR_TYPE_UNSPECIFIED"
    RUNTIME_FAILURE = "RUNTIME_FAILURE"
    CONVERSATION_RETRIEVAL_FAILURE = "CONVERSATION_RETRIEVAL_FAILURE"
    METRIC_CALCULATION_FAILURE = "METRIC_CALCULATION_FAILURE"
    EVALUATION_UPDATE_FAILURE = "EVALUATION_UPDATE_FAILURE"
    QUOTA_EXHAUSTED = "QUOTA_EXHAUSTED"
    USER_SIMULATION_FAILURE = "USER_SIMULATION_FAILURE"


class SpanType(StrEnum):
    TYPE_UNSPECIFIED = "TYPE_UNSPECIFIED"
    TOOL = "TOOL"
    USER_CALLBACK = "USER_CALLBACK"
    GUARDRAIL = "GUARDRAIL"
    LLM = "LLM"


class MilestoneStatus(StrEnum):
    MILESTONE_STATUS_UNSPECIFIED = "MILESTONE_STATUS_UNSPECIFIED"
    NOT_STARTED = "NOT_STARTED"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"


class BackgroundEnvironment(StrEnum):
    BACKGROUND_ENVIRONMENT_UNSPECIFIED = "BACKGROUND_ENVIRONMENT_UNSPECIFIED"
    CALL_CENTER = "CALL_CENTER"
    TRAFFIC = "TRAFFIC"
    KIDS_NOISE = "KIDS_NOISE"
    CAFE = "CAFE"


class ExecutionState(StrEnum):
    EXECUTION_STATE_UNSPECIFIED = "EXECUTION_STATE_UNSPECIFIED"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"


class ExtraToolCallBehavior(StrEnum):
    EXTRA_TOOL_CALL_BEHAVIOR_UNSPECIFIED = "EXTRA_TOOL_CALL_BEHAVIOR_UNSPECIFIED"
    FAIL = "FAIL"
    ALLOW = "ALLOW"


class AudioEncoding(StrEnum):
    AUDIO_ENCODING_UNSPECIFIED = "AUDIO_ENCODING_UNSPECIFIED"
    LINEAR16 = "LINEAR16"
    MULAW = "MULAW"
    ALAW = "ALAW"


class EvaluationChannel(StrEnum):
    EVALUATION_CHANNEL_UNSPECIFIED = "EVALUATION_CHANNEL_UNSPECIFIED"
    TEXT = "TEXT"
    AUDIO = "AUDIO"




class OutcomeMetadata(StrEnum):
    OUTCOME_METADATA_UNSPECIFIED = "OUTCOME_METADATA_UNSPECIFIED"
    GRACEFUL_HANDOFF = "GRACEFUL_HANDOFF"


# -- thresholds and metric configuration ----------------------------------------------------------


class ExpectationLevelMetricsThresholds(ProtoModel):
    tool_invocation_parameter_correctness_threshold: float | None = Field(
        None, ge=0, le=1, description="PASS when parameterCorrectnessScore is at least this; 0 to 1, default 1.0.")


class TurnLevelMetricsThresholds(ProtoModel):
    semantic_similarity_channel: SemanticSimilarityChannel | None = Field(
        None, description="The semantic similarity channel to evaluate: TEXT (the default) or AUDIO.")
    semantic_similarity_success_threshold: int | None = Field(
        None, ge=0, le=4, description="PASS when the semantic similarity score is at least this; 0 to 4, default 3.")
    overall_tool_invocation_correctness_threshold: float | None = Field(
        None, ge=0, le=1,
        description="PASS when the share of expected tools invoked is at least this; 0 to 1, default 1.0.")


class ToolMatchingSettings(ProtoModel):
    extra_tool_call_behavior: ExtraToolCallBehavior | None = Field(
        None, description="FAIL (the default) fails a turn with a tool call no expectation names; ALLOW does not.")


class GoldenEvaluationMetricsThresholds(ProtoModel):
    turn_level_metrics_thresholds: TurnLevelMetricsThresholds | None = Field(
        None, description="The turn-level metric thresholds.")
    expectation_level_metrics_thresholds: ExpectationLevelMetricsThresholds | None = Field(
        None, description="The expectation-level metric thresholds.")
    tool_matching_settings: ToolMatchingSettings | None = Field(
        None, description="How extra tool calls (made in the run but matching no golden expectation) are treated.")


class EvaluationMetricsThresholds(ProtoModel):
    golden_evaluation_metrics_thresholds: GoldenEvaluationMetricsThresholds | None = Field(
        None, description="The metric thresholds of golden evaluations.")
    hallucination_metric_behavior: HallucinationMetricBehavior | None = Field(
        None, description="Deprecated: use goldenHallucinationMetricBehavior.")
    golden_hallucination_metric_behavior: HallucinationMetricBehavior | None = Field(
        None, description="The hallucination metric behavior for golden evaluations; DISABLED leaves it out of "
                          "the outcome.")
    scenario_hallucination_metric_behavior: HallucinationMetricBehavior | None = Field(
        None, description="The hallucination metric behavior for scenario evaluations.")


class SemanticSimilarityMetricsConfig(ProtoModel):
    enable_semantic_similarity_metrics: bool | None = Field(
        None, description="Whether to compute semantic similarity metrics for the evaluation (on unless false).")


class HallucinationMetricsConfig(ProtoModel):
    enable_hallucination_metrics: bool | None = Field(
        None, description="Whether to compute hallucination metrics for the evaluation (on unless false).")


class ToolCorrectnessMetricsConfig(ProtoModel):
    enable_tool_correctness_metrics: bool | None = Field(
        None, description="Whether to compute tool correctness metrics for the evaluation (on unless false).")


class UserGoalMetMetricsConfig(ProtoModel):
    enable_user_goal_met_metrics: bool | None = Field(
        None, description="Whether to compute user-goal-met metrics for the evaluation.")


class ExpectationsMetMetricsConfig(ProtoModel):
    enable_expectations_met_metrics: bool | None = Field(
        None, description="Whether to compute expectation-level metrics for the evaluation.")


class GoldenMetricsConfig(ProtoModel):
    semantic_similarity_metrics_config: SemanticSimilarityMetricsConfig | None = Field(
        None, description="Global configuration of the semantic similarity metrics.")
    tool_correctness_metrics_config: ToolCorrectnessMetricsConfig | None = Field(
        None, description="Turn-level tool correctness (overallToolInvocationResult, toolOrderedInvocationScore).")
    step_tool_correctness_metrics_config: ToolCorrectnessMetricsConfig | None = Field(
        None, description="Step-level tool correctness (each toolCall expectation's toolInvocationResult).")


class ScenarioMetricsConfig(ProtoModel):
    user_goal_met_metrics_config: UserGoalMetMetricsConfig | None = Field(
        None, description="Configuration of the user-goal-met metrics.")
    expectations_met_metrics_config: ExpectationsMetMetricsConfig | None = Field(
        None, description="Configuration of the expectation-level metrics.")


class EvaluationMetricsConfig(ProtoModel):
    golden_metrics_config: GoldenMetricsConfig | None = Field(
        None, description="Configuration of the golden metrics for the evaluation.")
    scenario_metrics_config: ScenarioMetricsConfig | None = Field(
        None, description="Configuration of the scenario metrics for the evaluation.")


class InputAudioConfig(ProtoModel):
    audio_encoding: AudioEncoding | None = Field(None, description="Required. The encoding of the input audio data.")
    sample_rate_hertz: int | None = Field(
        None, description="Required. The sample rate, in hertz, of the input audio data.")
    noise_suppression_level: str | None = Field(
        None, description='Noise suppression on the input audio: "low", "moderate", "high" or "very_high".')


class OutputAudioConfig(ProtoModel):
    audio_encoding: AudioEncoding | None = Field(None, description="Required. The encoding of the output audio data.")
    sample_rate_hertz: int | None = Field(
        None, description="Required. The sample rate, in hertz, of the output audio data.")


class EvaluationConfig(ProtoModel):
    input_audio_config: InputAudioConfig | None = Field(None, description="How to process the input audio.")
    output_audio_config: OutputAudioConfig | None = Field(None, description="How to generate the output audio.")
    evaluation_channel: EvaluationChannel | None = Field(
        None, description="The channel to evaluate: TEXT; AUDIO is not supported here.")
    tool_call_behaviour: EvaluationToolCallBehaviour | None = Field(
        None, description="REAL (the default) runs the agent's tools; FAKE answers every call from the golden's "
                          "mockToolResponse and toolResponse expectations instead.")


# -- the definition of an evaluation --------------------------------------------------------------

CONDITIONS = ("tool_call", "tool_response", "agent_response", "agent_transfer", "updated_variables",
              "mock_tool_response", "no_tool_calls")


class GoldenExpectation(ProtoModel):
    note: str | None = Field(None, description='Reported when the check fails, e.g. "Check_Payment_Tool_Called".')
    skip_evaluation: bool | None = Field(None, description="When true, the expectation is not evaluated (SKIPPED).")
    expectation_level_metrics_thresholds_override: ExpectationLevelMetricsThresholds | None = Field(
        None, description="Overrides the expectation-level (step-level) metric thresholds.")
    agent_response_semantic_similarity_metrics_config_override: SemanticSimilarityMetricsConfig | None = Field(
        None, description="Overrides the semantic similarity metrics of agentResponse.")
    agent_response_hallucination_metrics_config_override: HallucinationMetricsConfig | None = Field(
        None, description="Overrides the hallucination metrics of agentResponse.")
    comparison_type: ComparisonType | None = Field(
        None, description="How agentResponse is compared: EQUALS, CONTAINS or SEMANTIC_SIMILARITY (the default).")
    tool_call: ToolCall | None = Field(None, description="The tool was called with these parameters.")
    tool_response: ToolResponse | None = Field(None, description="The tool responded with this response.")
    agent_response: Message | None = Field(None, description='The agent said this (role "agent" implied).')
    agent_transfer: AgentTransfer | None = Field(None, description="The agent transferred to this agent.")
    updated_variables: Struct | None = Field(None, description="The session variables were set to these values.")
    mock_tool_response: ToolResponse | None = Field(
        None, description="Answers the matching tool call with this response instead of running the tool.")
    no_tool_calls: bool | None = Field(None, description="No tool was called during this turn.")

    @model_validator(mode="after")
    def _one_condition(self) -> GoldenExpectation:
        at_most_one(self, CONDITIONS, "condition")
        return self

    @property
    def condition(self) -> str | None:
        return next((name for name in CONDITIONS if getattr(self, name) is not None), None)


class Step(ProtoModel):
    user_input: SessionInput | None = Field(None, description="Input from the user for the conversation.")
    agent_transfer: AgentTransfer | None = Field(None, description="Transfer the conversation to another agent.")
    expectation: GoldenExpectation | None = Field(None, description="A check on the current turn.")

    @model_validator(mode="after")
    def _one_step(self) -> Step:
        at_most_one(self, ("user_input", "agent_transfer", "expectation"), "step")
        return self


class GoldenTurn(ProtoModel):
    steps: list[Step] | None = Field(None, description="Required. The steps of the turn, in order.")
    root_span: Span | None = Field(
        None, description="The root span of the golden turn, to process and keep its audio (sampled at 16 kHz).")
    turn_level_metrics_thresholds_override: TurnLevelMetricsThresholds | None = Field(
        None, description="Overrides the turn-level metric thresholds for this turn.")
    hallucination_metric_behavior_override: HallucinationMetricBehavior | None = Field(
        None, description="Overrides the hallucination metric behavior for this turn.")


class Golden(ProtoModel):
    turns: list[GoldenTurn] | None = Field(None, description="Required. At most 100 turns.")
    evaluation_expectations: list[str] | None = Field(
        None, description="…/apps/{app}/evaluationExpectations/{evaluationExpectation} to judge the replay against.")


class UserFact(ProtoModel):
    name: str | None = Field(None, description="Required. The name of the user fact.")
    value: str | None = Field(None, description="Required. The value of the user fact.")


class ToolExpectation(ProtoModel):
    expected_tool_call: ToolCall | None = Field(
        None, description="Required. The expected tool call, with the parameters of interest; the LLM makes up "
                          "the rest.")
    mock_tool_response: ToolResponse | None = Field(
        None, description="Required. The tool response to mock, with the parameters of interest; the LLM makes up "
                          "the rest.")


class ScenarioExpectation(ProtoModel):
    tool_expectation: ToolExpectation | None = Field(None, description="A tool call and response pair to evaluate.")
    agent_response: Message | None = Field(None, description="An agent response to evaluate.")

    @model_validator(mode="after")
    def _one_expectation(self) -> ScenarioExpectation:
        at_most_one(self, ("tool_expectation", "agent_response"), "expectation")
        return self


class Milestone(ProtoModel):
    goal: str | None = Field(None, description="Required. The goal of the milestone.")
    max_turn_count: int | None = Field(None, description="The maximum number of turns for this milestone.")
    success_criteria: str | None = Field(None, description="The success criteria of the milestone.")
    protocol: str | None = Field(None, description="Guidelines the agent should follow during the conversation.")
    static_utterance: str | None = Field(
        None, description="A fixed utterance the simulator sends verbatim instead of generating the user input.")
    event: Event | None = Field(None, description="An event input to send instead of generating the user input.")


class Scenario(ProtoModel):
    task: str | None = Field(None, description="Required. The task the simulated user pursues.")
    user_facts: list[UserFact] | None = Field(None, description="Facts the simulated user knows.")
    max_turns: int | None = Field(
        None, description="The maximum number of turns to simulate: at most 100, default 100.")
    rubrics: list[str] | None = Field(None, description="Required. The rubrics to score the scenario with.")
    scenario_expectations: list[ScenarioExpectation] | None = Field(
        None, description="Required. Expectations to evaluate the conversation of the user simulation against.")
    variable_overrides: Struct | None = Field(
        None, description="Session variables by name, overriding their defaults (known to the agent, not the user).")
    task_completion_behavior: TaskCompletionBehavior | None = Field(
        None, description="Deprecated: use userGoalBehavior.")
    user_goal_behavior: UserGoalBehavior | None = Field(
        None, description="The expected behavior of the user goal; default USER_GOAL_SATISFIED.")
    evaluation_expectations: list[str] | None = Field(
        None, description="…/apps/{app}/evaluationExpectations/{evaluationExpectation} to judge the simulated "
                          "conversation against.")
    milestones: list[Milestone] | None = Field(None, description="The milestones of this scenario.")
    scenario_execution_mode: ScenarioExecutionMode | None = Field(
        None, description="QUALITY_OPTIMIZED (the default) or SPEED_OPTIMIZED.")


# -- results --------------------------------------------------------------------------------------


class SemanticSimilarityResult(ProtoModel):
    score: int | None = Field(None, description="Output only. The semantic similarity score: 0, 1, 2, 3 or 4.")
    label: str | None = Field(
        None, description="Output only. The label of the score: 4 fully consistent down to 0 contradictory.")
    explanation: str | None = Field(None, description="Output only. Why the semantic similarity score was given.")
    outcome: Outcome | None = Field(
        None, description="Output only. PASS when the score is at least semanticSimilaritySuccessThreshold, else FAIL.")


class ToolInvocationResult(ProtoModel):
    parameter_correctness_score: float | None = Field(
        None, description="Output only. Share of the expected call's parameters present in the actual call with "
                          "equal values.")
    outcome: Outcome | None = Field(
        None, description="Output only. PASS when parameterCorrectnessScore is at least the threshold, else FAIL.")
    explanation: str | None = Field(None, description="Output only. A free-text explanation of the outcome.")


class HallucinationResult(ProtoModel):
    score: int | None = Field(None, description="Output only. The hallucination score: -1, 0 or 1.")
    label: str | None = Field(
        None, description="Output only. The label of the score: 1 justified, 0 not justified, -1 no claim to assess.")
    explanation: str | None = Field(None, description="Output only. Why the hallucination score was given.")


class ToolCallLatency(ProtoModel):
    tool: str | None = Field(
        None, description="Output only. The tool run: projects/{project}/locations/{location}/apps/{app}/tools/{tool}")
    display_name: str | None = Field(None, description="Output only. The display name of the tool.")
    start_time: Timestamp | None = Field(None, description="Output only. When the tool call started.")
    end_time: Timestamp | None = Field(None, description="Output only. When the tool call ended.")
    execution_latency: Duration | None = Field(None, description="Output only. How long the tool call took.")


class OverallToolInvocationResult(ProtoModel):
    tool_invocation_score: float | None = Field(None, description="Share of the turn's expected tools invoked.")
    outcome: Outcome | None = Field(
        None, description="Output only. PASS when toolInvocationScore is at least "
                          "overallToolInvocationCorrectnessThreshold, else FAIL.")


class EvaluationErrorInfo(ProtoModel):
    error_type: ErrorType | None = Field(None, description="Output only. The type of the error.")
    error_message: str | None = Field(None, description="Output only. The error message.")
    session_id: str | None = Field(None, description="Output only. The session of the conversation that failed.")
    user_facing_error_message: str | None = Field(None, description="Output only. The error message for the user.")


class SpanLatency(ProtoModel):
    type: SpanType | None = Field(None, description="Output only. The type of the span.")
    display_name: str | None = Field(
        None, description="Output only. The display name of the span, for tool and guardrail spans.")
    start_time: Timestamp | None = Field(None, description="Output only. When the span started.")
    end_time: Timestamp | None = Field(None, description="Output only. When the span ended.")
    execution_latency: Duration | None = Field(None, description="Output only. The latency of the span.")
    resource: str | None = Field(
        None, description="Output only. The resource name of the tool or guardrail of the span.")
    toolset: ToolsetTool | None = Field(None, description="Output only. The toolset tool of the span.")
    model: str | None = Field(None, description="Output only. The name of the LLM span.")
    callback: str | None = Field(None, description="Output only. The name of the user callback span.")




class GoldenExpectationOutcome(ProtoModel):
    expectation: GoldenExpectation | None = Field(None, description="Output only. The expectation evaluated.")
    outcome: Outcome | None = Field(None, description="Output only. The outcome of the expectation.")
    semantic_similarity_result: SemanticSimilarityResult | None = Field(
        None, description="Output only. Deprecated: the result of the semantic similarity check.")
    tool_invocation_result: ToolInvocationResult | None = Field(
        None, description="Output only. The result of the tool invocation check.")
    observed_tool_call: ToolCall | None = Field(None, description="Output only. The tool call observed.")
    observed_tool_response: ToolResponse | None = Field(None, description="Output only. The tool response observed.")
    observed_agent_response: Message | None = Field(None, description="Output only. The agent response observed.")
    observed_agent_transfer: AgentTransfer | None = Field(
        None, description="Output only. The agent transfer observed.")
    observed_payload: Struct | None = Field(
        None, description="Output only. A custom payload observed, for metrics only; its outcome is always SKIPPED.")


class TurnReplayResult(ProtoModel):
    conversation: str | None = Field(
        None, description="Output only. The conversation recorded for this turn's replay.")
    expectation_outcome: list[GoldenExpectationOutcome] | None = Field(
        None, description="Output only. The outcome of each expectation.")
    hallucination_result: HallucinationResult | None = Field(
        None, description="Output only. The result of the hallucination check.")
    tool_invocation_score: float | None = Field(
        None, description="Output only. Deprecated: use overallToolInvocationResult.")
    turn_latency: Duration | None = Field(None, description="Output only. How long the turn took.")
    tool_call_latencies: list[ToolCallLatency] | None = Field(
        None, description="Output only. The latency of each tool call in the turn.")
    semantic_similarity_result: SemanticSimilarityResult | None = Field(
        None, description="Output only. The result of the semantic similarity check.")
    overall_tool_invocation_result: OverallToolInvocationResult | None = Field(
        None, description="Output only. The result of the overall tool invocation check.")
    error_info: EvaluationErrorInfo | None = Field(
        None, description="Output only. The error that occurred during this turn.")
    span_latencies: list[SpanLatency] | None = Field(
        None, description="Output only. The latency of the spans in the turn.")
    tool_ordered_invocation_score: float | None = Field(
        None, description="Output only. Share of the turn's expected tools invoked in the expected order.")


class EvaluationExpectationResult(ProtoModel):
    evaluation_expectation: str | None = Field(
        None, description="Output only. …/apps/{app}/evaluationExpectations/{evaluationExpectation}")
    prompt: str | None = Field(None, description="Output only. The prompt used for the evaluation.")
    outcome: Outcome | None = Field(None, description="Output only. The outcome of the evaluation expectation.")
    explanation: str | None = Field(None, description="Output only. The explanation of the outcome.")


class GoldenResult(ProtoModel):
    turn_replay_results: list[TurnReplayResult] | None = Field(
        None, description="Output only. The result of replaying each turn of the golden conversation.")
    evaluation_expectation_results: list[EvaluationExpectationResult] | None = Field(
        None, description="Output only. The results of the evaluation expectations.")


class ObservedToolCall(ProtoModel):
    tool_call: ToolCall | None = Field(None, description="Output only. The tool call observed.")
    tool_response: ToolResponse | None = Field(None, description="Output only. The tool response observed.")


class ScenarioExpectationOutcome(ProtoModel):
    expectation: ScenarioExpectation | None = Field(None, description="Output only. The expectation evaluated.")
    outcome: Outcome | None = Field(None, description="Output only. The outcome of the expectation.")
    observed_tool_call: ObservedToolCall | None = Field(None, description="Output only. The tool call observed.")
    observed_agent_response: Message | None = Field(None, description="Output only. The agent response observed.")


class ScenarioRubricOutcome(ProtoModel):
    rubric: str | None = Field(None, description="Output only. The rubric the conversation was scored with.")
    score: float | None = Field(None, description="Output only. The score of the conversation against the rubric.")
    score_explanation: str | None = Field(None, description="Output only. The scorer's answer to the rubric.")


class TaskCompletionResult(ProtoModel):
    score: int | None = Field(None, description="Output only. The task completion score: -1, 0 or 1.")
    label: str | None = Field(
        None, description="Output only. The label of the score: 1 task completed, 0 not completed, -1 user goal "
                          "undefined.")
    explanation: str | None = Field(None, description="Output only. Why the task completion score was given.")


class UserGoalSatisfactionResult(ProtoModel):
    score: int | None = Field(None, description="Output only. The user goal satisfaction score: -1, 0, 1 or 2.")
    label: str | None = Field(
        None, description="Output only. The label of the score: 2 graceful handoff, 1 user task completed, "
                          "0 not completed, -1 user task unspecified.")
    explanation: str | None = Field(None, description="Output only. Why the user goal satisfaction score was given.")


class MilestoneResult(ProtoModel):
    milestone: Milestone | None = Field(None, description="Output only. The milestone tracked.")
    status: MilestoneStatus | None = Field(None, description="Output only. The current status of the milestone.")
    justification: str | None = Field(None, description="Output only. The justification of the current status.")


class ScenarioResult(ProtoModel):
    conversation: str | None = Field(None, description="Output only. The conversation generated in the scenario.")
    task: str | None = Field(None, description="Output only. The task used when running the scenario.")
    user_facts: list[UserFact] | None = Field(
        None, description="Output only. The user facts used by the scenario for this result.")
    expectation_outcomes: list[ScenarioExpectationOutcome] | None = Field(
        None, description="Output only. The outcome of each expectation.")
    rubric_outcomes: list[ScenarioRubricOutcome] | None = Field(
        None, description="Output only. The outcome of each rubric.")
    hallucination_result: list[HallucinationResult] | None = Field(
        None, description="Output only. The result of the hallucination check, one per turn of the conversation.")
    task_completion_result: TaskCompletionResult | None = Field(
        None, description="Output only. Deprecated: the result of the task completion check.")
    tool_call_latencies: list[ToolCallLatency] | None = Field(
        None, description="Output only. The latency of each tool call in the conversation.")
    user_goal_satisfaction_result: UserGoalSatisfactionResult | None = Field(
        None, description="Output only. The result of the user goal satisfaction check.")
    span_latencies: list[SpanLatency] | None = Field(
        None, description="Output only. The latency of the spans in the conversation.")
    evaluation_expectation_results: list[EvaluationExpectationResult] | None = Field(
        None, description="Output only. The results of the evaluation expectations.")
    milestone_results: list[MilestoneResult] | None = Field(
        None, description="Output only. The result of each milestone of the scenario.")
    all_expectations_satisfied: bool | None = Field(
        None, description="Output only. Whether every expectation was satisfied.")
    task_completed: bool | None = Field(
        None, description="Output only. Whether the task was completed: every expectation met, no hallucination and "
                          "the user goal satisfied.")


class SpeechConfig(ProtoModel):
    speaking_rate: float | None = Field(
        None, description="The speaking rate: 1.0 is normal, lower is slower (e.g. 0.8), higher faster (e.g. 1.5).")
    environment: BackgroundEnvironment | None = Field(None, description="The simulated background audio environment.")
    voice_id: str | None = Field(
        None, description='The voice (and accent) to use, e.g. "en-US-Wavenet-D" or "en-GB-Standard-A".')


class EvaluationPersona(ProtoModel):
    name: str | None = Field(None, description="…/apps/{app}/evaluationPersonas/{evaluationPersona}")
    description: str | None = Field(None, description="The description of the persona.")
    display_name: str | None = Field(None, description="Required. Unique within the app.")
    personality: str | None = Field(None, description="Required. How the simulated user behaves.")
    speech_config: SpeechConfig | None = Field(None, description="How the persona sounds (text-to-speech settings).")


class EvaluationResult(ProtoModel):
    name: str | None = Field(None, description="…/apps/{app}/evaluations/{evaluation}/results/{result}")
    display_name: str | None = Field(
        None, description='Unique within the evaluation; by default "<evaluation> result - <time>".')
    create_time: Timestamp | None = Field(None, description="Output only. When the result was created.")
    evaluation_status: Outcome | None = Field(
        None, description="Output only. The outcome of the evaluation; set only when executionState is COMPLETED.")
    evaluation_run: str | None = Field(
        None, description="Output only. The run that produced this result: …/apps/{app}/evaluationRuns/{evaluationRun}")
    persona: EvaluationPersona | None = Field(
        None, description="Output only. The persona used to generate the conversation.")
    error_info: EvaluationErrorInfo | None = Field(None, description="Output only. Why the result failed, if it did.")
    error: Status | None = Field(None, description="Output only. Deprecated: use errorInfo.")
    initiated_by: str | None = Field(None, description="Output only. The user who started the run.")
    app_version: str | None = Field(
        None, description="Output only. The app version evaluated (…/apps/{app}/versions/{version}); unset for "
                          "the draft.")
    app_version_display_name: str | None = Field(
        None, description="Output only. The display name of the app version evaluated.")
    changelog: str | None = Field(
        None, description="Output only. The changelog of the app version, when the run evaluated the latest draft.")
    changelog_create_time: Timestamp | None = Field(
        None, description="Output only. When that changelog was created, when the run evaluated the latest draft.")
    execution_state: ExecutionState | None = Field(
        None, description="Output only. The execution state of the result.")
    evaluation_metrics_thresholds: EvaluationMetricsThresholds | None = Field(
        None, description="Output only. The thresholds the result was judged with, defaults filled in.")
    config: EvaluationConfig | None = Field(
        None, description="Output only. The configuration of the run that produced this result.")
    golden_run_method: GoldenRunMethod | None = Field(
        None, description="Output only. How the golden evaluation was run: STABLE or NAIVE.")
    root_span: Span | None = Field(
        None, description="Output only. The root span of the execution, with information on each step.")
    outcome_metadata: OutcomeMetadata | None = Field(
        None, description="Output only. Metadata on the outcome; set only when executionState is COMPLETED.")
    golden_result: GoldenResult | None = Field(
        None, description="Output only. The result of a golden evaluation; set only when COMPLETED.")
    scenario_result: ScenarioResult | None = Field(
        None, description="Output only. The result of a scenario evaluation; set only when COMPLETED.")


# -- aggregated metrics ---------------------------------------------------------------------------


class ToolMetrics(ProtoModel):
    tool: str | None = Field(None, description="Output only. The name of the tool.")
    pass_count: int | None = Field(None, description="Output only. How many times the tool passed.")
    fail_count: int | None = Field(None, description="Output only. How many times the tool failed.")


class SemanticSimilarityMetrics(ProtoModel):
    score: float | None = Field(None, description="Output only. The average semantic similarity score (0 to 4).")


class HallucinationMetrics(ProtoModel):
    score: float | None = Field(None, description="Output only. The average hallucination score (0 to 1).")


class ToolCallLatencyMetrics(ProtoModel):
    tool: str | None = Field(None, description="Output only. The name of the tool.")
    average_latency: Duration | None = Field(None, description="Output only. The average latency of the tool calls.")


class TurnLatencyMetrics(ProtoModel):
    average_latency: Duration | None = Field(None, description="Output only. The average latency of the turns.")


class MetricsByTurn(ProtoModel):
    turn_index: int | None = Field(None, description="Output only. The index of the turn, from 0.")
    tool_metrics: list[ToolMetrics] | None = Field(
        None, description="Output only. Metrics of each tool in this turn.")
    semantic_similarity_metrics: list[SemanticSimilarityMetrics] | None = Field(
        None, description="Output only. Semantic similarity metrics in this turn.")
    hallucination_metrics: list[HallucinationMetrics] | None = Field(
        None, description="Output only. Hallucination metrics in this turn.")
    tool_call_latency_metrics: list[ToolCallLatencyMetrics] | None = Field(
        None, description="Output only. Tool call latency metrics in this turn.")
    turn_latency_metrics: list[TurnLatencyMetrics] | None = Field(
        None, description="Output only. Turn latency metrics in this turn.")


class MetricsByAppVersion(ProtoModel):
    app_version_id: str | None = Field(None, description="Output only. The ID of the app version.")
    tool_metrics: list[ToolMetrics] | None = Field(
        None, description="Output only. Metrics of each tool in this app version.")
    semantic_similarity_metrics: list[SemanticSimilarityMetrics] | None = Field(
        None, description="Output only. Semantic similarity metrics in this app version.")
    hallucination_metrics: list[HallucinationMetrics] | None = Field(
        None, description="Output only. Hallucination metrics in this app version.")
    tool_call_latency_metrics: list[ToolCallLatencyMetrics] | None = Field(
        None, description="Output only. Tool call latency metrics in this app version.")
    turn_latency_metrics: list[TurnLatencyMetrics] | None = Field(
        None, description="Output only. Turn latency metrics in this app version.")
    pass_count: int | None = Field(None, description="Output only. How many times the evaluation passed.")
    fail_count: int | None = Field(None, description="Output only. How many times the evaluation failed.")
    metrics_by_turn: list[MetricsByTurn] | None = Field(
        None, description="Output only. Metrics aggregated per turn in this app version.")


class AggregatedMetrics(ProtoModel):
    metrics_by_app_version: list[MetricsByAppVersion] | None = Field(
        None, description="Output only. Aggregated metrics, grouped by app version ID.")


# -- resources ------------------------------------------------------------------------------------


class Evaluation(ProtoModel):
    name: str | None = Field(
        None, description="Identifier. projects/{project}/locations/{location}/apps/{app}/evaluations/{evaluation}")
    display_name: str | None = Field(None, description="Required. Unique within the app.")
    description: str | None = Field(None, description="The user-defined description of the evaluation.")
    tags: list[str] | None = Field(None, description="User-defined tags to categorize the evaluation.")
    evaluation_datasets: list[str] | None = Field(None, description="Output only. The datasets that include it.")
    create_time: Timestamp | None = Field(None, description="Output only. When the evaluation was created.")
    created_by: str | None = Field(None, description="Output only. The user who created the evaluation.")
    update_time: Timestamp | None = Field(None, description="Output only. When the evaluation was last updated.")
    last_updated_by: str | None = Field(None, description="Output only. The user who last updated the evaluation.")
    evaluation_runs: list[str] | None = Field(None, description="Output only. The runs that ran it.")
    etag: str | None = Field(
        None, description="Output only. Changes with every update; send it back to update only an unchanged object.")
    aggregated_metrics: AggregatedMetrics | None = Field(
        None, description="Output only. The metrics of this evaluation, aggregated over all its runs.")
    last_completed_result: EvaluationResult | None = Field(
        None, description="Output only. The latest completed result of this evaluation.")
    invalid: bool | None = Field(
        None, description="Output only. True when it names a tool, toolset or agent that no longer exists.")
    last_ten_results: list[EvaluationResult] | None = Field(
        None, description="Output only. The last ten results of this evaluation, when the request asks for them.")
    evaluation_metrics_threshold_override: EvaluationMetricsThresholds | None = Field(
        None, description="Overrides the metric thresholds for this evaluation.")
    evaluation_metrics_config_override: EvaluationMetricsConfig | None = Field(
        None, description="Overrides the metrics configuration for this evaluation.")
    golden: Golden | None = Field(None, description="The golden conversation to replay.")
    scenario: Scenario | None = Field(None, description="A scenario for a simulated user.")

    @model_validator(mode="after")
    def _one_input(self) -> Evaluation:
        at_most_one(self, ("golden", "scenario"), "inputs")
        return self


class EvaluationDataset(ProtoModel):
    name: str | None = Field(None, description="…/apps/{app}/evaluationDatasets/{evaluationDataset}")
    display_name: str | None = Field(None, description="Required. Unique within the app.")
    evaluations: list[str] | None = Field(None, description="…/apps/{app}/evaluations/{evaluation} of the dataset.")
    create_time: Timestamp | None = Field(None, description="Output only. When the dataset was created.")
    update_time: Timestamp | None = Field(None, description="Output only. When the dataset was last updated.")
    etag: str | None = Field(
        None, description="Output only. Changes with every update; send it back to update only an unchanged object.")
    created_by: str | None = Field(None, description="Output only. The user who created the dataset.")
    last_updated_by: str | None = Field(None, description="Output only. The user who last updated the dataset.")
    aggregated_metrics: AggregatedMetrics | None = Field(
        None, description="Output only. The metrics of the dataset's evaluations, aggregated over its runs.")


class LlmCriteria(ProtoModel):
    prompt: str | None = Field(None, description="Required. What the judge checks the conversation for.")


class EvaluationExpectation(ProtoModel):
    name: str | None = Field(None, description="…/apps/{app}/evaluationExpectations/{evaluationExpectation}")
    display_name: str | None = Field(None, description="Required. Unique within the app.")
    llm_criteria: LlmCriteria | None = Field(None, description="An LLM judge's criteria for the conversation.")
    tags: list[str] | None = Field(None, description="User-defined tags to categorize the expectation.")
    create_time: Timestamp | None = Field(None, description="Output only. When the expectation was created.")
    update_time: Timestamp | None = Field(None, description="Output only. When the expectation was last updated.")
    etag: str | None = Field(
        None, description="Output only. Changes with every update; send it back to update only an unchanged object.")


class EvaluationRunProgress(ProtoModel):
    total_count: int | None = Field(None, description="Output only. How many results the run has.")
    failed_count: int | None = Field(None, description="Output only. How many results completed with FAIL.")
    error_count: int | None = Field(None, description="Output only. How many results failed to execute (ERROR).")
    completed_count: int | None = Field(None, description="Output only. How many results completed.")
    passed_count: int | None = Field(None, description="Output only. How many results completed with PASS.")


class EvaluationRunSummary(ProtoModel):
    passed_count: int | None = Field(None, description="Output only. How many of its results passed.")
    failed_count: int | None = Field(None, description="Output only. How many of its results failed.")
    error_count: int | None = Field(None, description="Output only. How many of its results failed to execute.")


class EvaluationType(StrEnum):
    EVALUATION_TYPE_UNSPECIFIED = "EVALUATION_TYPE_UNSPECIFIED"
    GOLDEN = "GOLDEN"
    SCENARIO = "SCENARIO"
    MIXED = "MIXED"


class EvaluationRunState(StrEnum):
    EVALUATION_RUN_STATE_UNSPECIFIED = "EVALUATION_RUN_STATE_UNSPECIFIED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"


class PersonaRunConfig(ProtoModel):
    persona: str | None = Field(None, description="…/apps/{app}/evaluationPersonas/{evaluationPersona}")
    task_count: int | None = Field(None, description="How many tasks (conversations) to run with this persona.")


class EvaluationRun(ProtoModel):
    name: str | None = Field(
        None,
        description="Identifier. projects/{project}/locations/{location}/apps/{app}/evaluationRuns/{evaluationRun}")
    display_name: str | None = Field(None, description="The display name of the run.")
    evaluation_results: list[str] | None = Field(
        None, description="Output only. The results of the run: …/evaluations/{evaluation}/results/{result}")
    create_time: Timestamp | None = Field(None, description="Output only. When the run was created.")
    initiated_by: str | None = Field(None, description="Output only. The user who started the run.")
    app_version: str | None = Field(
        None, description="Output only. The app version evaluated (…/apps/{app}/versions/{version}); unset for "
                          "the draft.")
    app_version_display_name: str | None = Field(
        None, description="Output only. The display name of the app version evaluated.")
    evaluations: list[str] | None = Field(
        None, description="Output only. The evaluations run, when not run as a dataset.")
    evaluation_dataset: str | None = Field(
        None, description="Output only. The dataset run: …/apps/{app}/evaluationDatasets/{evaluationDataset}")
    evaluation_type: EvaluationType | None = Field(
        None, description="Output only. The kind of evaluations run: GOLDEN, SCENARIO or MIXED.")
    state: EvaluationRunState | None = Field(None, description="Output only. The state of the run.")
    progress: EvaluationRunProgress | None = Field(
        None, description="Output only. How many of the run's results have finished, and how.")
    config: EvaluationConfig | None = Field(None, description="Output only. The configuration of the run.")
    error_info: EvaluationErrorInfo | None = Field(None, description="Output only. Why the run failed, if it did.")
    evaluation_run_summaries: dict[str, EvaluationRunSummary] | None = Field(
        None, description="Output only. Per evaluation (by its resource name), the counts of its results.")
    run_count: int | None = Field(None, description="Output only. How many times each evaluation was run.")
    persona_run_configs: list[PersonaRunConfig] | None = Field(
        None, description="Output only. The personas of the scenario evaluations and how many tasks each ran.")
    golden_run_method: GoldenRunMethod | None = Field(
        None, description="Output only. How the golden evaluations were run: STABLE or NAIVE.")
