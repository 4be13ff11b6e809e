"""Guardrails at run time: checks on what the user says and what agents answer, each a GUARDRAIL span.

An agent's guardrails are the app's (``app.guardrails``) then its own (``agent.guardrails``), in order;
only those with ``enabled: true`` run (proto3: unset is false, so a disabled guardrail exported from CES
stays disabled here). The first that triggers decides, and the rest are not run. Stages:

* ``USER_INPUT``: before the agent handles an input from the user (content filters on its text, a code
  callback's ``beforeAgentCallback``);
* ``AGENT_RESPONSE``: after it answered (content filters on its text replies, ``afterAgentCallback``);
* ``MODEL_REQUEST`` / ``MODEL_RESPONSE``: around each model call of an llm agent (a code callback's
  ``beforeModelCallback`` / ``afterModelCallback``).

A code callback returns ``{"decision": "OK" | "TRIGGER", "reason": "..."}`` (None is OK). Unlike an agent
callback, a guardrail that cannot decide (its callable raises, runs out of time or returns something
else) triggers, with the failure in its span's ``errorInfo``: a safety check fails closed, as CES's LLM
policies do by default.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from convener.ces.definitions import Agent, Callback, Guardrail
from convener.ces.runtime import callbacks, content_filter
from convener.ces.runtime.content_filter import AGENT_RESPONSE, USER_INPUT
from convener.ces.runtime.context import Step
from convener.ces.runtime.failures import ToolFailure
from convener.ces.runtime.tracing import OpenSpan

if TYPE_CHECKING:
    from convener.ces.runtime.context import TurnContext

MODEL_REQUEST = "MODEL_REQUEST"
MODEL_RESPONSE = "MODEL_RESPONSE"
DEFAULT_RESPONSE = "Sorry, I can't help with that."
MAX_REASON = 1_000
_CODE_STAGES = {
    USER_INPUT: "before_agent_callback",
    AGENT_RESPONSE: "after_agent_callback",
    MODEL_REQUEST: "before_model_callback",
    MODEL_RESPONSE: "after_model_callback",
}

__all__ = ["AGENT_RESPONSE", "MODEL_REQUEST", "MODEL_RESPONSE", "USER_INPUT", "Verdict", "act", "check"]


@dataclass(frozen=True)
class Verdict:
    """What a triggered guardrail's action says instead, or the agent it hands the turn to."""

    text: str | None = None
    transfer_to: str | None = None


def _id(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def guardrail_ids(ctx: TurnContext, agent: Agent, *, app_level: bool = True) -> list[str]:
    ids = [_id(name) for name in (ctx.blueprint.app.guardrails or ()) if app_level]
    ids += [_id(name) for name in agent.guardrails or ()]
    return list(dict.fromkeys(ids))


def _code_callback(guardrail: Guardrail, stage: str) -> Callback | None:
    if guardrail.code_callback is None:
        return None
    callback: Callback | None = getattr(guardrail.code_callback, _CODE_STAGES[stage])
    return callback if callback is not None and not callback.disabled else None


def _applies(guardrail: Guardrail, stage: str, texts: Sequence[str]) -> bool:
    if guardrail.content_filter is not None:
        return stage in (USER_INPUT, AGENT_RESPONSE) and bool(texts) and content_filter.applies(
            guardrail.content_filter, stage)
    return _code_callback(guardrail, stage) is not None


def _decide(ctx: TurnContext, guardrail: Guardrail, stage: str, texts: Sequence[str], payload: dict[str, Any],
            span: OpenSpan) -> str | None:
    """Why the guardrail triggers, or None when it lets the text through."""
    if guardrail.content_filter is not None:
        try:
            return content_filter.find(guardrail.content_filter, stage, texts)
        except re.error as error:
            span.fail("FAILED_PRECONDITION", f"a banned phrase is not a valid regular expression: {error}")
            return "the content filter could not run"
    callback = _code_callback(guardrail, stage)
    assert callback is not None
    span.attributes["entryPoint"] = callback.entry_point
    try:
        result = callbacks.call(ctx.settings, callback, payload, f"guardrail.codeCallback.{_CODE_STAGES[stage]}")
    except ToolFailure as failure:
        span.fail(failure.code, failure.message)
        return f"the guardrail's callback failed: {failure.message}"[:MAX_REASON]
    if result is None:
        return None
    decision = result.get("decision") if isinstance(result, dict) else None
    if not isinstance(decision, str) or decision.upper() not in ("OK", "TRIGGER"):
        message = 'the callback must return None or {"decision": "OK" | "TRIGGER", "reason": "..."}'
        span.fail("INVALID_ARGUMENT", message)
        return f"the guardrail's callback failed: {message}"
    reason = result.get("reason")
    if decision.upper() == "OK":
        if reason is not None:
            span.attributes["reason"] = str(reason)[:MAX_REASON]
        return None
    return str(reason if reason is not None else "the callback decided TRIGGER")[:MAX_REASON]


def _resolve(ctx: TurnContext, guardrail: Guardrail, span: OpenSpan) -> Verdict:
    action = guardrail.action
    if action is not None and action.transfer_agent is not None:
        target = _id(action.transfer_agent.agent or "")
        if target in ctx.blueprint.agents:
            span.attributes["action"] = "transferAgent"
            return Verdict(transfer_to=target)
        span.fail("FAILED_PRECONDITION", f"transferAgent.agent {target[:60]} does not exist in this version of "
                                         "the app; the default response was said instead")
    if action is not None and action.respond_immediately is not None:
        for response in action.respond_immediately.responses or ():
            if not response.disabled and response.text:
                span.attributes["action"] = "respondImmediately"
                return Verdict(text=response.text)
    span.attributes["action"] = "default"
    return Verdict(text=DEFAULT_RESPONSE)


def check(ctx: TurnContext, agent: Agent, stage: str, *, texts: Sequence[str] = (),
          payload: dict[str, Any] | None = None, app_level: bool = True) -> Verdict | None:
    """Run the agent's guardrails for ``stage`` on ``texts`` (content filters) and ``payload`` (code
    callbacks); the verdict of the first that triggers, or None."""
    for guardrail_id in guardrail_ids(ctx, agent, app_level=app_level):
        guardrail = ctx.blueprint.guardrails.get(guardrail_id)
        name = f"{ctx.blueprint.app.name}/guardrails/{guardrail_id}"
        if guardrail is None:
            if stage in (USER_INPUT, AGENT_RESPONSE):  # not on every model call as well: once is news enough
                with ctx.trace.span("GUARDRAIL", guardrail=name, stage=stage, triggered=False) as span:
                    span.fail("NOT_FOUND", f"guardrail {guardrail_id} does not exist in this version of the app")
            continue
        if not guardrail.enabled or not _applies(guardrail, stage, texts):
            continue
        with ctx.trace.span("GUARDRAIL", guardrail=name, displayName=guardrail.display_name, stage=stage) as span:
            reason = _decide(ctx, guardrail, stage, texts, payload or {}, span)
            span.attributes["triggered"] = reason is not None
            if reason is None:
                continue
            span.attributes["reason"] = reason
            return _resolve(ctx, guardrail, span)
    return None


def act(ctx: TurnContext, verdict: Verdict) -> Step:
    """Carry out a verdict: say its response, or hand the turn to its agent (whose own input guardrails
    then let this input through: it is where the guardrail sends such inputs)."""
    if verdict.transfer_to is not None:
        ctx.transfer(verdict.transfer_to)
        return Step(transfer_to=verdict.transfer_to, guarded=True)
    ctx.say(verdict.text or DEFAULT_RESPONSE)
    return Step()
