"""Python tools and agents the runtime tests name by entry point (tests.ces.agents_under_test:...)."""

from __future__ import annotations

import inspect
import re
import sys
import time
from typing import Any

ORDERS = {"A-1": {"status": "shipped", "total": 42.5}, "B-2": {"status": "processing", "total": 10}}


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its ID."""
    order = ORDERS.get(order_id)
    if order is None:
        return {"error": f"no order {order_id}"}
    return {"output": {"orderId": order_id, **order}}


def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


def explode() -> None:
    """A tool that always fails."""
    raise RuntimeError("the warehouse is on fire")


def slow(seconds: float = 5.0) -> str:
    """A tool that takes its time."""
    time.sleep(seconds)
    return "done"


def echo_agent(request: dict[str, Any]) -> dict[str, Any]:
    """A python agent: echoes text, counts its turns in its state, transfers on "transfer", ends on "bye"."""
    state = dict(request.get("state") or {})
    state["turns"] = int(state.get("turns", 0)) + 1
    given = request.get("input") or {}
    text = given.get("text", given.get("dtmf", ""))
    chunks: list[dict[str, Any]] = [{"text": f"echo {state['turns']}: {text}"}]
    if text == "transfer" and not request["agent"].endswith("/helper"):
        chunks.append({"agentTransfer": {"targetAgent": request["agent"].rsplit("/", 1)[0] + "/helper"}})
    if text == "vars":
        chunks.append({"updatedVariables": {"seen": len(request.get("history", []))}})
    if text == "ask":
        chunks.append({"toolCall": {"id": "ask-1", "tool": "confirm", "args": {"question": "sure?"}}})
    if text == "escalate":
        return {"chunks": chunks, "state": state, "endSession": {"reason": "asked for a person", "sessionEscalated": True}}
    if text == "bad end":
        return {"chunks": chunks, "state": state, "endSession": {"sessionEscalated": "perhaps"}}
    return {"chunks": chunks, "state": state, "endSession": text == "bye"}


def crashing_agent(request: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("agent bug")


def malformed_agent(request: dict[str, Any]) -> Any:
    return {"chunks": [{"text": "a", "payload": {"b": 1}}]}


# -- guardrails' code callbacks: {"decision": "OK" | "TRIGGER", "reason": ...} ----------------------------


def guard_refunds(request: dict[str, Any]) -> dict[str, Any] | None:
    """Triggers on inputs that mention refunds."""
    text = str((request.get("input") or {}).get("text", ""))
    if "refund" in text.lower():
        return {"decision": "TRIGGER", "reason": "refunds go to a human"}
    return {"decision": "OK", "reason": "no refund"}


def guard_secrets(request: dict[str, Any]) -> dict[str, Any] | None:
    """Triggers on replies that give away a code."""
    if any("code" in reply for reply in request.get("replies", [])):
        return {"decision": "TRIGGER", "reason": "the reply gives away a code"}
    return None


def guard_crashes(request: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("the guard tripped over itself")


def guard_model_answers(request: dict[str, Any]) -> dict[str, Any] | None:
    """A model-stage guardrail: triggers on answers that mention competitors, or that call explode."""
    if "acme" in (request.get("text") or "").lower():
        return {"decision": "TRIGGER", "reason": "mentions a competitor"}
    if any(call["name"] == "explode" for call in request.get("toolCalls", [])):
        return {"decision": "TRIGGER", "reason": "no explosions"}
    return {"decision": "OK"}


# -- agent callbacks: None, or a dict of overrides ---------------------------------------------------------

def answer_pings(request: dict[str, Any]) -> dict[str, Any] | None:
    """Before agent: answers "ping" itself; marks VIPs in the variables."""
    text = str((request.get("input") or {}).get("text", ""))
    if text == "ping":
        return {"text": f"pong ({request['variables'].get('tier', 'no tier')})"}
    if "vip" in text:
        return {"variables": {"tier": "gold"}}
    return None


def never_reached(request: dict[str, Any]) -> dict[str, Any] | None:
    """Placed after answer_pings: it would answer "ping" too, were a callback after an override run."""
    if (request.get("input") or {}).get("text") == "ping":
        return {"text": "a later callback ran after an override"}
    return None


def shout_replies(request: dict[str, Any]) -> dict[str, Any] | None:
    """After agent: shouts the replies when the session asks for it, and counts the shouts."""
    if not request["variables"].get("shout"):
        return None
    return {"text": " / ".join(request["replies"]).upper(), "variables": {"shouted": len(request["replies"])}}


def fix_order_ids(request: dict[str, Any]) -> dict[str, Any] | None:
    """Before tool: upper-cases order IDs; answers for order Z-0 from a cache without calling the tool."""
    order = str(request["args"].get("order_id", ""))
    if order.upper() == "Z-0":
        return {"response": {"output": {"orderId": "Z-0", "status": "archived"}}}
    if order != order.upper():
        return {"args": {**request["args"], "order_id": order.upper()}}
    return None


def hide_totals(request: dict[str, Any]) -> dict[str, Any] | None:
    """After tool: hides an order's total."""
    output = request["response"].get("output")
    if isinstance(output, dict) and "total" in output:
        return {"response": {"output": {**output, "total": "hidden"}}}
    return None


def crashing_callback(request: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("callback bug")


def wrong_shape_callback(request: dict[str, Any]) -> list[str]:
    return ["not", "a", "dict"]


def canned_model(request: dict[str, Any]) -> dict[str, Any] | None:
    """Before model: answers questions about opening hours without asking the model."""
    last = request["messages"][-1]
    if last["role"] == "user" and "hours" in (last["content"] or ""):
        return {"text": "We are open 9 to 5."}
    return None


def sign_model_text(request: dict[str, Any]) -> dict[str, Any] | None:
    """After model: signs the model's text."""
    if request["text"]:
        return {"text": request["text"] + " — Shop"}
    return None


def slow_callback(request: dict[str, Any]) -> None:
    time.sleep(2)


# -- agents for evaluation runs -------------------------------------------------------------------------


def order_checker(request: dict[str, Any]) -> dict[str, Any]:
    """A python agent: calls lookup_order for each order ID (like A-1) in the text, in order, then says how many;
    "remember" also stores the IDs in a variable, "handoff" transfers to the helper agent."""
    text = str((request.get("input") or {}).get("text", ""))
    ids = re.findall(r"\b[A-Z]-\d\b", text)
    chunks: list[dict[str, Any]] = [
        {"toolCall": {"id": f"check-{index}", "tool": "lookup_order", "args": {"order_id": order_id}}}
        for index, order_id in enumerate(ids)
    ]
    chunks.append({"text": f"I checked {len(ids)} orders."})
    if "remember" in text:
        chunks.append({"updatedVariables": {"remembered": ids}})
    if "handoff" in text:
        chunks.append({"agentTransfer": {"targetAgent": request["agent"].rsplit("/", 1)[0] + "/helper"}})
    return {"chunks": chunks}


def sleepy_agent(request: dict[str, Any]) -> dict[str, Any]:
    """A python agent that calls the slow tool for as many seconds as the text says."""
    text = str((request.get("input") or {}).get("text", "0"))
    return {"chunks": [{"toolCall": {"id": "nap", "tool": "slow", "args": {"seconds": float(text)}}},
                       {"text": "awake"}]}


CALLABLES = tuple(f"{__name__}:{name}" for name, value in inspect.getmembers(sys.modules[__name__], inspect.isfunction)
                  if value.__module__ == __name__)
"""Every function above, as the operator lists them in CONVENER_PYTHON_CALLABLES for the runtime tests."""
