"""What one agent sees and changes while it handles its part of a turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from convener.ces.definitions import Agent
from convener.ces.models import AgentTransfer, Chunk, Message, ToolCall
from convener.ces.runtime import callbacks
from convener.ces.runtime.blueprint import Blueprint
from convener.ces.runtime.failures import ToolFailure
from convener.ces.runtime.toolbox import Toolbox, ToolRef, as_response
from convener.ces.runtime.tracing import Trace
from convener.ces.session_models import SessionOutput, ToolCalls
from convener.config import Settings
from convener.llm.base import ModelProvider

T = TypeVar("T")


def _replaced(items: list[T], replacement: T | None, is_text: Callable[[T], bool]) -> list[T]:
    first = next((index for index, item in enumerate(items) if is_text(item)), len(items))
    rest = [item for item in items[first:] if not is_text(item)]
    return [*items[:first], *([replacement] if replacement is not None else []), *rest]


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
    guarded: bool = False
    """A guardrail sent the input here: the agent's input guardrails have had their say on it."""


MAX_END_REASON = 1_000


@dataclass(frozen=True)
class SessionEnd:
    """The agent ended the session: why, and whether the user was escalated to a human agent.

    As CES's ``end_session`` system tool, which takes a ``reason`` and ``session_escalated``; the session's
    ``endSession`` output carries them in its metadata."""

    reason: str | None = None
    escalated: bool = False

    def metadata(self) -> dict[str, Any]:
        """The ``endSession.metadata`` fields: ``reason`` when given, ``session_escalated`` when true."""
        # A rendered template may be longer than the 1,000 characters its source may have: kept bounded.
        fields: dict[str, Any] = {"reason": self.reason[:MAX_END_REASON]} if self.reason else {}
        if self.escalated:
            fields["session_escalated"] = True
        return fields


@dataclass
class Step:
    """How an agent's handling ended."""

    transfer_to: str | None = None
    end_session: SessionEnd | None = None
    waiting: bool = False
    """Waiting for the client to answer tool calls."""
    guarded: bool = False
    """The transfer is a guardrail's action."""


