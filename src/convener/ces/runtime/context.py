"""What one agent sees and changes while it handles its part of a turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from convener.ces.definitions import Agent
from convener.ces.models import AgentTransfer, Chunk, Message, ToolCall
from convener.ces.runtime.blueprint import Blueprint
from convener.ces.runtime.toolbox import Toolbox, ToolRef
from convener.ces.runtime.tracing import Trace
from convener.ces.session_models import SessionOutput, ToolCalls
from convener.config import Settings
from convener.llm.base import ModelProvider


@dataclass(frozen=True)
class AgentInput:
    """One input for an agent: text the user said, an event, or the answers to client tool calls."""

    text: str | None = None
    event: str | None = None
    tool_responses: tuple[dict[str, Any], ...] = ()
    """``{"id", "response"}`` of each answered call, for the agent that made them."""
    note: str | None = None
    """What a non-text input was (an image, a blob), for agents that only read text."""
    raw: dict[str, Any] = field(default_factory=dict)
    """The SessionInput as JSON, for agents behind the turn protocol."""
    handoff: bool = False
    """The input was handled by another agent first, which transferred it here."""


@dataclass
class Step:
    """How an agent's handling ended."""

    transfer_to: str | None = None
    end_session: bool = False
    waiting: bool = False
    """Waiting for the client to answer tool calls."""


@dataclass
class TurnContext:
    blueprint: Blueprint
    settings: Settings
    provider: ModelProvider | None
    trace: Trace
    toolbox: Toolbox
    session: str
    state: dict[str, Any]
    """The session's persisted state; see ``turn.new_state``."""
    history: list[Message]
    """The conversation so far (earlier turns), for agents that read it."""
    chunks: list[Chunk] = field(default_factory=list)
    """The agent side of this turn, in order."""
    outputs: list[SessionOutput] = field(default_factory=list)

    @property
    def variables(self) -> dict[str, Any]:
        variables: dict[str, Any] = self.state.setdefault("variables", {})
        return variables

    def agent(self, agent_id: str) -> Agent:
        return self.blueprint.agents[agent_id]

    def agent_state(self, agent_id: str) -> dict[str, Any]:
        states: dict[str, Any] = self.state.setdefault("agents", {})
        state: dict[str, Any] = states.setdefault(agent_id, {})
        return state

    # -- what the agent says and does ------------------------------------------------------------

    def say(self, text: str) -> None:
        self.chunks.append(Chunk(text=text))
        self.outputs.append(SessionOutput(text=text))

    def send_payload(self, payload: dict[str, Any]) -> None:
        self.chunks.append(Chunk(payload=payload))
        self.outputs.append(SessionOutput(payload=payload))

    def set_variables(self, values: dict[str, Any]) -> None:
        if values:
            self.variables.update(values)
            self.chunks.append(Chunk(updated_variables=values))

    def transfer(self, agent_id: str) -> None:
        self.chunks.append(Chunk(agent_transfer=AgentTransfer(
            target_agent=self.blueprint.agent_name(agent_id), display_name=self.blueprint.display_name(agent_id),
        )))

    def run_tool(self, agent_id: str, ref: ToolRef, args: dict[str, Any], call_id: str) -> dict[str, Any] | None:
        """Run a tool for an agent, recording the call and its response; None when the client must answer."""
        if self.toolbox.is_client(ref):
            self.record_call(agent_id, ref, args, call_id, None)
            return None
        call = self.record_call(agent_id, ref, args, call_id, None, pending=False)
        response = self.toolbox.run(ref, args)
        self.chunks.append(Chunk(tool_response=self.toolbox.tool_response(call, response)))
        return response

    def record_call(self, agent_id: str, ref: ToolRef, args: dict[str, Any], call_id: str,
                    response: dict[str, Any] | None, *, pending: bool = True) -> ToolCall:
        """Record a call (and its response, when it ran); a client call without one goes to the client."""
        call = self.toolbox.tool_call(ref, args, call_id, self.blueprint.display_name(agent_id))
        self.chunks.append(Chunk(tool_call=call))
        if response is not None:
            self.chunks.append(Chunk(tool_response=self.toolbox.tool_response(call, response)))
        elif pending:
            self.outputs.append(SessionOutput(tool_calls=ToolCalls(tool_calls=[call])))
            waiting: dict[str, Any] = self.state.setdefault("pending", {})
            waiting[call_id] = {"agent": agent_id, "ref": ref.to_json(), "args": args}
        return call
