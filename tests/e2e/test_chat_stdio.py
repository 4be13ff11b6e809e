"""The chat tools over ``convener serve --transport stdio --as users/ID``: a real subprocess, as a local MCP
client launches it, on a store the Slack sample was imported into with ``convener import chat``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from convener.cli import app
from tests.conftest import CHAT_TOOLS
from tests.e2e.conftest import MESSAGES_VALIDATOR, assert_matches, assert_no_leak, error_text, structured

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CONVENER = str(Path(sys.executable).parent / "convener")
DEADLINE = 120
SLACK = Path(__file__).parent.parent / "data" / "chat" / "slack"

GENERAL = "spaces/C01GENERAL"
RANDOM = "spaces/C02RANDOM"
LEADERSHIP = "spaces/G01LEADS"
DINNER = "spaces/G02DINNER"
DM = "spaces/D01ALICEBOB"
ALICE_S = {GENERAL, RANDOM, LEADERSHIP, DINNER, DM}
"""channels.json, groups.json, mpims.json and dms.json of the sample all list U01ALICE."""
CAROL_S = {GENERAL, LEADERSHIP}
LISTED_IN_GENERAL = 11
"""general's 14 records less its join, its topic change and a deleted file's tombstone."""


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG"):
        monkeypatch.delenv(variable, raising=False)


def store_options(database_url: str, tmp_path: Path) -> list[str]:
    return ["--data-dir", str(tmp_path / "data"), "--database-url", database_url]


@pytest.fixture
def slack_store(database_url: str, tmp_path: Path) -> list[str]:
    """The Slack sample imported with the CLI; the store options that reach it."""
    options = store_options(database_url, tmp_path)
    result = CliRunner().invoke(app, ["import", "chat", "slack", str(SLACK), *options])
    assert result.exit_code == 0, result.output
    return options


@asynccontextmanager
async def stdio(options: list[str], *extra: str) -> AsyncIterator[Client]:
    parameters = StdioServerParameters(command=CONVENER, args=["serve", "--transport", "stdio", *options, *extra])
    async with Client(parameters, read_timeout_seconds=DEADLINE) as client:
        yield client


async def conversation_ids(client: Client, **arguments: Any) -> list[str]:
    found = structured(await client.call_tool("search_conversations", arguments))
    return [c["conversationId"] for c in found.get("conversations", [])]


async def every_message(client: Client, conversation: str, page_size: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    token: str | None = None
    for _ in range(100):
        body = structured(await client.call_tool("list_messages", {
            "conversationId": conversation, "pageSize": page_size, **({"pageToken": token} if token else {})}))
        assert_matches(MESSAGES_VALIDATOR, body)
        assert len(body.get("messages", [])) <= page_size
        messages.extend(body.get("messages", []))
        token = body.get("nextPageToken")
        if not token:
            return messages
    raise AssertionError("paging does not end")


async def test_a_member_finds_their_conversations_and_reads_them(slack_store: list[str]) -> None:
    with anyio.fail_after(DEADLINE):
        async with stdio(slack_store, "--as", "users/alice") as alice:
            everything = structured(await alice.call_tool("search_conversations", {}))
            by_name = await conversation_ids(alice, spaceNameQuery="GEN")
            with_bob = await conversation_ids(alice, participants=["bob@example.com"])
            with_bob_and_dave = await conversation_ids(alice, participants=["users/bob", "dave@example.com"])
            general = await every_message(alice, GENERAL, page_size=4)
            first_page = structured(await alice.call_tool("list_messages", {"conversationId": GENERAL}))
            thread = next(m["threadId"] for m in general if m["plaintextBody"].startswith("Welcome everyone"))
            in_thread = structured(await alice.call_tool("list_messages", {"conversationId": GENERAL,
                                                                            "threadId": thread}))

    conversations = everything["conversations"]
    assert {c["conversationId"] for c in conversations} == ALICE_S
    times = [c["lastActiveTime"] for c in conversations]
    assert times == sorted(times, reverse=True)
    assert by_name == [GENERAL]
    assert with_bob == [DM]
    assert with_bob_and_dave == [DINNER]

    assert_matches(MESSAGES_VALIDATOR, first_page)
    assert len(general) == LISTED_IN_GENERAL
    assert len({m["messageId"] for m in general}) == LISTED_IN_GENERAL
    assert all(m["messageId"].startswith(GENERAL + "/messages/") for m in general)
    created = [m["createTime"] for m in general]
    assert created == sorted(created, reverse=True)
    assert [m["messageId"] for m in first_page["messages"]] == [m["messageId"] for m in general]
    welcome = next(m for m in general if m["plaintextBody"].startswith("Welcome everyone"))
    assert welcome["plaintextBody"] == "Welcome everyone to #general! Say hi to @Bob Baker and @Carol Chen."
    assert welcome["sender"]["userId"] == "users/alice"
    assert "has joined the channel" not in " ".join(m["plaintextBody"] for m in general)

    assert_matches(MESSAGES_VALIDATOR, in_thread)
    assert {m["threadId"] for m in in_thread["messages"]} == {thread}
    assert [m["messageId"] for m in in_thread["messages"]] == [m["messageId"] for m in general
                                                                if m.get("threadId") == thread]
    assert len(in_thread["messages"]) == 3  # the welcome, bob's reply and carol's broadcast reply


async def test_the_user_may_be_named_by_email(slack_store: list[str]) -> None:
    with anyio.fail_after(DEADLINE):
        async with stdio(slack_store, "--as", "users/Alice@Example.com") as alice:
            found = set(await conversation_ids(alice))
            body = structured(await alice.call_tool("list_messages", {"conversationId": DM}))

    assert found == ALICE_S
    assert_matches(MESSAGES_VALIDATOR, body)
    assert len(body["messages"]) == 2


async def test_another_user_sees_only_their_own_conversations(slack_store: list[str]) -> None:
    with anyio.fail_after(DEADLINE):
        async with stdio(slack_store, "--as", "users/carol") as carol:
            found = set(await conversation_ids(carol))
            random = await carol.call_tool("list_messages", {"conversationId": RANDOM})
            missing = await carol.call_tool("list_messages", {"conversationId": "spaces/C99NOPE"})
            searched = structured(await carol.call_tool("search_messages", {"searchParameters": {}, "pageSize": 100}))

    assert found == CAROL_S
    assert error_text(random, "NOT_FOUND").replace(RANDOM, "X") == error_text(missing, "NOT_FOUND").replace(
        "spaces/C99NOPE", "X")
    assert searched["messages"]
    assert {m["messageId"].split("/messages/")[0] for m in searched["messages"]} <= CAROL_S


async def test_a_principal_that_is_no_chat_user_sees_nothing(slack_store: list[str]) -> None:
    with anyio.fail_after(DEADLINE):
        async with stdio(slack_store, "--as", "users/mallory") as mallory:
            found = structured(await mallory.call_tool("search_conversations", {}))
            searched = structured(await mallory.call_tool("search_messages", {"searchParameters": {}}))
            general = await mallory.call_tool("list_messages", {"conversationId": GENERAL})

    assert found == {}
    assert searched == {}
    error_text(general, "NOT_FOUND")


CALLS: dict[str, dict[str, Any]] = {
    "list_messages": {"conversationId": GENERAL},
    "search_messages": {"searchParameters": {"keywords": ["welcome"]}},
    "search_conversations": {},
    "send_message": {"conversationId": GENERAL, "messageText": "hello"},
    "list_memberships": {"parent": GENERAL},
}
assert set(CALLS) == set(CHAT_TOOLS)


async def test_without_as_every_chat_tool_says_how_to_name_the_user(slack_store: list[str]) -> None:
    with anyio.fail_after(DEADLINE):
        async with stdio(slack_store) as local:
            results = {tool: await local.call_tool(tool, arguments) for tool, arguments in CALLS.items()}
            apps = await local.call_tool("list_apps", {"parent": "projects/demo/locations/global"})

    for tool, result in results.items():
        text = error_text(result, "PERMISSION_DENIED")
        assert "--as" in text, (tool, text)
    assert not apps.is_error  # the other services still serve the local user


MALFORMED = ["alice@example.com", "groups/admins", "users/[/b]"]


def test_a_malformed_as_fails_at_start_with_a_clear_message(slack_store: list[str]) -> None:
    started = [
        (principal, subprocess.Popen(
            [CONVENER, "serve", "--transport", "stdio", *slack_store, "--as", principal],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for principal in MALFORMED
    ]
    outcomes = []
    for principal, process in started:
        try:
            stdout, stderr = process.communicate(timeout=DEADLINE)
        finally:
            process.kill()
        outcomes.append((principal, process.returncode, stdout, stderr))

    for principal, returncode, stdout, stderr in outcomes:
        assert returncode == 2, (principal, returncode, stderr)
        assert stdout == "", principal  # nothing a client would read as protocol
        assert stderr.startswith("INVALID_ARGUMENT: --as "), (principal, stderr)
        assert "users/alice" in stderr, (principal, stderr)  # what it should look like
        assert_no_leak(stderr)


def test_as_is_refused_for_http(slack_store: list[str]) -> None:
    completed = subprocess.run(
        [CONVENER, "serve", "--transport", "http", "--port", "9", *slack_store, "--as", "users/alice"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=DEADLINE, check=False,
    )

    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.startswith("INVALID_ARGUMENT: --as is for stdio"), completed.stderr
    assert_no_leak(completed.stderr)
