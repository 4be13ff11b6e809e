"""A deterministic ADK agent for benchmarks/adk_compare.py and adk_parity.py: no model, the same exchange as
the Convener demo.

Its ``before_model_callback`` answers every model call itself, so ADK runs its whole agent loop (events,
session service, transfer, tool call, function response, final response) without an LLM. As the demo's
triage agent hands an order question to its orders agent, the root agent (``triage``) first calls ADK's
``transfer_to_agent`` to ``orders``; that agent asks for ``lookup_order`` with the order number in the
user's text, then replies with the text scripted for that order (``SCRIPT``, filled by run_adk.py, as the
Convener demo's template words it).
"""

from __future__ import annotations

import re
import sys
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models import LlmRequest, LlmResponse
from google.genai import types

ORDER = re.compile(r"[A-Z]{2}-\d{4}")
SCRIPT: dict[str, str] = {}
"""Order number -> the agent's reply once it has looked the order up."""
ORDERS: dict[str, dict[str, Any]] = {}
"""Order number -> what lookup_order returns (the evalset's recorded tool response)."""


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its number."""
    return ORDERS.get(order_id, {"error": f"no order {order_id}"})


def _scripted(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse:
    last = llm_request.contents[-1] if llm_request.contents else None
    parts = (last.parts or []) if last is not None else []
    answered = next((part.function_response for part in parts if part.function_response), None)
    if answered is not None:
        order = str((answered.response or {}).get("orderId", ""))
        text = SCRIPT.get(order, "I could not find that order.")
        return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
    # The latest order number said: right after a transfer the last contents are the transfer's context.
    found = next((match for content in reversed(llm_request.contents or []) for part in reversed(content.parts or [])
                  if (match := ORDER.search(part.text or ""))), None)
    call = types.FunctionCall(name="lookup_order", args={"order_id": found.group(0) if found else ""})
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


# ADK's runner gives the next invocation to the agent that answered last, as the Convener demo keeps the user
# with the orders agent after the first transfer.
def _triage(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse:
    call = types.FunctionCall(name="transfer_to_agent", args={"agent_name": "orders"})
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


orders_agent = LlmAgent(name="orders", model="gemini-2.0-flash", instruction="Answer questions about orders.",
                        tools=[lookup_order], before_model_callback=_scripted)
root_agent = LlmAgent(name="triage", model="gemini-2.0-flash", instruction="Hand order questions to orders.",
                      sub_agents=[orders_agent], before_model_callback=_triage)

# AgentEvaluator looks for ``<module>.agent.root_agent`` (or a module named ``….agent``): this module is both.
agent = sys.modules[__name__]
