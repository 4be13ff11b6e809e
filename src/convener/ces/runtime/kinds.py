"""The kinds of agent and how each handles its part of a turn.

``llm`` runs the agent's instruction, tools and child agents through the configured model in a
bounded tool-calling loop; a transfer to a child agent is a tool the model may call. ``playbook``
runs a declarative definition with no model. ``remote`` (an HTTP webhook) and ``python`` (a
callable) speak the turn protocol documented in docs/agents.md.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import Field, ValidationError

from convener.api.errors import ApiError, describe_validation
from convener.api.protojson import ProtoModel, Struct
from convener.ces.definitions import Agent, PlaybookAgent
from convener.ces.models import Chunk, ModelSettings
from convener.ces.names import AgentName
from convener.ces.runtime import callbacks, guardrails
from convener.ces.runtime import playbook as playbooks
from convener.ces.runtime.context import AgentInput, SessionEnd, Step, TurnContext
from convener.ces.runtime.entrypoints import call_with_deadline
from convener.ces.runtime.failures import AgentFailure, ToolFailure
from convener.ces.runtime.toolbox import ToolRef
from convener.llm.base import ChatMessage, ToolDeclaration, ToolInvocation
from convener.outside.callables import load_callable
from convener.outside.urls import check_url

MAX_MODEL_STEPS = 10
MAX_HISTORY_SENT = 40
MAX_HISTORY_KEPT = 200
PROTOCOL_HISTORY = 20
DEFAULT_AGENT_TIMEOUT = 30.0
MAX_REPLY_BYTES = 1_000_000
TRANSFER_TOOL = "transfer_to_agent"


class AgentKind(Protocol):
    def handle(self, ctx: TurnContext, agent_id: str, agent: Agent, given: AgentInput) -> Step: ...


def _child_ids(agent: Agent) -> list[str]:
    return [AgentName.parse(child).id for child in agent.child_agents or ()]


# -- llm ---------------------------------------------------------------------------------------------


def _message(entry: dict[str, Any]) -> ChatMessage:
    return ChatMessage(
        role=entry["role"],
        content=entry.get("content"),
        tool_calls=tuple(ToolInvocation(c["id"], c["name"], c["arguments"]) for c in entry.get("toolCalls", ())),
        tool_call_id=entry.get("toolCallId"),
        name=entry.get("name"),
    )


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    """A message as before-model callbacks and guardrails see it."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["toolCalls"] = [{"id": c.id, "name": c.name, "args": c.arguments} for c in message.tool_calls]
    if message.tool_call_id:
        wire["toolCallId"] = message.tool_call_id
    return wire


