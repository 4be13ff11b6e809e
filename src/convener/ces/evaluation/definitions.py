"""Checks run when an evaluation, dataset, expectation or persona is written, and the references an
evaluation makes to the app (which decide ``invalid`` once one of them is deleted).

Every problem is INVALID_ARGUMENT naming the field. A golden must be replayable: at least one turn,
at most 100, each with a user input, each step one thing, each expectation one condition, and every
tool, toolset, agent and evaluation expectation it names must exist in the app.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from convener.api.errors import InvalidArgument
from convener.ces.catalog import AppParts
from convener.ces.evaluation.models import (
    Evaluation,
    EvaluationDataset,
    EvaluationExpectation,
    EvaluationPersona,
    Golden,
    GoldenExpectation,
    Scenario,
)
from convener.ces.models import AgentTransfer, Message, ToolCall, ToolResponse
from convener.ces.names import (
    AgentName,
    AppChildName,
    EvaluationExpectationName,
    EvaluationName,
    ToolName,
    ToolsetName,
)

MAX_TURNS = 100
MAX_STEPS = 200
MAX_TAGS = 50
MAX_TAG_LENGTH = 128
MAX_PROMPT_LENGTH = 20_000
MAX_DATASET_SIZE = 10_000
MAX_SCENARIO_ITEMS = 100
MAX_UTTERANCE_LENGTH = 4_000
"""A user fact's value or a milestone's static utterance: what a user could type in one message."""


@dataclass(frozen=True)
class Reference:
    """A part of the app an evaluation names, and where."""

    field: str
    kind: type[AppChildName]
    value: str


def _exchange_references(item: ToolCall | ToolResponse, field: str) -> Iterator[Reference]:
    if item.tool is not None:
        yield Reference(f"{field}.tool", ToolName, item.tool)
    elif item.toolset_tool is not None:
        yield Reference(f"{field}.toolsetTool.toolset", ToolsetName, item.toolset_tool.toolset or "")
    else:
        raise InvalidArgument(f"{field}: tool or toolsetTool is required")


def _transfer_references(transfer: AgentTransfer, field: str) -> Iterator[Reference]:
    yield Reference(f"{field}.targetAgent", AgentName, transfer.target_agent or "")


def _expectation_references(expectation: GoldenExpectation, field: str) -> Iterator[Reference]:
    for condition in ("tool_call", "tool_response", "mock_tool_response"):
        item = getattr(expectation, condition)
        if item is not None:
            yield from _exchange_references(item, f"{field}.{_camel(condition)}")
    if expectation.agent_transfer is not None:
        yield from _transfer_references(expectation.agent_transfer, f"{field}.agentTransfer")


def references(evaluation: Evaluation) -> Iterator[Reference]:
    """Every tool, toolset, agent and evaluation expectation the evaluation names."""
    if evaluation.golden is not None:
        for t, turn in enumerate(evaluation.golden.turns or ()):
            for s, step in enumerate(turn.steps or ()):
                field = f"golden.turns[{t}].steps[{s}]"
                if step.agent_transfer is not None:
                    yield from _transfer_references(step.agent_transfer, f"{field}.agentTransfer")
                if step.expectation is not None:
                    yield from _expectation_references(step.expectation, f"{field}.expectation")
        expectations = evaluation.golden.evaluation_expectations
        prefix = "golden"
    elif evaluation.scenario is not None:
        for i, item in enumerate(evaluation.scenario.scenario_expectations or ()):
            field = f"scenario.scenarioExpectations[{i}].toolExpectation"
            if item.tool_expectation is not None:
                if item.tool_expectation.expected_tool_call is not None:
                    yield from _exchange_references(item.tool_expectation.expected_tool_call,
                                                    f"{field}.expectedToolCall")
                if item.tool_expectation.mock_tool_response is not None:
                    yield from _exchange_references(item.tool_expectation.mock_tool_response,
                                                    f"{field}.mockToolResponse")
        expectations = evaluation.scenario.evaluation_expectations
        prefix = "scenario"
    else:
        return
    for i, value in enumerate(expectations or ()):
        yield Reference(f"{prefix}.evaluationExpectations[{i}]", EvaluationExpectationName, value)


def missing_references(evaluation: Evaluation, owner: AppChildName, parts: AppParts) -> list[str]:
    """The references that do not resolve to a part of the app now, as readable problems."""
    problems = []
    for reference in references(evaluation):
        try:
            name = reference.kind.parse(reference.value, reference.field)
        except InvalidArgument as error:
            problems.append(error.message)
            continue
        if name.app_name != owner.app_name:
            problems.append(f"{reference.field}: {reference.value} is not in the app {owner.app_name}")
        elif not parts.exists(reference.kind.collection, name.id):
            problems.append(f"{reference.field}: {reference.value} does not exist")
    return problems


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


def _has_text(message: Message) -> bool:
    return any(chunk.text for chunk in message.chunks or ())


def _check_tags(tags: list[str] | None, field: str) -> None:
    if tags is None:
        return
    if len(tags) > MAX_TAGS:
        raise InvalidArgument(f"{field} lists more than {MAX_TAGS} tags")
    for index, tag in enumerate(tags):
        if not tag or len(tag) > MAX_TAG_LENGTH:
            raise InvalidArgument(f"{field}[{index}] must be 1 to {MAX_TAG_LENGTH} characters")


def _check_golden(golden: Golden) -> None:
    turns = golden.turns or []
    if not turns:
        raise InvalidArgument("golden.turns: at least one turn is required")
    if len(turns) > MAX_TURNS:
        raise InvalidArgument(f"golden.turns: at most {MAX_TURNS} turns are allowed")
    for t, turn in enumerate(turns):
        steps = turn.steps or []
        where = f"golden.turns[{t}]"
        if not steps:
            raise InvalidArgument(f"{where}.steps: at least one step is required")
        if len(steps) > MAX_STEPS:
            raise InvalidArgument(f"{where}.steps: at most {MAX_STEPS} steps are allowed")
        if not any(step.user_input is not None for step in steps):
            raise InvalidArgument(f"{where}.steps: a turn needs at least one userInput step to replay")
        for s, step in enumerate(steps):
            field = f"{where}.steps[{s}]"
            if step.user_input is None and step.agent_transfer is None and step.expectation is None:
                raise InvalidArgument(f"{field}: one of userInput, agentTransfer or expectation is required")
            if step.user_input is not None and step.user_input.kind is None:
                raise InvalidArgument(f"{field}.userInput: one input (text, dtmf, event, variables, ...) is required")
            expectation = step.expectation
            if expectation is None:
                continue
            condition = expectation.condition
            if condition is None:
                raise InvalidArgument(
                    f"{field}.expectation: one condition is required (toolCall, toolResponse, agentResponse, "
                    "agentTransfer, updatedVariables, mockToolResponse or noToolCalls)")
            if expectation.agent_response is not None and not _has_text(expectation.agent_response):
                raise InvalidArgument(f"{field}.expectation.agentResponse: a text chunk is required")
            if expectation.no_tool_calls is False:
                raise InvalidArgument(f"{field}.expectation.noToolCalls: set it to true, or leave it out")
            if expectation.note is not None and len(expectation.note) > 1024:
                raise InvalidArgument(f"{field}.expectation.note is longer than 1024 characters")


def _check_length(value: str | None, field: str, limit: int = MAX_PROMPT_LENGTH) -> None:
    if value is not None and len(value) > limit:
        raise InvalidArgument(f"{field} is longer than {limit} characters")


def check_scenario(scenario: Scenario) -> None:
    """A scenario that can be simulated: what create_evaluation and ``convener simulate`` accept."""
    if not (scenario.task or "").strip():
        raise InvalidArgument("scenario.task is required")
    _check_length(scenario.task, "scenario.task")
    if scenario.max_turns is not None and not 0 <= scenario.max_turns <= MAX_TURNS:
        raise InvalidArgument(f"scenario.maxTurns must be between 0 and {MAX_TURNS} (0 means {MAX_TURNS})")
    for field, items in (("userFacts", scenario.user_facts), ("rubrics", scenario.rubrics),
                         ("scenarioExpectations", scenario.scenario_expectations),
                         ("milestones", scenario.milestones)):
        if items is not None and len(items) > MAX_SCENARIO_ITEMS:
            raise InvalidArgument(f"scenario.{field} lists more than {MAX_SCENARIO_ITEMS} entries")
    for i, fact in enumerate(scenario.user_facts or ()):
        if not (fact.name or "").strip() or fact.value is None:
            raise InvalidArgument(f"scenario.userFacts[{i}]: name and value are required")
        _check_length(fact.name, f"scenario.userFacts[{i}].name", 256)
        _check_length(fact.value, f"scenario.userFacts[{i}].value", MAX_UTTERANCE_LENGTH)
    for i, rubric in enumerate(scenario.rubrics or ()):
        if not rubric.strip():
            raise InvalidArgument(f"scenario.rubrics[{i}] must not be empty")
        _check_length(rubric, f"scenario.rubrics[{i}]")
    for i, item in enumerate(scenario.scenario_expectations or ()):
        field = f"scenario.scenarioExpectations[{i}]"
        if item.tool_expectation is None and item.agent_response is None:
            raise InvalidArgument(f"{field}: toolExpectation or agentResponse is required")
        if item.tool_expectation is not None and (item.tool_expectation.expected_tool_call is None
                                                  or item.tool_expectation.mock_tool_response is None):
            raise InvalidArgument(f"{field}.toolExpectation: expectedToolCall and mockToolResponse are required")
        if item.agent_response is not None and not _has_text(item.agent_response):
            raise InvalidArgument(f"{field}.agentResponse: a text chunk is required")
    for i, milestone in enumerate(scenario.milestones or ()):
        if not (milestone.goal or "").strip():
            raise InvalidArgument(f"scenario.milestones[{i}].goal is required")
        if milestone.max_turn_count is not None and not 0 <= milestone.max_turn_count <= MAX_TURNS:
            raise InvalidArgument(f"scenario.milestones[{i}].maxTurnCount must be between 0 and {MAX_TURNS}")
        if milestone.static_utterance is not None and milestone.event is not None:
            raise InvalidArgument(f"scenario.milestones[{i}]: set staticUtterance or event, not both")
        if milestone.static_utterance is not None and not milestone.static_utterance.strip():
            raise InvalidArgument(f"scenario.milestones[{i}].staticUtterance must not be empty")
        if milestone.event is not None and not (milestone.event.event or "").strip():
            raise InvalidArgument(f"scenario.milestones[{i}].event.event (the event's name) is required")
        for part in ("goal", "success_criteria", "protocol"):
            _check_length(getattr(milestone, part), f"scenario.milestones[{i}].{part}")
        _check_length(milestone.static_utterance, f"scenario.milestones[{i}].staticUtterance", MAX_UTTERANCE_LENGTH)


def check_evaluation(evaluation: Evaluation, name: AppChildName, parts: AppParts) -> Evaluation:
    if evaluation.golden is None and evaluation.scenario is None:
        raise InvalidArgument("evaluation: golden or scenario is required")
    _check_tags(evaluation.tags, "evaluation.tags")
    if evaluation.golden is not None:
        _check_golden(evaluation.golden)
    if evaluation.scenario is not None:
        check_scenario(evaluation.scenario)
    problems = missing_references(evaluation, name, parts)
    if problems:
        raise InvalidArgument(f"evaluation.{problems[0]}")
    return evaluation


def check_dataset(dataset: EvaluationDataset, name: AppChildName, parts: AppParts) -> EvaluationDataset:
    members = dataset.evaluations or []
    if len(members) > MAX_DATASET_SIZE:
        raise InvalidArgument(f"evaluationDataset.evaluations lists more than {MAX_DATASET_SIZE} evaluations")
    unique: list[str] = []
    for index, value in enumerate(members):
        field = f"evaluationDataset.evaluations[{index}]"
        member = EvaluationName.parse(value, field)
        if member.app_name != name.app_name:
            raise InvalidArgument(f"{field}: {value} is not in the app {name.app_name}")
        if not parts.exists(EvaluationName.collection, member.id):
            raise InvalidArgument(f"{field}: evaluation {value} does not exist")
        if str(member) not in unique:
            unique.append(str(member))
    return dataset.model_copy(update={"evaluations": unique or None})


def check_expectation(expectation: EvaluationExpectation, name: AppChildName, parts: AppParts) -> EvaluationExpectation:
    prompt = expectation.llm_criteria.prompt if expectation.llm_criteria else None
    if not (prompt or "").strip():
        raise InvalidArgument("evaluationExpectation.llmCriteria.prompt is required")
    assert prompt is not None
    if len(prompt) > MAX_PROMPT_LENGTH:
        raise InvalidArgument(f"evaluationExpectation.llmCriteria.prompt is longer than {MAX_PROMPT_LENGTH} characters")
    _check_tags(expectation.tags, "evaluationExpectation.tags")
    return expectation


def check_persona(persona: EvaluationPersona, name: AppChildName, parts: AppParts) -> EvaluationPersona:
    for field in ("description", "personality"):
        value = getattr(persona, field)
        if value is not None and len(value) > MAX_PROMPT_LENGTH:
            raise InvalidArgument(f"evaluationPersona.{field} is longer than {MAX_PROMPT_LENGTH} characters")
    if persona.speech_config is not None and persona.speech_config.speaking_rate is not None \
            and not 0.25 <= persona.speech_config.speaking_rate <= 4.0:
        raise InvalidArgument("evaluationPersona.speechConfig.speakingRate must be between 0.25 and 4.0")
    return persona
