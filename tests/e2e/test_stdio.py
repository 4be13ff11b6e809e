"""``convener serve --transport stdio`` as a local MCP client launches it: a subprocess on a prepared store."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from convener.api.errors import NotFound
from convener.auth.caller import LOCAL_USER
from convener.ces.requests import GetConversationRequest
from convener.services import Services
from tests.e2e.conftest import (
    APP,
    SEEDED,
    call_json,
    conversation,
    error_text,
    list_all,
    list_pages,
    newest_first,
)

pytestmark = pytest.mark.slow
"""Each test starts a server process."""

CONVENER = str(Path(sys.executable).parent / "convener")
DEADLINE = 120


@pytest.fixture
async def stdio(database_url: str, tmp_path: Path, seeded: list[dict[str, Any]]) -> AsyncIterator[Client]:
    """A stdio server in its own process, on the database the in-process services seeded."""
    parameters = StdioServerParameters(
        command=CONVENER,
        args=["serve", "--transport", "stdio", "--data-dir", str(tmp_path / "stdio-data"), "--database-url", database_url],
    )
    async with Client(parameters, read_timeout_seconds=DEADLINE) as client:
        yield client


@pytest.mark.anyio
async def test_stdio_pages_through_every_conversation_newest_first(stdio: Client) -> None:
    with anyio.fail_after(DEADLINE):
        pages = await list_pages(stdio, {"parent": APP}, page_size=10)

    found = [c for page in pages for c in page.get("conversations", [])]
    assert len(pages) == 6
    assert len({c["name"] for c in found}) == SEEDED
    assert [c["name"] for c in found] == newest_first(found)


@pytest.mark.anyio
async def test_stdio_filters_and_sources(stdio: Client) -> None:
    with anyio.fail_after(DEADLINE):
        everything = await list_all(stdio, {"parent": APP}, page_size=100)
        filtered = await list_all(stdio, {"parent": APP, "filter": "turnCount >= 3 AND inputTypes:INPUT_TYPE_TEXT"}, 4)
        evals = await list_all(stdio, {"parent": APP, "sources": ["EVAL", "AGENT_TOOL"], "source": "LIVE"}, 4)

    assert [c["name"] for c in filtered] == [
        c["name"] for c in everything if c["turnCount"] >= 3 and "INPUT_TYPE_TEXT" in c.get("inputTypes", [])
    ]
    assert filtered
    assert [c["name"] for c in evals] == [c["name"] for c in everything if c["source"] in ("EVAL", "AGENT_TOOL")]
    assert evals


@pytest.mark.anyio
async def test_stdio_get_returns_the_conversation(stdio: Client, seeded: list[dict[str, Any]]) -> None:
    with anyio.fail_after(DEADLINE):
        found = conversation(await stdio.call_tool("get_conversation", {"name": seeded[3]["name"]}))
        missing = await stdio.call_tool("get_conversation", {"name": f"{APP}/conversations/absent"})

    assert found["name"] == seeded[3]["name"]
    assert found["turnCount"] == len(seeded[3]["turns"])
    error_text(missing, "NOT_FOUND")


@pytest.mark.anyio
async def test_stdio_delete_removes_it_from_the_shared_store(
    stdio: Client, services: Services, seeded: list[dict[str, Any]]
) -> None:
    name = seeded[8]["name"]

    with anyio.fail_after(DEADLINE):
        assert await call_json(stdio, "delete_conversation", {"name": name}) == {}
        again = await stdio.call_tool("get_conversation", {"name": name})
        remaining = await list_all(stdio, {"parent": APP}, page_size=100)

    error_text(again, "NOT_FOUND")
    assert len(remaining) == SEEDED - 1
    with pytest.raises(NotFound):
        services.conversations.get(GetConversationRequest(name=name), LOCAL_USER)


@pytest.mark.anyio
async def test_stdio_errors_have_the_one_shape(stdio: Client) -> None:
    with anyio.fail_after(DEADLINE):
        bad_size = await stdio.call_tool("list_conversations", {"parent": APP, "pageSize": -1})
        bad_filter = await stdio.call_tool("list_conversations", {"parent": APP, "filter": "nope = 1"})
        bad_token = await stdio.call_tool("list_conversations", {"parent": APP, "pageToken": "garbage"})

    error_text(bad_size, "INVALID_ARGUMENT")
    error_text(bad_filter, "INVALID_ARGUMENT")
    error_text(bad_token, "INVALID_ARGUMENT")