def _recent(history: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The last messages, starting at a user message so no tool answer is cut from its call."""
    if len(history) <= limit:
        return history
    tail = history[-limit:]
    starts = [index for index, entry in enumerate(tail) if entry["role"] == "user"]
    return tail[starts[0]:] if starts else tail[-1:]


class LlmKind:
    def handle(self, ctx: TurnContext, agent_id: str, agent: Agent, given: AgentInput) -> Step:
        if ctx.provider is None:
            raise AgentFailure(
                f"agent {agent_id} is an llm agent, but no model provider is configured "
                "(set CONVENER_LLM_PROVIDER and CONVENER_LLM_BASE_URL, or use a playbook agent)",
                code="FAILED_PRECONDITION",
            )
        history: list[dict[str, Any]] = ctx.state.setdefault("llm", [])
        already_heard = given.handoff and any(
            entry["role"] == "user" and entry.get("content") == given.text for entry in history[-MAX_MODEL_STEPS * 4:]
        )
        if given.text is not None and not already_heard:
            history.append({"role": "user", "content": given.text})
        elif given.event is not None:
            history.append({"role": "user", "content": f"[event: {given.event}]"})
        elif given.note is not None:
            history.append({"role": "user", "content": given.note})
        for answer in given.tool_responses:
            history.append({"role": "tool", "toolCallId": answer["id"], "name": answer.get("name"),
                            "content": json.dumps(answer["response"])})
        if any(entry["agent"] == agent_id for entry in ctx.state.get("pending", {}).values()):
            return Step(waiting=True)  # every call of the model's last step needs its answer first
        offers = ctx.toolbox.offered(agent)
        by_name = {offer.declaration.name: offer for offer in offers}
        declarations = [offer.declaration for offer in offers]
        children = _child_ids(agent)
        if children:
            declarations.append(ToolDeclaration(
                TRANSFER_TOOL,
                "Hand the conversation to another agent, who answers the user from now on.",
                {"type": "object", "properties": {"agent": {"type": "string", "enum": children}}, "required": ["agent"]},
            ))
        settings = agent.model_settings or ctx.blueprint.app.model_settings
        name = ctx.blueprint.agent_name(agent_id)
        for _ in range(MAX_MODEL_STEPS):
            messages = [ChatMessage("system", self._instruction(ctx, agent, children))]
            messages += [_message(entry) for entry in _recent(history, MAX_HISTORY_SENT)]
            request = {"agent": name, "messages": [_wire_message(message) for message in messages]}
            verdict = guardrails.check(ctx, agent, guardrails.MODEL_REQUEST, payload=request)
            if verdict is not None:
                return self._blocked(ctx, verdict, history)
            before = callbacks.run(ctx.trace, ctx.settings, agent.before_model_callbacks, "BEFORE_MODEL",
                                   "agent.beforeModelCallbacks", request, override="text")
            text: str | None
            calls: tuple[ToolInvocation, ...]
            if before.override is not None:
                text, calls = before.override, ()  # the callback answered: no model call
            else:
                text, calls = self._complete(ctx, name, messages, declarations, settings)
            answer = {"agent": name, "text": text,
                      "toolCalls": [{"id": c.id, "name": c.name, "args": c.arguments} for c in calls]}
            after = callbacks.run(ctx.trace, ctx.settings, agent.after_model_callbacks, "AFTER_MODEL",
                                  "agent.afterModelCallbacks", answer, override="text")
            if after.override is not None:
                text = answer["text"] = after.override
            verdict = guardrails.check(ctx, agent, guardrails.MODEL_RESPONSE, payload=answer)
            if verdict is not None:
                return self._blocked(ctx, verdict, history)  # the answer is dropped, tool calls and all
            history.append({
                "role": "assistant", "content": text,
                "toolCalls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls],
            })
            if text:
                ctx.say(text)
            if not calls:
                break
            step = self._call_tools(ctx, agent_id, calls, by_name, children, history)
            if step is not None:
                del history[:-MAX_HISTORY_KEPT]
                return step
        else:
            ctx.trace.current.fail("RESOURCE_EXHAUSTED", f"stopped after {MAX_MODEL_STEPS} model steps")
        del history[:-MAX_HISTORY_KEPT]
        return Step()

    @staticmethod
    def _complete(ctx: TurnContext, name: str, messages: list[ChatMessage], declarations: list[ToolDeclaration],
                  settings: ModelSettings | None) -> tuple[str | None, tuple[ToolInvocation, ...]]:
        assert ctx.provider is not None
        with ctx.trace.span("LLM", agent=name) as span:
            try:
                completion = ctx.provider.complete(
                    messages, tools=declarations,
                    model=settings.model if settings else None,
                    temperature=settings.temperature if settings else None,
                )
            except ApiError as error:
                span.fail(error.code.name, error.message)
                raise AgentFailure(f"the model failed: {error.message}", code=error.code.name) from None
            span.attributes.update(model=completion.model, latencySeconds=round(completion.latency_seconds, 6),
                                   finishReason=completion.finish_reason)
            if completion.usage is not None:
                span.attributes.update(inputTokens=completion.usage.input_tokens,
                                       outputTokens=completion.usage.output_tokens)
        return completion.text, completion.tool_calls

    @staticmethod
    def _blocked(ctx: TurnContext, verdict: guardrails.Verdict, history: list[dict[str, Any]]) -> Step:
        """A guardrail stopped the model loop: its response is what the agent said."""
        if verdict.transfer_to is None:
            history.append({"role": "assistant", "content": verdict.text or guardrails.DEFAULT_RESPONSE})
        del history[:-MAX_HISTORY_KEPT]
        return guardrails.act(ctx, verdict)

    def _call_tools(self, ctx: TurnContext, agent_id: str, calls: tuple[ToolInvocation, ...], by_name: dict[str, Any],
                    children: list[str], history: list[dict[str, Any]]) -> Step | None:
        transfer_to = None
        waiting = False
        for call in calls:
            if call.name == TRANSFER_TOOL:
                target = call.arguments.get("agent")
                if isinstance(target, str) and target in children and transfer_to is None:
                    transfer_to = target
                    ctx.transfer(target)
                    result: dict[str, Any] = {"output": f"transferred to {target}"}
                else:
                    result = {"error": f"no child agent named {str(target)[:60]}; choose one of {', '.join(children)}"}
                history.append({"role": "tool", "toolCallId": call.id, "name": call.name, "content": json.dumps(result)})
                continue
            offer = by_name.get(call.name)
            if offer is None:
                result = {"error": f"there is no tool named {call.name[:60]}"}
                history.append({"role": "tool", "toolCallId": call.id, "name": call.name, "content": json.dumps(result)})
                continue
            response = ctx.run_tool(agent_id, offer.ref, call.arguments, call.id)
            if response is None:
                ctx.state["pending"][call.id]["name"] = call.name
                waiting = True
            else:
                history.append({"role": "tool", "toolCallId": call.id, "name": call.name,
                                "content": json.dumps(response)})
        if transfer_to is not None:
            return Step(transfer_to=transfer_to)
        return Step(waiting=True) if waiting else None

    @staticmethod
    def _instruction(ctx: TurnContext, agent: Agent, children: list[str]) -> str:
        parts = [ctx.blueprint.app.global_instruction or "", agent.instruction or ""]
        if ctx.variables:
            parts.append("Session variables: " + json.dumps(ctx.variables, ensure_ascii=False))
        if children:
            described = [f"- {child}: {ctx.blueprint.agents[child].description or ctx.blueprint.display_name(child)}"
                         for child in children if child in ctx.blueprint.agents]
            parts.append(f"You may call {TRANSFER_TOOL} to hand the user to one of:\n" + "\n".join(described))
        return "\n\n".join(part for part in parts if part)


# -- playbook ----------------------------------------------------------------------------------------


_COMPILING = threading.Lock()


def _playbook(definition_json: str) -> playbooks.Playbook:
    """Compiled once per definition: a session's every turn runs the same definition. One thread compiles at a
    time: compiling checks every pattern (tens of ms), and the threads of a worker starting the same agent's
    turns together would each compile it."""
    with _COMPILING:
        return _compiled(definition_json)


_SEEN_SIZE = 256
_SEEN: dict[int, tuple[PlaybookAgent, playbooks.Playbook]] = {}


def _playbook_of(definition: PlaybookAgent) -> playbooks.Playbook:
    """The compiled playbook of an agent's definition, found by the definition object itself first: a kept Blueprint
    (``KeptBlueprints``) hands every turn of an app the same one, and writing it as JSON to key ``_playbook`` cost a
    sixth of a golden evaluation's CPU. An entry keeps its definition alive, so that its ``id`` names no other."""
    seen = _SEEN.get(id(definition))
    if seen is not None and seen[0] is definition:
        return seen[1]
    book = _playbook(json.dumps(definition.to_json(), sort_keys=True))
    if len(_SEEN) >= _SEEN_SIZE:  # blueprints come and go as apps change: forget the old ones at once
        _SEEN.clear()
    _SEEN[id(definition)] = (definition, book)
    return book


@functools.lru_cache(maxsize=256)
def _compiled(definition_json: str) -> playbooks.Playbook:
    # Checked whole when it was written: its templates are compiled as its turns first render them.
    definition = playbooks.PlaybookDefinition.parse(json.loads(definition_json), "agent.playbookAgent",
                                                    compile_templates=False)
    return playbooks.Playbook(definition)


class PlaybookKind:
    def handle(self, ctx: TurnContext, agent_id: str, agent: Agent, given: AgentInput) -> Step:
        assert agent.playbook_agent is not None
        book = _playbook_of(agent.playbook_agent)
        own = ctx.agent_state(agent_id)
        state = own.get("playbook", {})
        counter = own.get("calls", 0)

        used: list[dict[str, Any]] = []

        def port(tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
            # Tools run here, as the steps reach them; what they did is recorded below, in step order, with
            # the arguments they ran with (a before-tool callback may have changed them).
            ref = ToolRef(tool=tool)
            if ctx.toolbox.is_client(ref, args):
                used.append(args)
                return None
            ran_with, response = ctx.call_tool(agent_id, ref, args)
            used.append(ran_with)
            return response

        if given.tool_responses:
            outcome = book.on_tool_response(state, given.tool_responses[0]["response"], ctx.variables, port)
        elif given.event is not None:
            outcome = book.on_event(state, given.event, ctx.variables, port)
        else:
            outcome = book.on_text(state, given.text if given.text is not None else (given.note or ""),
                                   ctx.variables, port)
        own["playbook"] = outcome.state
        if outcome.intent:
            ctx.trace.current.attributes["intent"] = outcome.intent
        if outcome.error:
            ctx.trace.current.fail("FAILED_PRECONDITION", outcome.error)
        step = Step()
        for action in outcome.actions:
            if isinstance(action, playbooks.ToolCalled | playbooks.AwaitingClient):
                counter += 1  # deterministic call IDs: the same inputs record the same conversation
                response = action.response if isinstance(action, playbooks.ToolCalled) else None
                args = used.pop(0) if used else action.args  # each action is one port call, in order
                ctx.record_call(agent_id, ToolRef(tool=action.tool), args, f"{agent_id}-call-{counter}", response)
            if isinstance(action, playbooks.Reply):
                ctx.say(action.text)
            elif isinstance(action, playbooks.VariablesSet):
                ctx.set_variables(dict(action.values))
            elif isinstance(action, playbooks.Transfer):
                ctx.transfer(action.agent)
                step.transfer_to = action.agent
            elif isinstance(action, playbooks.EndSession):
                step.end_session = SessionEnd(action.reason, action.escalated)
            elif isinstance(action, playbooks.AwaitingClient):
                step.waiting = True
        own["calls"] = counter
        return step


# -- the turn protocol: remote (webhook) and python agents -------------------------------------------


class EndSessionReply(ProtoModel):
    reason: str | None = Field(None, max_length=1_000)
    session_escalated: bool | None = None


class AgentReply(ProtoModel):
    """What a remote or python agent answers for one turn (docs/agents.md)."""

    chunks: list[Chunk] | None = Field(None, description="text, payload, toolCall (client tools), agentTransfer, updatedVariables")
    state: Struct | None = Field(None, description="Opaque state handed back on the agent's next turn.")
    end_session: bool | EndSessionReply | None = Field(
        None, description="true, or {reason, sessionEscalated}: the agent ends the session")


def _session_end(given: bool | EndSessionReply | None) -> SessionEnd | None:
    if isinstance(given, EndSessionReply):
        return SessionEnd(given.reason, bool(given.session_escalated))
    return SessionEnd() if given else None


class ProtocolKind:
    """Agents that get the turn as a JSON document and answer with an ``AgentReply``."""

    def __init__(self, send: Callable[[TurnContext, Agent, dict[str, Any]], Any]) -> None:
        self.send = send

    def handle(self, ctx: TurnContext, agent_id: str, agent: Agent, given: AgentInput) -> Step:
        own = ctx.agent_state(agent_id)
        request = {
            "session": ctx.session,
            "agent": ctx.blueprint.agent_name(agent_id),
            "input": given.raw,
            "variables": ctx.variables,
            "history": [message.to_json() for message in ctx.history[-PROTOCOL_HISTORY:]],
            "state": own.get("protocol", {}),
        }
        with ctx.trace.span("AGENT_CALL", agent=ctx.blueprint.agent_name(agent_id)) as span:
            try:
                raw = self.send(ctx, agent, request)
                reply = AgentReply.model_validate(raw)
            except ValidationError as error:
                span.fail("INVALID_ARGUMENT", describe_validation(error))
                raise AgentFailure(f"agent {agent_id} replied with an invalid turn: {describe_validation(error)}",
                                   code="FAILED_PRECONDITION") from None
            except (ToolFailure, AgentFailure) as failure:
                # An exception in the agent's own code is the agent's fault, not the server's: not INTERNAL.
                code = "FAILED_PRECONDITION" if failure.code == "INTERNAL" else failure.code
                span.fail(code, failure.message)
                raise AgentFailure(f"agent {agent_id} failed: {failure.message}", code=code) from None
        own["protocol"] = reply.state or {}
        step = Step(end_session=_session_end(reply.end_session))
        tool_ids = {name.rsplit("/", 1)[-1] for name in agent.tools or ()}
        for index, chunk in enumerate(reply.chunks or ()):
            if chunk.text is not None:
                ctx.say(chunk.text)
            elif chunk.payload is not None:
                ctx.send_payload(chunk.payload)
            elif chunk.updated_variables is not None:
                ctx.set_variables(chunk.updated_variables)
            elif chunk.agent_transfer is not None:
                target = (chunk.agent_transfer.target_agent or "").rsplit("/", 1)[-1]
                if target not in ctx.blueprint.agents:
                    raise AgentFailure(f"agent {agent_id} transferred to agent {target[:60]}, which does not exist",
                                       code="FAILED_PRECONDITION")
                ctx.transfer(target)
                step.transfer_to = target
            elif chunk.tool_call is not None:
                tool = (chunk.tool_call.tool or "").rsplit("/", 1)[-1]
                if tool not in tool_ids:
                    raise AgentFailure(f"agent {agent_id} called tool {tool[:60]}, which is not one of its tools",
                                       code="FAILED_PRECONDITION")
                call_id = chunk.tool_call.id or f"{agent_id}-call-{index}"
                if ctx.run_tool(agent_id, ToolRef(tool=tool), dict(chunk.tool_call.args or {}), call_id) is None:
                    step.waiting = True
        return step


def _post(ctx: TurnContext, agent: Agent, request: dict[str, Any]) -> Any:
    import httpx  # imported by the first remote agent's turn: apps of other kinds never need it

    assert agent.remote_agent is not None
    spec = agent.remote_agent
    timeout = spec.timeout.seconds() if spec.timeout else DEFAULT_AGENT_TIMEOUT
    try:  # checked again now: the operator may have narrowed CONVENER_URL_HOSTS since the agent was written
        check_url(spec.url or "", ctx.settings.url_hosts, "agent.remoteAgent.url")
    except ApiError as error:
        raise AgentFailure(error.message, code=error.code.name) from None
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            response = client.post(spec.url or "", json=request, headers=spec.headers or {})
    except httpx.TimeoutException:
        raise AgentFailure(f"the webhook did not answer within {timeout:g} s", code="DEADLINE_EXCEEDED") from None
    except httpx.HTTPError as error:
        raise AgentFailure(f"the webhook could not be reached: {type(error).__name__}", code="UNAVAILABLE") from None
    if response.status_code >= 300:
        raise AgentFailure(f"the webhook answered HTTP {response.status_code}", code="UNAVAILABLE")
    if len(response.content) > MAX_REPLY_BYTES:
        raise AgentFailure(f"the webhook's reply is larger than {MAX_REPLY_BYTES} bytes", code="FAILED_PRECONDITION")
    try:
        return response.json()
    except ValueError:
        raise AgentFailure("the webhook's reply is not JSON", code="FAILED_PRECONDITION") from None


def _call_python(ctx: TurnContext, agent: Agent, request: dict[str, Any]) -> Any:
    assert agent.python_agent is not None
    spec = agent.python_agent
    try:
        function = load_callable(spec.entry_point or "", ctx.settings.python_callables, "agent.pythonAgent.entryPoint")
    except ApiError as error:
        raise AgentFailure(error.message, code=error.code.name) from None
    timeout = spec.timeout.seconds() if spec.timeout else DEFAULT_AGENT_TIMEOUT
    return call_with_deadline(lambda: function(request), timeout, spec.entry_point or "the agent")


KINDS: dict[str, AgentKind] = {
    "llm_agent": LlmKind(),
    "playbook_agent": PlaybookKind(),
    "remote_agent": ProtocolKind(_post),
    "python_agent": ProtocolKind(_call_python),
}
