"""One turn of a session: the inputs of a run_session call, handled by the session's current agent.

Inputs are taken in order. Variables are merged; text marked ``willContinue`` waits for the rest;
text, DTMF, events and media go to the current agent; tool responses go back to the agent whose
client tool calls they answer. An agent may transfer the input to another agent (bounded hops).
The turn returns what the client sees (``SessionOutput``s) and what is recorded (the user's and
the agent's messages and the span tree).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from convener.api.errors import InvalidArgument
from convener.api.protojson import Timestamp
from convener.ces.definitions import Agent
from convener.ces.models import Blob, Chunk, Message, Span, ToolResponse
from convener.ces.runtime import callbacks, guardrails
from convener.ces.runtime.blueprint import Blueprint
from convener.ces.runtime.context import AgentInput, Step, TurnContext
from convener.ces.runtime.failures import AgentFailure
from convener.ces.runtime.kinds import KINDS
from convener.ces.runtime.toolbox import Toolbox, ToolFakes, ToolRef
from convener.ces.runtime.tracing import Trace
from convener.ces.session_models import DiagnosticInfo, EndSession, SessionInput, SessionOutput
from convener.config import Settings
from convener.llm.base import ModelProvider

MAX_TRANSFERS = 8
MAX_BUFFERED_CHARS = 100_000


def new_state(entry_agent: str, variables: dict[str, Any]) -> dict[str, Any]:
    """The state a session starts with; it is JSON and kept between run_session calls."""
    return {"agent": entry_agent, "entryAgent": entry_agent, "variables": variables, "pending": {}, "agents": {},
            "llm": [], "buffer": "", "ended": False, "turns": 0}


@dataclass
class TurnRecord:
    outputs: list[SessionOutput]
    messages: list[Message]
    root_span: Span
    state: dict[str, Any]
    failure: AgentFailure | None


class TurnRunner:
    def __init__(self, blueprint: Blueprint, settings: Settings, provider: ModelProvider | None, session: str,
                 state: dict[str, Any], history: Sequence[Message], fakes: ToolFakes | None = None,
                 observe: Callable[[Chunk], None] | None = None) -> None:
        self.started = Timestamp.now()
        self.state = state
        self.turn_index = int(state.get("turns", 0)) + 1
        trace = Trace("TURN", {"session": session, "turnIndex": self.turn_index})
        self.ctx = TurnContext(blueprint, settings, provider, trace, Toolbox(blueprint, settings, trace, fakes),
                               session, state, history, observe=observe)
        self.user: list[Chunk] = []

    def run(self, inputs: list[SessionInput]) -> TurnRecord:
        failure = None
        try:
            for index, item in enumerate(inputs):
                self._take(index, item)
        except AgentFailure as error:
            failure = error
            self.ctx.trace.current.fail(error.code, error.message)
        root = self.ctx.trace.finish()
        if not self.user and not self.ctx.chunks and failure is None:
            # Only a fragment (willContinue) or a recording control arrived: no turn happened yet.
            return TurnRecord([], [], root, self.state, None)
        self.state["turns"] = self.turn_index
        messages = [Message(role="user", chunks=self.user or None, event_time=self.started)]
        if self.ctx.chunks:
            messages.append(Message(role="agent", chunks=self.ctx.chunks, event_time=root.end_time))
        outputs = list(self.ctx.outputs)
        if self.state.get("ended"):
            ended = self.state.get("endSession") or {"agent": self.state["agent"]}
            outputs.append(SessionOutput(end_session=EndSession(metadata=dict(ended))))
        outputs.append(SessionOutput(turn_completed=True,
                                     diagnostic_info=DiagnosticInfo(messages=messages, root_span=root)))
        for output in outputs:
            output.turn_index = self.turn_index
        return TurnRecord(outputs, messages, root, self.state, failure)

    # -- inputs ----------------------------------------------------------------------------------

    def _take(self, index: int, item: SessionInput) -> None:
        raw = item.to_json()
        if item.variables is not None:
            self.user.append(Chunk(updated_variables=item.variables))
            self.ctx.variables.update(item.variables)
        elif item.text is not None:
            buffered = str(self.state.get("buffer", "")) + item.text
            if item.will_continue:
                if len(buffered) > MAX_BUFFERED_CHARS:
                    raise InvalidArgument(f"inputs[{index}]: more than {MAX_BUFFERED_CHARS} characters of text wait")
                self.state["buffer"] = buffered
                return
            self.state["buffer"] = ""
            self.user.append(Chunk(text=buffered))
            self._dispatch(AgentInput(text=buffered, raw={**raw, "text": buffered}))
        elif item.dtmf is not None:
            self.user.append(Chunk(text=item.dtmf))
            self._dispatch(AgentInput(text=item.dtmf, raw=raw))
        elif item.event is not None:
            self.user.append(Chunk(payload={"event": item.event.event or "", **({"variables": item.event.variables}
                                                                                 if item.event.variables else {})}))
            self.ctx.variables.update(item.event.variables or {})
            self._dispatch(AgentInput(event=item.event.event or "", raw=raw))
        elif item.tool_responses is not None:
            self._answer(index, item)
        elif item.image is not None:
            self.user.append(Chunk(image=item.image))
            self._dispatch(AgentInput(note=f"[the user sent an image{': ' + item.image.alt_text if item.image.alt_text else ''}]", raw=raw))
        elif item.blob is not None or item.audio is not None:
            blob = item.blob or Blob(mime_type="audio/l16", data=item.audio)
            self.user.append(Chunk(blob=blob))
            self._dispatch(AgentInput(note=f"[the user sent {blob.mime_type or 'a file'}]", raw=raw))
        # An input with nothing set (only recordingControl) changes nothing.

    def _answer(self, index: int, item: SessionInput) -> None:
        assert item.tool_responses is not None
        pending: dict[str, Any] = self.state.setdefault("pending", {})
        by_agent: dict[str, list[dict[str, Any]]] = {}
        for position, answer in enumerate(item.tool_responses.tool_responses or ()):
            call = pending.pop(answer.id or "", None)
            if call is None:
                raise InvalidArgument(
                    f"inputs[{index}].toolResponses.toolResponses[{position}]: no client tool call with id "
                    f'"{(answer.id or "")[:60]}" is waiting in this session'
                )
            ref = ToolRef.from_json(call["ref"])
            self.user.append(Chunk(tool_response=ToolResponse(
                id=answer.id, tool=self.ctx.toolbox.tool_name(ref.tool) if ref.tool else None,
                display_name=answer.display_name, response=answer.response or {},
            )))
            by_agent.setdefault(call["agent"], []).append(
                {"id": answer.id, "name": call.get("name"), "response": answer.response or {}}
            )
        for agent_id, answers in by_agent.items():
            self.state["agent"] = agent_id
            self._dispatch(AgentInput(tool_responses=tuple(answers), raw=item.to_json()))

    # -- agents ----------------------------------------------------------------------------------

    def _dispatch(self, given: AgentInput) -> None:
        agent_id = str(self.state["agent"])
        for _ in range(MAX_TRANSFERS + 1):
            agent = self.ctx.blueprint.agents.get(agent_id)
            if agent is None:
                raise AgentFailure(f"agent {agent_id} does not exist in this version of the app", code="FAILED_PRECONDITION")
            with self.ctx.trace.span("AGENT", agent=self.ctx.blueprint.agent_name(agent_id), kind=agent.kind) as span:
                try:
                    step = self._handle(agent_id, agent, given)
                except AgentFailure as failure:
                    span.fail(failure.code, failure.message)
                    raise
            if step.end_session:
                self.state["ended"] = True
                # The endSession output's metadata, also on the turn's root span, so the recorded
                # conversation (and a judge reading it) shows how and why the session ended.
                self.state["endSession"] = {"agent": agent_id, **step.end_session.metadata()}
                self.ctx.trace.root.attributes["endSession"] = dict(self.state["endSession"])
                return
            if step.transfer_to is None or step.waiting:
                return
            agent_id = step.transfer_to
            self.state["agent"] = agent_id
            given = replace(given, tool_responses=(), handoff=True, guarded=step.guarded)
        raise AgentFailure(f"agents transferred the turn more than {MAX_TRANSFERS} times", code="ABORTED")

    def _handle(self, agent_id: str, agent: Agent, given: AgentInput) -> Step:
        """One agent's part of the turn, between its guardrails and its agent callbacks (docs/agents.md,
        "Callbacks and guardrails"): input guardrails, before-agent callbacks, the agent itself, after-agent
        callbacks, then the guardrails on what it said, which see the replies as the user would."""
        ctx = self.ctx
        payload: dict[str, Any] = {"session": ctx.session, "agent": ctx.blueprint.agent_name(agent_id),
                                   "input": given.raw, "variables": ctx.variables}
        if not given.tool_responses and not given.guarded:
            # On a handoff the app's guardrails have already checked this input, for the agent before.
            verdict = guardrails.check(ctx, agent, guardrails.USER_INPUT, payload=payload, app_level=not given.handoff,
                                       texts=[given.text] if given.text is not None else [])
            if verdict is not None:
                return guardrails.act(ctx, verdict)
        mark = ctx.mark()
        # Not on tool responses: the agent is resuming its own work, and must get the answers it waits for.
        before = callbacks.run(ctx.trace, ctx.settings, None if given.tool_responses else agent.before_agent_callbacks,
                               "BEFORE_AGENT", "agent.beforeAgentCallbacks", payload, override="text",
                               updates=("variables",))
        ctx.set_variables(before.updates.get("variables", {}))
        if before.override is not None:
            ctx.say(before.override)
            step = Step()
        else:
            step = KINDS[agent.kind].handle(ctx, agent_id, agent, given)
            after = callbacks.run(ctx.trace, ctx.settings, agent.after_agent_callbacks, "AFTER_AGENT",
                                  "agent.afterAgentCallbacks",
                                  {**payload, "variables": ctx.variables, "replies": ctx.replies_since(mark)},
                                  override="text", updates=("variables",))
            ctx.set_variables(after.updates.get("variables", {}))
            if after.override is not None:
                ctx.replace_replies(mark, after.override)
        replies = ctx.replies_since(mark)
        verdict = guardrails.check(ctx, agent, guardrails.AGENT_RESPONSE, texts=replies,
                                   payload={**payload, "variables": ctx.variables, "replies": replies})
        if verdict is None:
            return step
        ctx.replace_replies(mark, verdict.text)
        if verdict.transfer_to is not None:
            return guardrails.act(ctx, verdict)
        return step
