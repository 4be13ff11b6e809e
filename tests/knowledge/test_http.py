"""The knowledge tools over real HTTP with API keys: reading needs any knowledge scope, administering
needs knowledge.admin, and other services' keys get nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from convener.auth.keys import ApiKeys
from convener.knowledge.ingest import IngestPlan
from convener.services import Services
from tests.conftest import serving
from tests.e2e.conftest import error_text, mcp_http, structured
from tests.knowledge.conftest import BASE_URL, name_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def server(services: Services, docs: Path) -> Iterator[str]:
    services.knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    with serving(services) as url:
        yield url


def key(services: Services, *scopes: str) -> str:
    return ApiKeys(services.database).create("users/ana", scopes)[1]


async def test_a_read_only_key_searches_gets_and_answers_but_cannot_change_the_corpus(
        services: Services, server: str, docs: Path) -> None:
    async with mcp_http(server, key(services, "https://www.googleapis.com/auth/knowledge.readonly"),
                        "/knowledge/mcp") as reader:
        assert structured(await reader.call_tool("search_documents", {"query": "backup"}))["results"]
        assert structured(await reader.call_tool("get_documents", {"names": [name_of("faq.txt")]}))["documents"]
        assert structured(await reader.call_tool("answer_query", {"query": "How do I restore a backup?"}))["references"]
        assert structured(await reader.call_tool("list_data_sources", {}))["dataSources"]
        for tool, arguments in (("delete_documents", {"names": [name_of("faq.txt")]}),
                                ("ingest_documents", {"path": str(docs)})):
            assert "knowledge.admin" in error_text(await reader.call_tool(tool, arguments), "PERMISSION_DENIED")
        assert structured(await reader.call_tool("get_documents", {"names": [name_of("faq.txt")]}))["documents"]


async def test_an_admin_key_administers_and_other_services_keys_get_nothing(
        services: Services, server: str, docs: Path) -> None:
    async with mcp_http(server, key(services, "knowledge.admin")) as admin:
        operation = structured(await admin.call_tool("ingest_documents", {"path": str(docs), "baseUrl": BASE_URL}))
        assert operation["response"]["unchanged"] == 4
        assert structured(await admin.call_tool("delete_documents", {"names": [name_of("faq.txt")]})) == {
            "deletedCount": "1"}
    async with mcp_http(server, key(services, "chat", "ces")) as other:
        for tool in ("search_documents", "answer_query"):
            error_text(await other.call_tool(tool, {"query": "backup"}), "PERMISSION_DENIED")