@dataclass(frozen=True)
class Mark:
    """Where an agent's handling began in the turn's record, so its text replies can be found again."""

    chunks: int
    outputs: int
    model_entries: tuple[dict[str, Any], ...]
    """The model history's entries before, known by identity (the history may be trimmed from the front).
    Held, not just their ids: an entry trimmed and freed could otherwise lend its id to a new one."""


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
    history: Sequence[Message]
    """The conversation so far (earlier turns), for agents that read it; it may be read from the store only when
    looked at, and a slice of its last messages (``history[-k:]``) reads only the last turns."""
    chunks: list[Chunk] = field(default_factory=list)
    """The agent side of this turn, in order."""
    outputs: list[SessionOutput] = field(default_factory=list)
    observe: Callable[[Chunk], None] | None = None
    """Told of each chunk as the agent side of the turn records it (a session's live progress)."""

    def _add(self, chunk: Chunk) -> None:
        self.chunks.append(chunk)
        if self.observe is not None:
            self.observe(chunk)

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
        self._add(Chunk(text=text))
        self.outputs.append(SessionOutput(text=text))

    def send_payload(self, payload: dict[str, Any]) -> None:
        self._add(Chunk(payload=payload))
        self.outputs.append(SessionOutput(payload=payload))

    def set_variables(self, values: dict[str, Any]) -> None:
        if values:
            self.variables.update(values)
            self._add(Chunk(updated_variables=values))

    def transfer(self, agent_id: str) -> None:
        self._add(Chunk(agent_transfer=AgentTransfer(
            target_agent=self.blueprint.agent_name(agent_id), display_name=self.blueprint.display_name(agent_id),
        )))

    def run_tool(self, agent_id: str, ref: ToolRef, args: dict[str, Any], call_id: str) -> dict[str, Any] | None:
        """Run a tool for an agent, recording the call and its response; None when the client must answer."""
        if self.toolbox.is_client(ref, args):
            self.record_call(agent_id, ref, args, call_id, None)
            return None
        args, response = self.call_tool(agent_id, ref, args)
        call = self.record_call(agent_id, ref, args, call_id, None, pending=False)
        self._add(Chunk(tool_response=self.toolbox.tool_response(call, response)))
        return response

    def call_tool(self, agent_id: str, ref: ToolRef, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A server-side tool call between the agent's tool callbacks: the arguments it ran with, and the
        response. A before-tool callback may change the arguments or answer instead of the tool; an
        after-tool callback may replace the response."""
        agent = self.blueprint.agents.get(agent_id)
        before_list = agent.before_tool_callbacks if agent else None
        after_list = agent.after_tool_callbacks if agent else None
        if not before_list and not after_list:
            return args, self.toolbox.run(ref, args)
        payload: dict[str, Any] = {"agent": self.blueprint.agent_name(agent_id), "args": args,
                                   "variables": self.variables}
        if ref.tool:
            payload["tool"] = self.toolbox.tool_name(ref.tool)
        else:
            payload["toolsetTool"] = {"toolset": self.toolbox.toolset_name(ref.toolset or ""), "toolId": ref.tool_id}
        before = callbacks.run(self.trace, self.settings, before_list, "BEFORE_TOOL", "agent.beforeToolCallbacks",
                               payload, override="response", updates=("args",))
        args = payload["args"]
        if before.override is not None:
            response = self._tool_response(before.override)
        else:
            response = self.toolbox.run(ref, args)
        after = callbacks.run(self.trace, self.settings, after_list, "AFTER_TOOL", "agent.afterToolCallbacks",
                              {**payload, "response": response}, override="response")
        if after.override is not None:
            response = self._tool_response(after.override)
        return args, response

    @staticmethod
    def _tool_response(value: dict[str, Any]) -> dict[str, Any]:
        """A callback's response in the tools' convention (``output``/``error`` keys)."""
        try:
            return as_response(value)
        except ToolFailure as failure:
            return {"error": failure.message}

    # -- replacing what an agent said --------------------------------------------------------------

    def mark(self) -> Mark:
        return Mark(len(self.chunks), len(self.outputs), tuple(self.state.get("llm", [])))

    def replies_since(self, mark: Mark) -> list[str]:
        return [chunk.text for chunk in self.chunks[mark.chunks:] if chunk.text is not None]

    def replace_replies(self, mark: Mark, text: str | None) -> None:
        """Replace the text replies made since ``mark`` with ``text`` (or remove them, when None), where the
        first of them was; tool calls, transfers and variables stay. The model's history is rewritten to
        match, so that an llm agent does not believe it said what a guardrail or callback took back."""
        self.chunks[mark.chunks:] = _replaced(self.chunks[mark.chunks:], Chunk(text=text) if text else None,
                                              lambda chunk: chunk.text is not None)
        self.outputs[mark.outputs:] = _replaced(self.outputs[mark.outputs:],
                                                SessionOutput(text=text) if text else None,
                                                lambda output: output.text is not None)
        history: list[dict[str, Any]] = self.state.get("llm", [])
        before = {id(entry) for entry in mark.model_entries}
        said = [entry for entry in history if id(entry) not in before and entry.get("role") == "assistant"]
        if not said:
            return
        for entry in said:
            entry["content"] = None
        said[-1]["content"] = text or None
        dropped = {id(entry) for entry in said if entry["content"] is None and not entry.get("toolCalls")}
        history[:] = [entry for entry in history if id(entry) not in dropped]

    def record_call(self, agent_id: str, ref: ToolRef, args: dict[str, Any], call_id: str,
                    response: dict[str, Any] | None, *, pending: bool = True) -> ToolCall:
        """Record a call (and its response, when it ran); a client call without one goes to the client."""
        call = self.toolbox.tool_call(ref, args, call_id, self.blueprint.display_name(agent_id))
        self._add(Chunk(tool_call=call))
        if response is not None:
            self._add(Chunk(tool_response=self.toolbox.tool_response(call, response)))
        elif pending:
            self.outputs.append(SessionOutput(tool_calls=ToolCalls(tool_calls=[call])))
            waiting: dict[str, Any] = self.state.setdefault("pending", {})
            waiting[call_id] = {"agent": agent_id, "ref": ref.to_json(), "args": args}
        return call
