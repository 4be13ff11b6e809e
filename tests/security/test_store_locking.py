"""Reads never wait for the write lock. The attack's shape: with a CLI import holding SQLite's write lock, an
API-key request to ``list_apps`` waited busy_timeout (10 s) for the key lookup's write transaction, then failed
as a plain-text HTTP 500. Now the key lookup and every read tool read a WAL snapshot beside the writer, and a
write that does time out behind it is a tool error ``UNAVAILABLE: …``."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import event, insert
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from convener.auth.keys import ApiKeys
from convener.services import Services
from convener.store.schema import installation

PARENT = "projects/acme/locations/global"
APP = f"{PARENT}/apps/support"
PROMPT_SECONDS = 1.0
"""Well under SQLite's busy_timeout (10 s): a read that waited for the writer would take that long."""
HOLD_SECONDS = 4.0


@contextmanager
def write_lock_held(services: Services) -> Iterator[None]:
    """Another connection (as a CLI import's) holds SQLite's write lock, with rows written and not committed."""
    path = make_url(services.database.url).database
    assert path
    writer = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.executemany("INSERT INTO installation (key, value) VALUES (?, ?)",
                           [(f"held-{index}", b"x" * 1024) for index in range(200)])
        yield
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def call(client: httpx.Client, tool: str, arguments: dict[str, Any]) -> tuple[float, httpx.Response]:
    started = time.monotonic()
    response = client.post("/mcp", content=json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}))
    return time.monotonic() - started, response


def result_text(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    return str(result["content"][0]["text"]) if result.get("isError") else ""


@pytest.fixture
def sqlite_services(services: Services) -> Services:
    if services.database.dialect != "sqlite":
        pytest.skip("SQLite's one write lock")
    return services


@pytest.fixture
def client(sqlite_services: Services, http_server: str, api_key: str) -> Iterator[httpx.Client]:
    headers = {"authorization": f"Bearer {api_key}", "content-type": "application/json",
               "accept": "application/json"}
    with httpx.Client(base_url=http_server, headers=headers, timeout=30) as connected:
        _, created = call(connected, "create_app", {"parent": PARENT, "appId": "support",
                                                    "app": {"displayName": "Support"}})
        assert not result_text(created)
        yield connected


READS = [
    ("list_apps", {"parent": PARENT}),
    ("get_app", {"name": APP}),
    ("list_conversations", {"parent": APP}),
    ("get_conversation", {"name": f"{APP}/conversations/missing"}),
    ("list_agents", {"parent": APP}),
    ("list_tools", {"parent": APP}),
    ("list_app_versions", {"parent": APP}),
    ("list_evaluations", {"parent": APP}),
    ("list_evaluation_runs", {"parent": APP}),
    ("export_app", {"name": APP}),
    ("list_operations", {"name": PARENT}),
    ("search_conversations", {}),
    ("list_data_sources", {}),
    ("search_documents", {"query": "refund policy"}),
    ("list_sql_sources", {}),
    ("list_accessible_data_agents", {}),
]


def test_an_api_key_request_to_list_apps_answers_while_a_writer_holds_the_lock(
        sqlite_services: Services, client: httpx.Client) -> None:
    with write_lock_held(sqlite_services):
        started = time.monotonic()
        elapsed, response = call(client, "list_apps", {"parent": PARENT})
        assert not result_text(response)
        assert response.json()["result"]["structuredContent"]["apps"][0]["name"] == APP
        assert elapsed < PROMPT_SECONDS, f"list_apps took {elapsed:.2f} s behind the writer"
        assert time.monotonic() - started < HOLD_SECONDS  # the lock was still held while it answered


def test_every_read_tool_answers_beside_the_writer(sqlite_services: Services, client: httpx.Client) -> None:
    with write_lock_held(sqlite_services):
        for tool, arguments in READS:
            elapsed, response = call(client, tool, arguments)
            text = result_text(response)
            assert not text.startswith(("UNAVAILABLE", "INTERNAL")), f"{tool}: {text}"
            assert elapsed < PROMPT_SECONDS, f"{tool} took {elapsed:.2f} s behind the writer"


def test_the_key_lookup_itself_reads_beside_the_writer(sqlite_services: Services, api_key: str) -> None:
    keys = ApiKeys(sqlite_services.database)
    with write_lock_held(sqlite_services):
        started = time.monotonic()
        caller = keys.caller(api_key)
        listed = keys.list()
        assert time.monotonic() - started < PROMPT_SECONDS
    assert caller is not None and caller.principal == "users/alice"
    assert [key.principal for key in listed] == ["users/alice"]


def test_a_write_that_times_out_behind_the_writer_is_unavailable_not_a_500(
        sqlite_services: Services, client: httpx.Client) -> None:
    # busy_timeout shortened so that the wait a long import causes is over in a moment
    engine = sqlite_services.database.engine
    engine.dispose()
    event.listen(engine, "connect", lambda connection, _: connection.execute("PRAGMA busy_timeout=300"))
    with write_lock_held(sqlite_services):
        _, response = call(client, "create_app", {"parent": PARENT, "appId": "other", "app": {"displayName": "O"}})
        assert result_text(response).startswith("UNAVAILABLE: ")
        _, read = call(client, "list_apps", {"parent": PARENT})  # reads go on
        assert not result_text(read)
    _, retried = call(client, "create_app", {"parent": PARENT, "appId": "other", "app": {"displayName": "O"}})
    assert not result_text(retried)  # nothing half-written: the retry succeeds


def test_a_write_inside_a_read_transaction_fails_at_once(services: Services) -> None:
    # A read path is read-only in fact: a write slipped into one must not take the lock from a snapshot.
    with pytest.raises(DBAPIError), services.database.reading() as connection:
        connection.execute(insert(installation).values(key="sneaked", value=b"x"))
    with services.database.transaction() as connection:  # and the pooled connection writes again after
        connection.execute(insert(installation).values(key="written", value=b"x"))
