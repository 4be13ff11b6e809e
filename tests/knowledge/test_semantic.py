"""Semantic search with the local all-MiniLM-L6-v2 model (the ``embeddings`` extra), fused with BM25."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from convener.api.errors import InvalidArgument
from convener.auth.caller import LOCAL_USER
from convener.config import Settings
from convener.knowledge.embeddings import MINILM, available
from convener.knowledge.ingest import IngestPlan
from convener.services import Services
from tests.e2e.conftest import structured
from tests.knowledge.conftest import BASE_URL, name_of

pytestmark = [pytest.mark.anyio, pytest.mark.slow,
              pytest.mark.skipif(not available(), reason="needs the embeddings extra: make embeddings")]


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, knowledge_roots=(tmp_path / "roots",),
                    knowledge_embeddings="auto")


@pytest.fixture(autouse=True)
async def _ingested(client: Client, docs: Path) -> None:
    structured(await client.call_tool("ingest_documents", {"path": str(docs), "baseUrl": BASE_URL}))


async def search(client: Client, query: str, **options: Any) -> dict[str, Any]:
    return structured(await client.call_tool("search_documents", {"query": query, **options}))


async def test_the_data_source_names_its_embedding_model(client: Client) -> None:
    sources = structured(await client.call_tool("list_data_sources", {}))["dataSources"]

    assert [s["embeddingModel"] for s in sources] == [MINILM]


async def test_a_question_sharing_no_word_with_the_answer_finds_it_by_meaning(
        client: Client, services: Services) -> None:
    query = "recovering after a disaster"
    assert services.knowledge.search(query, 5, None, None, LOCAL_USER, mode="lexical").results == []

    results = (await search(client, query))["results"]

    assert results[0]["parent"] == name_of("admin/backups.rst")
    assert all(0.0 <= r["relevanceScore"] <= 1.0 for r in results)


async def test_fused_results_page_through_once_each(client: Client) -> None:
    everything = [(r["parent"], r["id"]) for r in (await search(client, "quill server", pageSize=100))["results"]]
    paged: list[tuple[str, str]] = []
    token = None
    while True:
        page = await search(client, "quill server", pageSize=1, **({"pageToken": token} if token else {}))
        paged += [(r["parent"], r["id"]) for r in page["results"]]
        token = page.get("nextPageToken")
        if not token:
            break

    assert paged == everything
    assert len(set(everything)) == len(everything) == 4  # each small page is one chunk


async def test_filters_apply_to_semantic_results_too(client: Client) -> None:
    results = (await search(client, "recovering after a disaster", filter=f'uri = "{BASE_URL}faq.txt"'))["results"]

    assert {r["parent"] for r in results} == {name_of("faq.txt")}


async def test_changing_the_embedding_setting_reindexes_every_file(
        client: Client, settings: Settings, docs: Path) -> None:
    again = structured(await client.call_tool("ingest_documents", {"path": str(docs), "baseUrl": BASE_URL}))
    assert again["response"]["unchanged"] == 4

    lexical_only = Services.open(settings.model_copy(update={"knowledge_embeddings": "off"}))
    try:
        summary = lexical_only.knowledge.ingest(IngestPlan.make(docs, BASE_URL))
        sources = lexical_only.knowledge.list_data_sources()
    finally:
        lexical_only.close()

    assert (summary.updated, summary.unchanged) == (4, 0)
    assert [s.embedding_model for s in sources] == [None]


async def test_a_page_token_from_fused_ranking_is_refused_once_ranking_is_lexical(
        client: Client, settings: Settings) -> None:
    token = (await search(client, "quill server", pageSize=1))["nextPageToken"]

    lexical_only = Services.open(settings.model_copy(update={"knowledge_embeddings": "off"}))
    try:
        with pytest.raises(InvalidArgument, match="pageToken"):
            lexical_only.knowledge.search("quill server", 1, token, None, LOCAL_USER)
    finally:
        lexical_only.close()
