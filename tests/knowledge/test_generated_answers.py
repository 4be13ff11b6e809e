"""answer_query with a configured model: generated over HTTP by the real provider code against a scripted
OpenAI-compatible server, then checked sentence by sentence against the passages."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from convener.config import Settings
from convener.knowledge.answers import NOT_FOUND, OFFLINE_NOTE
from tests.e2e.conftest import structured
from tests.knowledge.conftest import BASE_URL, name_of
from tests.llm.fake_openai import FakeOpenAI, fake_openai, fake_openai_server

__all__ = ["fake_openai", "fake_openai_server"]

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(database_url: str, tmp_path: Path, fake_openai: FakeOpenAI) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, knowledge_roots=(tmp_path / "roots",),
                    knowledge_embeddings="off", llm_provider="openai", llm_base_url=fake_openai.base_url,
                    llm_model="fake-model", llm_max_retries=0, llm_timeout_seconds=5)


@pytest.fixture(autouse=True)
async def _ingested(client: Client, docs: Path) -> None:
    structured(await client.call_tool("ingest_documents", {"path": str(docs), "baseUrl": BASE_URL}))


async def answer(client: Client, query: str) -> dict[str, object]:
    return structured(await client.call_tool("answer_query", {"query": query}))


async def test_supported_sentences_are_kept_and_unsupported_ones_dropped(
        client: Client, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(text="Each workspace may store 50 gigabytes by default, set by the quota_gb setting [1]. "
                           "Quotas can be raised for free by emailing the sales team [1].")

    result = await answer(client, "What is the default storage quota?")

    assert result == {
        "answerText": "Each workspace may store 50 gigabytes by default, set by the quota_gb setting.",
        "references": [name_of("admin/configuration.html")],
    }
    prompt = fake_openai.requests[0]["messages"][-1]["content"]
    assert "The default quota is 50 gigabytes." in prompt


async def test_an_answer_with_nothing_supported_falls_back_to_quoting(client: Client, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(text="Quill stores data on the moon [2].")

    result = await answer(client, "What is the default storage quota?")

    assert str(result["answerText"]).startswith(OFFLINE_NOTE)
    assert "The default quota is 50 gigabytes." in str(result["answerText"])


async def test_a_failing_model_falls_back_to_quoting(client: Client, fake_openai: FakeOpenAI) -> None:
    fake_openai.fail(status=500, times=1)

    result = await answer(client, "How do I restore a backup?")

    assert str(result["answerText"]).startswith(OFFLINE_NOTE)
    assert result["references"] == [name_of("admin/backups.rst")]


async def test_the_model_saying_not_found_is_checked_against_the_quotes(client: Client, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(text="NOT_FOUND")

    result = await answer(client, "How do I configure a Kubernetes ingress controller?")

    assert result == {"answerText": NOT_FOUND}
