"""A golden evaluation from a recorded conversation: what the user did becomes the steps, what the
agent did becomes the expectations.

Per recorded turn: the user's text, events, variables and client tool responses become
``userInput`` steps, in order. The agent's tool calls become ``toolCall`` expectations (with their
arguments), tool responses ``toolResponse`` expectations, transfers ``agentTransfer``, variables it
set ``updatedVariables``, and each run of consecutive replies one ``agentResponse`` (compared for
semantic similarity). A turn with no user input (nothing to replay) is left out.
"""

from __future__ import annotations

from convener.api.errors import FailedPrecondition
from convener.ces.evaluation.models import Golden, GoldenExpectation, GoldenTurn, Step
from convener.ces.models import Chunk, Conversation, Message, ToolCall, ToolResponse
from convener.ces.session_models import Event, SessionInput, ToolResponses

MAX_TURNS = 100


def _user_input(chunk: Chunk) -> SessionInput | None:
    if chunk.text is not None:
        return SessionInput(text=chunk.text)
    if chunk.updated_variables is not None:
        return SessionInput(variables=chunk.updated_variables)
    if chunk.payload is not None and isinstance(chunk.payload.get("event"), str):
        variables = chunk.payload.get("variables")
        return SessionInput(event=Event(event=str(chunk.payload["event"]),
                                        variables=variables if isinstance(variables, dict) else None))
    if chunk.tool_response is not None:
        answer = chunk.tool_response
        return SessionInput(tool_responses=ToolResponses(tool_responses=[
            ToolResponse(id=answer.id, tool=answer.tool, response=answer.response or {})]))
    return None


def _expectations(chunks: list[Chunk]) -> list[Step]:
    steps: list[Step] = []
    replies: list[Chunk] = []

    def flush() -> None:
        if replies:
            steps.append(Step(expectation=GoldenExpectation(agent_response=Message(role="agent", chunks=list(replies)))))
            replies.clear()

    for chunk in chunks:
        if chunk.text:
            replies.append(Chunk(text=chunk.text))
            continue
        flush()
        if chunk.tool_call is not None:
            call = chunk.tool_call
            steps.append(Step(expectation=GoldenExpectation(tool_call=ToolCall(
                tool=call.tool, toolset_tool=call.toolset_tool, args=call.args or {}))))
        elif chunk.tool_response is not None:
            response = chunk.tool_response
            steps.append(Step(expectation=GoldenExpectation(tool_response=ToolResponse(
                tool=response.tool, toolset_tool=response.toolset_tool, response=response.response or {}))))
        elif chunk.agent_transfer is not None:
            steps.append(Step(expectation=GoldenExpectation(agent_transfer=chunk.agent_transfer.model_copy(
                update={"display_name": None}))))
        elif chunk.updated_variables:
            steps.append(Step(expectation=GoldenExpectation(updated_variables=chunk.updated_variables)))
    flush()
    return steps


def golden_from_conversation(conversation: Conversation) -> Golden:
    turns: list[GoldenTurn] = []
    for turn in conversation.turns or ():
        inputs: list[Step] = []
        expectations: list[Step] = []
        for message in turn.messages or ():
            if message.role == "user":
                inputs.extend(Step(user_input=item) for chunk in message.chunks or ()
                              if (item := _user_input(chunk)) is not None)
            else:
                expectations.extend(_expectations(list(message.chunks or ())))
        if inputs:
            turns.append(GoldenTurn(steps=[*inputs, *expectations]))
    if not turns:
        raise FailedPrecondition(f"conversation {conversation.name} has no user input to replay")
    if len(turns) > MAX_TURNS:
        raise FailedPrecondition(f"conversation {conversation.name} has more than {MAX_TURNS} turns to replay")
    return Golden(turns=turns)
