"""Conversations the console tests record: one carrying every kind of chunk, hostile text in each place a
caller writes text, and a long one for the render benchmark. Imported as JSON Lines, as users load them."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from convener.ces.importing import import_conversations
from convener.ces.names import AppName
from convener.services import Services

APP = "projects/demo/locations/global/apps/support"
HOSTILE_ID = "hostile-001"
SCRIPT = "<script>alert('pwned')</script>"
LINK = "[click me](javascript:alert('link'))"
HTML = "<img src=x onerror=\"alert('img')\"><b>bold?</b>"
HOSTILE_TEXT = f"{SCRIPT} {LINK} {HTML}"
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2265b4a0000000049454e44ae426082")).decode()
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00@\x1f\x00\x00"
                       b"\x01\x00\x08\x00data\x00\x00\x00\x00").decode()
T0 = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)


def _at(milliseconds: float) -> str:
    return (T0 + timedelta(milliseconds=milliseconds)).isoformat().replace("+00:00", "Z")


def _span(name: str, start: float, end: float, children: list[dict[str, Any]] | None = None,
          **attributes: Any) -> dict[str, Any]:
    span: dict[str, Any] = {"name": name, "startTime": _at(start), "endTime": _at(end)}
    if attributes:
        span["attributes"] = attributes
    if children:
        span["childSpans"] = children
    return span


def hostile_conversation() -> dict[str, Any]:
    """Every chunk kind, with hostile text wherever a caller writes text."""
    agent = f"{APP}/agents/orders"
    tool = f"{APP}/tools/lookup_order"
    user = {"role": "user", "eventTime": _at(0), "chunks": [
        {"text": HOSTILE_TEXT},
        {"image": {"mimeType": "image/png", "data": PNG, "altText": SCRIPT}},
        {"image": {"mimeType": "image/svg+xml", "data": base64.b64encode(b"<svg onload=alert(1)/>").decode()}},
        {"blob": {"mimeType": "audio/wav", "data": WAV}},
        {"blob": {"mimeType": "text/html", "data": base64.b64encode(SCRIPT.encode()).decode()}},
        {"payload": {"html": SCRIPT, "href": "javascript:alert(1)"}},
    ]}
    agent_message = {"role": "agent", "eventTime": _at(40), "chunks": [
        {"agentTransfer": {"targetAgent": agent, "displayName": f"Orders {SCRIPT}"}},
        {"toolCall": {"id": "call-1", "tool": tool, "displayName": "lookup_order", "args": {"order": SCRIPT}}},
        {"toolResponse": {"id": "call-1", "tool": tool, "displayName": "lookup_order",
                          "response": {"error": {"message": HTML}}}},
        {"updatedVariables": {"note": LINK}},
        {"text": f"**Markdown** {LINK} {HTML}"},
    ]}
    root = _span("TURN", 0, 40, [
        _span("AGENT", 1, 39, [
            _span("LLM", 2, 20, agent=agent, inputTokens=120, outputTokens=18),
            _span("TOOL", 21, 35, tool=tool, errorInfo={"code": "UNAVAILABLE", "message": SCRIPT}),
        ], agent=agent),
    ], session=f"{APP}/sessions/{HOSTILE_ID}")
    return {
        "name": f"{APP}/conversations/{HOSTILE_ID}", "startTime": _at(0), "endTime": _at(40), "source": "LIVE",
        "turns": [{"messages": [user, agent_message], "rootSpan": root}],
    }


def long_conversation(conversation_id: str, turns: int) -> dict[str, Any]:
    """``turns`` turns like the demo's: a question, a tool call and response, an answer, a span tree of four."""
    agent = f"{APP}/agents/orders"
    tool = f"{APP}/tools/lookup_order"
    recorded = []
    for index in range(turns):
        start = index * 1000
        recorded.append({"messages": [
            {"role": "user", "eventTime": _at(start), "chunks": [{"text": f"Where is order AC-{1000 + index}?"}]},
            {"role": "agent", "eventTime": _at(start + 30), "chunks": [
                {"toolCall": {"id": f"c{index}", "tool": tool, "args": {"order_id": f"AC-{1000 + index}"}}},
                {"toolResponse": {"id": f"c{index}", "tool": tool,
                                  "response": {"output": {"status": "shipped", "carrier": "DHL"}}}},
                {"text": f"Order AC-{1000 + index} has shipped with DHL and should arrive on Monday."},
            ]},
        ], "rootSpan": _span("TURN", start, start + 30, [
            _span("AGENT", start + 1, start + 29, [
                _span("LLM", start + 2, start + 10, agent=agent, inputTokens=300, outputTokens=20),
                _span("TOOL", start + 11, start + 20, tool=tool),
            ], agent=agent)])})
    return {"name": f"{APP}/conversations/{conversation_id}", "startTime": _at(0),
            "endTime": _at(turns * 1000), "source": "LIVE", "turns": recorded}


def record(services: Services, *conversations: dict[str, Any]) -> None:
    report = import_conversations(services.apps, services.conversations,
                                  [json.dumps(body) for body in conversations], AppName.parse(APP))
    assert not report.errors, report.errors
