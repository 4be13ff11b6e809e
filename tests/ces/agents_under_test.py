"""Python tools and agents the runtime tests name by entry point (tests.ces.agents_under_test:...)."""

from __future__ import annotations

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
    return {"chunks": chunks, "state": state, "endSession": text == "bye"}


def crashing_agent(request: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("agent bug")


def malformed_agent(request: dict[str, Any]) -> Any:
    return {"chunks": [{"text": "a", "payload": {"b": 1}}]}
