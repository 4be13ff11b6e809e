"""Questions answered with a configured model: the real OpenAI-compatible provider over HTTP against a
scripted server. Refused or failing SQL goes back to the model, at most three times."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from convener.config import Settings
from tests.llm.fake_openai import FakeOpenAI, fake_openai, fake_openai_server

__all__ = ["fake_openai", "fake_openai_server"]

pytestmark = pytest.mark.anyio

REFS = json.dumps([{"datasetId": "shop", "tableId": "orders"}])


@pytest.fixture
def settings(database_url: str, tmp_path: Path, fake_openai: FakeOpenAI) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, analytics_roots=(tmp_path / "roots",),
                    knowledge_embeddings="off", llm_provider="openai", llm_base_url=fake_openai.base_url,
                    llm_model="fake-model", llm_max_retries=0, llm_timeout_seconds=5)


async def ask(client: Client, shop: Path, question: str) -> list[dict[str, Any]]:
    added = await client.call_tool("add_sql_source", {"name": "shop", "location": str(shop)})
    assert not added.is_error, added.content
    result = await client.call_tool("ask_data_insights", {"user_query_with_context": question,
                                                          "table_references": REFS})
    assert not result.is_error, result.content
    return list((result.structured_content or {})["messages"])


def parts(messages: list[dict[str, Any]], kind: str, field: str) -> list[Any]:
    return [m["systemMessage"][kind][field] for m in messages
            if field in m.get("systemMessage", {}).get(kind, {})]


async def test_refused_sql_is_repaired_by_the_model(client: Client, shop: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(text=json.dumps({"sql": "DELETE FROM orders"}))
    fake_openai.reply(text=json.dumps({"sql": "SELECT region, sum(amount) AS total FROM orders GROUP BY region",
                                       "result_name": "total_by_region"}))
    messages = await ask(client, shop, "Total amount per region?")

    errors = [m["systemMessage"]["error"]["text"] for m in messages if "error" in m.get("systemMessage", {})]
    assert len(errors) == 1 and "DELETE" in errors[0]
    assert len(parts(messages, "data", "generatedSql")) == 2
    (result,) = parts(messages, "data", "result")
    assert result["name"] == "total_by_region" and len(result["data"]) == 4
    second_prompt = fake_openai.requests[1]["messages"][-1]["content"]
    assert "DELETE" in second_prompt  # the refusal went back to the model
    final = parts(messages, "text", "parts")[0][0]
    assert "offline" not in final.lower()


async def test_after_three_failed_repairs_the_answer_says_so(client: Client, shop: Path,
                                                            fake_openai: FakeOpenAI) -> None:
    for _ in range(4):
        fake_openai.reply(text=json.dumps({"sql": "SELECT nope FROM orders"}))
    messages = await ask(client, shop, "Total amount per region?")
    assert len(fake_openai.requests) == 4
    assert len([m for m in messages if "error" in m.get("systemMessage", {})]) == 4
    assert not parts(messages, "data", "result")
    assert parts(messages, "text", "parts")  # a final response still tells the user


async def test_an_unreachable_model_falls_back_to_the_offline_planner(client: Client, shop: Path,
                                                                     fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(status=500, times=1)
    messages = await ask(client, shop, "What is the total amount by region?")
    (result,) = parts(messages, "data", "result")
    assert len(result["data"]) == 4


async def test_model_sql_reads_only_the_tables_it_was_given(client: Client, shop: Path,
                                                            fake_openai: FakeOpenAI) -> None:
    # products.csv is in the same source, but the question was given orders only.
    fake_openai.reply(text=json.dumps({"sql": "SELECT product, unit_price FROM products"}))
    fake_openai.reply(text=json.dumps({"sql": "SELEC nonsense FROM"}))
    fake_openai.reply(text=json.dumps({"sql": "SELECT count(*) AS orders FROM orders"}))
    messages = await ask(client, shop, "How many orders?")

    errors = [m["systemMessage"]["error"]["text"] for m in messages if "error" in m.get("systemMessage", {})]
    assert len(errors) == 2
    assert "products" in errors[0]
    (result,) = parts(messages, "data", "result")
    assert result["data"] == [{"orders": "120"}]
