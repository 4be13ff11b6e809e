"""llm agents through the real OpenAI SDK against a scripted OpenAI-compatible server over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from convener.config import Settings
from tests.ces.session_helpers import (
    APP,
    agent,
    agent_chunks,
    agent_name,
    client_tool,
    last,
    llm_settings,
    make_app,
    python_tool,
    run,
    set_root,
    span_names,
    texts,
    tool_name,
)
from tests.e2e.conftest import call_json, conversation, error_text
from tests.llm.fake_openai import FakeOpenAI

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(database_url: str, tmp_path: Path, fake_openai: FakeOpenAI) -> Settings:
    return llm_settings(database_url, tmp_path, fake_openai.base_url)


async def _assistant(client: Client) -> None:
    await make_app(client)
    await python_tool(client, "lookup", "lookup_order")
    await python_tool(client, "explode", "explode")
    await python_tool(client, "slow", "slow", timeout="0.2s")
    await client_tool(client, "confirm", "confirm")
    await agent(client, "refunds", instruction="You handle refunds.", description="Refunds and returns")
    await agent(client, "assistant", instruction="You help shoppers.", llmAgent={},
                tools=[tool_name(t) for t in ("lookup", "explode", "slow", "confirm")],
                childAgents=[agent_name("refunds")])
    await set_root(client, "assistant")


async def test_tool_calling_loop_records_chunks_and_spans(client: Client, fake_openai: FakeOpenAI) -> None:
    await _assistant(client)
    fake_openai.reply(tool_calls=[("lookup_order", {"order_id": "A-1"})], usage=(30, 5))
    fake_openai.reply(text="Order A-1 has shipped.", usage=(50, 7))
    response = await run(client, "l1", {"text": "where is A-1?"})
    assert texts(response) == ["Order A-1 has shipped."]
    chunks = agent_chunks(response)
    assert [next(iter(c)) for c in chunks] == ["toolCall", "toolResponse", "text"]
    assert chunks[0]["toolCall"]["tool"] == tool_name("lookup")
    assert chunks[1]["toolResponse"]["response"] == {"output": {"orderId": "A-1", "status": "shipped", "total": 42.5}}
    root = last(response)["diagnosticInfo"]["rootSpan"]
    assert span_names(root) == ["TURN", "AGENT", "LLM", "TOOL", "LLM"]
    first_llm = root["childSpans"][0]["childSpans"][0]
    assert first_llm["attributes"]["inputTokens"] == 30 and first_llm["attributes"]["model"] == "fake-model"
    sent = fake_openai.requests[0]
    assert sent["messages"][0]["role"] == "system" and "You help shoppers." in sent["messages"][0]["content"]
    names = [t["function"]["name"] for t in sent["tools"]]
    assert names == ["lookup_order", "explode", "slow", "confirm", "transfer_to_agent"]
    lookup = sent["tools"][0]["function"]
    assert lookup["parameters"]["required"] == ["order_id"] and lookup["description"] == "Look up an order by its ID."
    second = fake_openai.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assert json.loads(second[-1]["content"])["output"]["status"] == "shipped"


async def test_failing_and_slow_tools_become_error_responses(client: Client, fake_openai: FakeOpenAI) -> None:
    await _assistant(client)
    fake_openai.reply(tool_calls=[("explode", {}), ("slow", {"seconds": 2})])
    fake_openai.reply(text="Sorry, the warehouse is unavailable.")
    response = await run(client, "l2", {"text": "check stock"})
    assert texts(response) == ["Sorry, the warehouse is unavailable."]
    responses = [c["toolResponse"]["response"] for c in agent_chunks(response) if "toolResponse" in c]
    assert "RuntimeError: the warehouse is on fire" in responses[0]["error"]
    assert "did not finish within 0.2 s" in responses[1]["error"]
    tools = [s for s in last(response)["diagnosticInfo"]["rootSpan"]["childSpans"][0]["childSpans"] if s["name"] == "TOOL"]
    assert [t["attributes"]["errorInfo"]["code"] for t in tools] == ["INTERNAL", "DEADLINE_EXCEEDED"]
    fake_openai.reply(text="Anything else?")
    assert texts(await run(client, "l2", {"text": "ok"})) == ["Anything else?"], "the session goes on"


async def test_client_tool_pauses_the_loop_until_answered(client: Client, fake_openai: FakeOpenAI) -> None:
    await _assistant(client)
    fake_openai.reply(tool_calls=[("confirm", {"question": "Cancel order B-2?"})])
    asked = await run(client, "l3", {"text": "cancel B-2"})
    calls = [o["toolCalls"]["toolCalls"][0] for o in asked["outputs"] if "toolCalls" in o]
    assert calls[0]["args"] == {"question": "Cancel order B-2?"} and calls[0]["tool"] == tool_name("confirm")
    assert len(fake_openai.requests) == 1
    fake_openai.reply(text="Cancelled.")
    answer = {"toolResponses": {"toolResponses": [{"id": calls[0]["id"], "response": {"output": "yes"}}]}}
    done = await run(client, "l3", answer)
    assert texts(done) == ["Cancelled."]
    resumed = fake_openai.requests[1]["messages"]
    assert resumed[-1] == {"role": "tool", "tool_call_id": calls[0]["id"], "content": json.dumps({"output": "yes"})}


async def test_transfer_to_a_child_agent(client: Client, fake_openai: FakeOpenAI) -> None:
    await _assistant(client)
    fake_openai.reply(tool_calls=[("transfer_to_agent", {"agent": "refunds"})])
    fake_openai.reply(text="I can refund that.")
    moved = await run(client, "l4", {"text": "I want a refund"})
    assert texts(moved) == ["I can refund that."]
    transfers = [c["agentTransfer"]["targetAgent"] for c in agent_chunks(moved) if "agentTransfer" in c]
    assert transfers == [agent_name("refunds")]
    refunds_call = fake_openai.requests[1]["messages"]
    assert "You handle refunds." in refunds_call[0]["content"]
    assert [m["content"] for m in refunds_call if m["role"] == "user"] == ["I want a refund"], "heard once"
    fake_openai.reply(text="Done.")
    await run(client, "l4", {"text": "thanks"})
    assert "You handle refunds." in fake_openai.requests[2]["messages"][0]["content"], "the child keeps the session"
    recorded = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/l4"}))
    assert recorded["turnCount"] == 2


async def test_model_failure_ends_the_turn_with_an_error(client: Client, fake_openai: FakeOpenAI) -> None:
    await _assistant(client)
    fake_openai.fail(status=500, times=1)
    text = error_text(await client.call_tool("run_session", {
        "config": {"session": f"{APP}/sessions/l5"}, "inputs": [{"text": "hi"}],
    }), "UNAVAILABLE")
    assert "the model failed" in text
    recorded = await call_json(client, "get_conversation", {"name": f"{APP}/conversations/l5"})
    llm = recorded["turns"][0]["rootSpan"]["childSpans"][0]["childSpans"][0]
    assert llm["name"] == "LLM" and llm["attributes"]["errorInfo"]["code"] == "UNAVAILABLE"
    fake_openai.reply(text="Back again.")
    assert texts(await run(client, "l5", {"text": "hi"})) == ["Back again."]


async def test_no_provider_configured(client: Client, settings: Settings) -> None:
    settings.llm_provider = "none"
    await _assistant(client)
    text = error_text(await client.call_tool("run_session", {
        "config": {"session": f"{APP}/sessions/l6"}, "inputs": [{"text": "hi"}],
    }), "FAILED_PRECONDITION")
    assert "CONVENER_LLM_PROVIDER" in text
