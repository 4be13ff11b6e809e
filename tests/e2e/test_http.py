"""The ces tools over real Streamable HTTP, driven by the official MCP client with an API key.

Every structured response is checked against the seed's JSON Schema (tests/schemas), and its
text block against the structured content.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from convener.auth.keys import ApiKeys
from convener.services import Services
from tests.conftest import CES_TOOLS
from tests.e2e.conftest import (
    APP,
    LIST_VALIDATOR,
    OTHER_APP,
    SEEDED,
    SharedServer,
    assert_matches,
    call_json,
    conversation,
    error_text,
    list_all,
    list_pages,
    mcp_http,
    newest_first,
    outcomes_of_concurrent_calls,
    sample_conversations,
    seed,
    start_time_of,
    timestamp_nanos,
    writers_meet_before,
)

SEED_CURL_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

Conversation = dict[str, Any]
SAMPLE = sample_conversations()


# ---------------------------------------------------------------- paging and order


@pytest.mark.anyio
async def test_paging_by_ten_lists_every_conversation_once_newest_first(reader: Client) -> None:
    pages = await list_pages(reader, {"parent": APP}, page_size=10)

    assert [len(page.get("conversations", [])) for page in pages] == [10] * 5 + [SEEDED - 50]
    found = [c for page in pages for c in page["conversations"]]
    names = [c["name"] for c in found]
    assert len(set(names)) == SEEDED
    assert set(names) == {body["name"] for body in SAMPLE}
    # The order the seed promises, computed from what was imported rather than from the response.
    starts = {body["name"]: start_time_of(index) for index, body in enumerate(SAMPLE)}
    assert names == sorted(names, key=lambda name: (starts[name], name), reverse=True)
    assert names == newest_first(found)


def test_sample_data_has_start_time_ties() -> None:
    starts = [start_time_of(index) for index in range(SEEDED)]
    assert len(set(starts)) < len(starts) / 2


@pytest.mark.anyio
@pytest.mark.parametrize("page_size", [1, 7, 56, 57, 58, 100])
async def test_any_page_size_lists_the_same_sequence(reader: Client, page_size: int) -> None:
    by_ten = [c["name"] for c in await list_all(reader, {"parent": APP}, page_size=10)]
    pages = await list_pages(reader, {"parent": APP}, page_size=page_size)

    assert len(pages) == max(1, math.ceil(SEEDED / page_size))
    assert [c["name"] for page in pages for c in page.get("conversations", [])] == by_ten


@pytest.mark.anyio
async def test_listing_is_scoped_to_the_parent_app(reader: Client) -> None:
    other = await list_all(reader, {"parent": OTHER_APP})

    assert len(other) == 3
    assert all(c["name"].startswith(f"{OTHER_APP}/conversations/") for c in other)


@pytest.mark.anyio
async def test_an_app_without_conversations_lists_nothing(alice: Client, services: Services) -> None:
    seed(services, APP, [])

    page = await call_json(alice, "list_conversations", {"parent": APP})

    assert_matches(LIST_VALIDATOR, page)
    assert page.get("conversations", []) == []
    assert "nextPageToken" not in page


@pytest.mark.anyio
async def test_listing_a_missing_app_is_not_found(reader: Client) -> None:
    result = await reader.call_tool("list_conversations", {"parent": "projects/acme/locations/global/apps/nowhere"})

    error_text(result, "NOT_FOUND")


@pytest.mark.anyio
async def test_nanosecond_start_times_order_the_list(alice: Client, services: Services) -> None:
    # Two conversations in the same microsecond; by name alone the earlier one would come first.
    seed(services, APP, [
        {"name": f"{APP}/conversations/a-later", "startTime": "2025-01-01T00:00:00.000000002Z"},
        {"name": f"{APP}/conversations/z-earlier", "startTime": "2025-01-01T00:00:00.000000001Z"},
    ])

    found = await list_all(alice, {"parent": APP})

    assert [c["startTime"] for c in found] == ["2025-01-01T00:00:00.000000002Z", "2025-01-01T00:00:00.000000001Z"]
    assert [c["name"] for c in found] == newest_first(found)


@pytest.mark.anyio
async def test_nanosecond_start_time_filters_compare_exactly(alice: Client, services: Services) -> None:
    seed(services, APP, [
        {"name": f"{APP}/conversations/a-later", "startTime": "2025-01-01T00:00:00.000000002Z"},
        {"name": f"{APP}/conversations/z-earlier", "startTime": "2025-01-01T00:00:00.000000001Z"},
    ])

    found = await list_all(alice, {"parent": APP, "filter": 'startTime > "2025-01-01T00:00:00.000000001Z"'})

    assert [c["name"] for c in found] == [f"{APP}/conversations/a-later"]


@pytest.mark.anyio
async def test_start_times_with_offsets_are_normalised_to_z(alice: Client, services: Services) -> None:
    seed(services, APP, [{"name": f"{APP}/conversations/offset", "startTime": "2025-01-01T10:30:00.5+05:30"}])

    found = conversation(await alice.call_tool("get_conversation", {"name": f"{APP}/conversations/offset"}))

    assert found["startTime"] == "2025-01-01T05:00:00.500Z"


# ---------------------------------------------------------------- filters


def _has(kind: str) -> Callable[[Conversation], bool]:
    return lambda c: kind in c.get("inputTypes", [])


def _start(c: Conversation) -> int:
    return timestamp_nanos(c["startTime"])


NOON = timestamp_nanos("2025-03-01T12:00:00Z")
MIDNIGHT = timestamp_nanos("2025-03-02T00:00:00Z")
HALF_PAST_NINE = timestamp_nanos("2025-03-01T09:00:00.500Z")

FILTERS: dict[str, Callable[[Conversation], bool]] = {
    'source = "EVAL"': lambda c: c["source"] == "EVAL",
    "source = AGENT_TOOL": lambda c: c["source"] == "AGENT_TOOL",
    "source != LIVE": lambda c: c["source"] != "LIVE",
    "turnCount > 2": lambda c: c["turnCount"] > 2,
    "turnCount = 1": lambda c: c["turnCount"] == 1,
    "turnCount <= 3": lambda c: c["turnCount"] <= 3,
    "inputTypes:INPUT_TYPE_IMAGE": _has("INPUT_TYPE_IMAGE"),
    "inputTypes:INPUT_TYPE_AUDIO": _has("INPUT_TYPE_AUDIO"),
    "NOT inputTypes:INPUT_TYPE_TEXT": lambda c: not _has("INPUT_TYPE_TEXT")(c),
    'startTime >= "2025-03-01T12:00:00Z" AND startTime < "2025-03-02T00:00:00Z"': lambda c: NOON <= _start(c) < MIDNIGHT,
    'startTime > "2025-03-01T09:00:00.500Z"': lambda c: _start(c) > HALF_PAST_NINE,
    'startTime <= "2025-03-01T09:00:00.5Z"': lambda c: _start(c) <= HALF_PAST_NINE,
    'endTime < "2025-03-01T12:00:00+01:00"': lambda c: timestamp_nanos(c["endTime"]) < NOON - 3600 * 10**9,
    "source = LIVE AND turnCount >= 3": lambda c: c["source"] == "LIVE" and c["turnCount"] >= 3,
    "source = EVAL OR source = SIMULATOR": lambda c: c["source"] in ("EVAL", "SIMULATOR"),
    "(source = EVAL OR turnCount = 1) AND inputTypes:INPUT_TYPE_TEXT": lambda c: (
        (c["source"] == "EVAL" or c["turnCount"] == 1) and _has("INPUT_TYPE_TEXT")(c)
    ),
    "turnCount = 5 OR inputTypes:INPUT_TYPE_BLOB": lambda c: c["turnCount"] == 5 or _has("INPUT_TYPE_BLOB")(c),
    'languageCode = "it-IT" AND NOT source = LIVE': lambda c: c["languageCode"] == "it-IT" and c["source"] != "LIVE",
    "channelType = AUDIO": lambda c: c["channelType"] == "AUDIO",
}


@pytest.mark.anyio
@pytest.mark.parametrize("filter_text", list(FILTERS))
async def test_filter_selects_exactly_the_matching_conversations_in_order(
    reader: Client, filter_text: str
) -> None:
    everything = await list_all(reader, {"parent": APP}, page_size=100)
    expected = [c["name"] for c in everything if FILTERS[filter_text](c)]
    assert 0 < len(expected) < SEEDED, "the sample data does not discriminate this filter"

    found = await list_all(reader, {"parent": APP, "filter": filter_text}, page_size=10)

    assert [c["name"] for c in found] == expected


@pytest.mark.anyio
async def test_derived_fields_follow_the_recorded_turns(reader: Client) -> None:
    for found in await list_all(reader, {"parent": APP}, page_size=100):
        assert found["turnCount"] == len(found["turns"])
        kinds = {key for turn in found["turns"] for m in turn["messages"] if m["role"] == "user" for chunk in m["chunks"] for key in chunk}
        expected = {
            "INPUT_TYPE_TEXT": "text" in kinds,
            "INPUT_TYPE_AUDIO": "transcript" in kinds,
            "INPUT_TYPE_IMAGE": "image" in kinds,
            "INPUT_TYPE_BLOB": "blob" in kinds,
            "INPUT_TYPE_EVENT": "payload" in kinds,
            "INPUT_TYPE_TOOL_RESPONSE": "toolResponse" in kinds,
            "INPUT_TYPE_VARIABLES": "updatedVariables" in kinds,
        }
        assert set(found["inputTypes"]) == {kind for kind, present in expected.items() if present}


# ---------------------------------------------------------------- source and sources


def _sources(found: list[Conversation]) -> set[str]:
    return {c["source"] for c in found}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"sources": ["EVAL"]}, {"EVAL"}),
        ({"sources": ["EVAL", "SIMULATOR"], "source": "LIVE"}, {"EVAL", "SIMULATOR"}),
        ({"sources": ["AGENT_TOOL"], "source": "AGENT_TOOL"}, {"AGENT_TOOL"}),
        ({"source": "AGENT_TOOL"}, {"AGENT_TOOL"}),
        ({"source": "LIVE"}, {"LIVE"}),
        ({"sources": [], "source": "EVAL"}, {"EVAL"}),
        ({}, {"LIVE", "SIMULATOR", "EVAL", "AGENT_TOOL"}),
        ({"sources": []}, {"LIVE", "SIMULATOR", "EVAL", "AGENT_TOOL"}),
        ({"source": "SOURCE_UNSPECIFIED"}, {"LIVE", "SIMULATOR", "EVAL", "AGENT_TOOL"}),
    ],
    ids=["sources", "sources-win-over-source", "both-agree", "source-alone", "source-live", "empty-sources-then-source",
         "neither-means-all", "empty-sources-means-all", "unspecified-means-all"],
)
async def test_sources_win_over_source_and_neither_lists_all(
    reader: Client, arguments: dict[str, Any], expected: set[str]
) -> None:
    everything = await list_all(reader, {"parent": APP}, page_size=100)

    found = await list_all(reader, {"parent": APP, **arguments}, page_size=10)

    assert _sources(found) == expected
    assert [c["name"] for c in found] == [c["name"] for c in everything if c["source"] in expected]


@pytest.mark.anyio
async def test_sources_combine_with_a_filter(reader: Client) -> None:
    everything = await list_all(reader, {"parent": APP}, page_size=100)
    expected = [c["name"] for c in everything if c["source"] in ("EVAL", "LIVE") and c["turnCount"] >= 2]

    found = await list_all(reader, {"parent": APP, "sources": ["EVAL", "LIVE"], "filter": "turnCount >= 2"}, page_size=4)

    assert [c["name"] for c in found] == expected


# ---------------------------------------------------------------- get and delete


@pytest.mark.anyio
async def test_a_conversation_recorded_in_the_deprecated_messages_field_is_served(alice: Client, services: Services) -> None:
    name = f"{APP}/conversations/legacy"
    seed(services, APP, [{
        "name": name,
        "source": "SIMULATOR",
        "messages": [
            {"role": "user", "chunks": [{"transcript": "hello"}], "eventTime": "2024-05-01T10:00:00Z"},
            {"role": "agent", "chunks": [{"text": "hi"}], "eventTime": "2024-05-01T10:00:01.250Z"},
        ],
    }])

    found = conversation(await alice.call_tool("get_conversation", {"name": name}))
    listed_once = await list_all(alice, {"parent": APP, "filter": "turnCount = 0 AND inputTypes:INPUT_TYPE_AUDIO"})

    assert found["messages"][1]["chunks"] == [{"text": "hi"}]
    assert found.get("turnCount", 0) == 0 and "turns" not in found
    assert found["startTime"] == "2024-05-01T10:00:00Z" and found["endTime"] == "2024-05-01T10:00:01.250Z"
    assert found["inputTypes"] == ["INPUT_TYPE_AUDIO"]
    assert [c["name"] for c in listed_once] == [name]


@pytest.mark.anyio
async def test_get_returns_the_listed_conversation(reader: Client) -> None:
    listed_by_name = {c["name"]: c for c in await list_all(reader, {"parent": APP}, page_size=100)}

    for body in SAMPLE[::6]:
        found = conversation(await reader.call_tool("get_conversation", {"name": body["name"]}))
        assert found == listed_by_name[body["name"]]
        assert found["languageCode"] == body["languageCode"]
        assert found["entryAgent"] == body["entryAgent"]
        assert found["source"] == body.get("source", "LIVE")
        assert found["turns"][0]["userIntendedText"] == body["turns"][0]["userIntendedText"]


@pytest.mark.anyio
async def test_get_keeps_the_span_tree_and_adds_durations(reader: Client) -> None:
    found = conversation(await reader.call_tool("get_conversation", {"name": SAMPLE[0]["name"]}))

    root = found["turns"][0]["rootSpan"]
    assert root["duration"] == "2.500s"
    assert root["childSpans"][0]["duration"] == "0.900250s"
    assert root["childSpans"][0]["childSpans"][0]["duration"] == "0.500s"


@pytest.mark.anyio
async def test_get_with_the_matching_source_finds_it_and_another_source_does_not(
    reader: Client
) -> None:
    body = SAMPLE[2]  # EVAL

    conversation(await reader.call_tool("get_conversation", {"name": body["name"], "source": "EVAL"}))
    error_text(await reader.call_tool("get_conversation", {"name": body["name"], "source": "LIVE"}), "NOT_FOUND")


@pytest.mark.anyio
async def test_get_of_a_missing_conversation_is_not_found(reader: Client) -> None:
    text = error_text(await reader.call_tool("get_conversation", {"name": f"{APP}/conversations/nope"}), "NOT_FOUND")

    assert "nope" in text


@pytest.mark.anyio
async def test_delete_then_get_is_not_found(alice: Client, seeded: list[Conversation]) -> None:
    name = seeded[5]["name"]

    assert await call_json(alice, "delete_conversation", {"name": name}) == {}

    error_text(await alice.call_tool("get_conversation", {"name": name}), "NOT_FOUND")
    error_text(await alice.call_tool("delete_conversation", {"name": name}), "NOT_FOUND")
    remaining = [c["name"] for c in await list_all(alice, {"parent": APP})]
    assert len(remaining) == SEEDED - 1 and name not in remaining


@pytest.mark.anyio
async def test_deleting_during_paging_neither_repeats_nor_skips_the_rest(alice: Client, seeded: list[Conversation]) -> None:
    everything = [c["name"] for c in await list_all(alice, {"parent": APP}, page_size=100)]
    first = await call_json(alice, "list_conversations", {"parent": APP, "pageSize": 10})
    first_names = [c["name"] for c in first["conversations"]]

    # Delete the last item of the first page and one further on: keyset paging must not shift.
    await call_json(alice, "delete_conversation", {"name": first_names[-1]})
    await call_json(alice, "delete_conversation", {"name": everything[30]})
    rest: list[str] = []
    token = first["nextPageToken"]
    while token:
        page = await call_json(alice, "list_conversations", {"parent": APP, "pageSize": 10, "pageToken": token})
        assert_matches(LIST_VALIDATOR, page)
        rest += [c["name"] for c in page.get("conversations", [])]
        token = page.get("nextPageToken")

    assert rest == [name for name in everything[10:] if name != everything[30]]


# ---------------------------------------------------------------- concurrent writers


LOCATION = "projects/acme/locations/global"


@pytest.mark.anyio
async def test_of_two_updates_with_the_same_etag_one_wins_and_the_other_is_aborted(
    http_server: str, api_key: str, alice: Client, services: Services
) -> None:
    seed(services, APP, [])
    etag = (await call_json(alice, "get_app", {"name": APP}))["etag"]

    with writers_meet_before(services, "UPDATE ces_apps SET display_name"):  # not the changelog number
        outcomes = await outcomes_of_concurrent_calls(http_server, api_key, [
            ("update_app", {"app": {"name": APP, "displayName": name, "etag": etag}, "updateMask": "displayName"})
            for name in ("first", "second")
        ])

    assert outcomes == ["ABORTED", "OK"]


@pytest.mark.anyio
async def test_of_two_deletes_of_one_app_one_wins(http_server: str, api_key: str, alice: Client, services: Services) -> None:
    seed(services, APP, [])
    etag = (await call_json(alice, "get_app", {"name": APP}))["etag"]

    with writers_meet_before(services, "DELETE FROM ces_apps"):
        outcomes = await outcomes_of_concurrent_calls(
            http_server, api_key, [("delete_app", {"name": APP, "etag": etag})] * 2
        )

    assert outcomes in (["ABORTED", "OK"], ["NOT_FOUND", "OK"])


@pytest.mark.anyio
async def test_of_two_deletes_of_one_conversation_one_wins_and_the_other_is_not_found(
    http_server: str, api_key: str, seeded: list[Conversation], services: Services
) -> None:
    name = seeded[0]["name"]

    with writers_meet_before(services, "DELETE FROM ces_conversations"):
        outcomes = await outcomes_of_concurrent_calls(http_server, api_key, [("delete_conversation", {"name": name})] * 2)

    assert outcomes == ["NOT_FOUND", "OK"]


@pytest.mark.anyio
async def test_of_two_creates_of_one_app_id_one_wins_and_the_other_already_exists(
    http_server: str, api_key: str, services: Services
) -> None:
    with writers_meet_before(services, "INSERT INTO ces_apps"):
        outcomes = await outcomes_of_concurrent_calls(
            http_server, api_key, [("create_app", {"parent": LOCATION, "appId": "race", "app": {}})] * 2
        )

    assert outcomes == ["ALREADY_EXISTS", "OK"]


@pytest.mark.anyio
async def test_many_concurrent_readers_see_the_same_pages(
    http_server: str, api_key: str, bob_key: str, seeded: list[Conversation]
) -> None:
    async def read_all(key: str, page_size: int) -> list[str]:
        async with mcp_http(http_server, key) as client:
            return [c["name"] for c in await list_all(client, {"parent": APP, "filter": "turnCount >= 2"}, page_size)]

    results: list[list[str]] = []

    async def run(key: str, page_size: int) -> None:
        results.append(await read_all(key, page_size))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for index in range(6):
                group.start_soon(run, (api_key, bob_key)[index % 2], 5 + index)

    assert len(results) == 6 and results[0]
    assert all(result == results[0] for result in results)


# ---------------------------------------------------------------- the wire, as the seed's curl sends it


def test_seed_curl_request_without_initialize_gets_a_result(catalog: SharedServer) -> None:
    body = {
        "method": "tools/call",
        "params": {"name": "list_conversations", "arguments": {"parent": APP, "pageSize": 3}},
        "jsonrpc": "2.0",
        "id": 1,
    }

    response = httpx.post(
        f"{catalog.base_url}/mcp",
        content=json.dumps(body),
        headers={**SEED_CURL_HEADERS, "authorization": f"Bearer {catalog.alice_key}"},
        timeout=30,
    )

    assert response.status_code == 200, response.text
    message = response.json()
    assert message["jsonrpc"] == "2.0" and message["id"] == 1 and "error" not in message
    result = message["result"]
    assert result.get("isError", False) is False
    assert_matches(LIST_VALIDATOR, result["structuredContent"])
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert len(result["structuredContent"]["conversations"]) == 3
    assert result["structuredContent"]["nextPageToken"]


def test_seed_curl_request_on_the_service_path_gets_a_result(catalog: SharedServer) -> None:
    body = {
        "method": "tools/call",
        "params": {"name": "get_conversation", "arguments": {"name": SAMPLE[0]["name"]}},
        "jsonrpc": "2.0",
        "id": 7,
    }

    response = httpx.post(
        f"{catalog.base_url}/ces/mcp",
        json=body,
        headers={**SEED_CURL_HEADERS, "authorization": f"Bearer {catalog.alice_key}"},
        timeout=30,
    )

    assert response.status_code == 200, response.text
    assert response.json()["result"]["structuredContent"]["name"] == SAMPLE[0]["name"]


@pytest.mark.parametrize("path", ["/mcp", "/ces/mcp"])
@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer cnv_000000000000_not-a-real-key", "Bearer", "Basic YWxpY2U6c2VjcmV0", "cnv_raw_key_without_scheme"],
    ids=["missing", "unknown-key", "empty-bearer", "basic", "no-scheme"],
)
def test_a_missing_or_invalid_key_is_unauthenticated(catalog: SharedServer, path: str, authorization: str | None) -> None:
    body = {"method": "tools/call", "params": {"name": "list_apps", "arguments": {}}, "jsonrpc": "2.0", "id": 1}
    headers = dict(SEED_CURL_HEADERS)
    if authorization is not None:
        headers["authorization"] = authorization

    response = httpx.post(f"{catalog.base_url}{path}", json=body, headers=headers, timeout=30)

    assert response.status_code == 401
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["message"].startswith("UNAUTHENTICATED")


def test_a_revoked_key_is_unauthenticated_at_once(catalog: SharedServer) -> None:
    keys = ApiKeys(catalog.services.database)
    key, secret = keys.create("users/carol")
    body = {"method": "tools/call", "params": {"name": "list_apps", "arguments": {"parent": "projects/acme/locations/global"}},
            "jsonrpc": "2.0", "id": 1}
    headers = {**SEED_CURL_HEADERS, "authorization": f"Bearer {secret}"}
    assert httpx.post(f"{catalog.base_url}/mcp", json=body, headers=headers, timeout=30).status_code == 200

    keys.revoke(key.key_id)

    response = httpx.post(f"{catalog.base_url}/mcp", json=body, headers=headers, timeout=30)
    assert response.status_code == 401
    assert response.json()["error"]["message"].startswith("UNAUTHENTICATED")


@pytest.mark.anyio
async def test_the_official_client_is_refused_without_a_valid_key(catalog: SharedServer) -> None:
    with pytest.RaisesGroup(MCPError, flatten_subgroups=True, allow_unwrapped=True):
        async with mcp_http(catalog.base_url, "cnv_000000000000_wrong"):
            pass


def test_healthz_answers_without_a_key(catalog: SharedServer) -> None:
    response = httpx.get(f"{catalog.base_url}/healthz", timeout=30)

    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert "ces" in response.json()["services"]


@pytest.mark.anyio
async def test_service_path_serves_the_same_ces_tools(catalog: SharedServer) -> None:
    async with (
        mcp_http(catalog.base_url, catalog.alice_key, "/mcp") as everything,
        mcp_http(catalog.base_url, catalog.alice_key, "/ces/mcp") as ces,
    ):
        all_tools = {tool.name: tool for tool in (await everything.list_tools()).tools}
        ces_tools = {tool.name: tool for tool in (await ces.list_tools()).tools}
        assert set(ces_tools) == set(CES_TOOLS)
        assert set(CES_TOOLS) <= set(all_tools)
        for name, tool in ces_tools.items():
            assert tool.input_schema == all_tools[name].input_schema
            assert tool.output_schema == all_tools[name].output_schema
            assert tool.annotations == all_tools[name].annotations

        via_ces = await list_all(ces, {"parent": APP, "filter": "turnCount > 1"})
        via_all = await list_all(everything, {"parent": APP, "filter": "turnCount > 1"})
        assert via_ces == via_all and via_ces


@pytest.mark.anyio
async def test_two_keys_of_different_users_read_the_same_data(reader: Client, bob_reader: Client) -> None:
    assert await list_all(reader, {"parent": APP}) == await list_all(bob_reader, {"parent": APP})


@pytest.mark.anyio
async def test_imported_times_render_with_zero_three_six_or_nine_digits(alice: Client, services: Services) -> None:
    seed(services, APP, [
        {"name": f"{APP}/conversations/t0", "startTime": "2025-01-01T00:00:00Z"},
        {"name": f"{APP}/conversations/t3", "startTime": "2025-01-01T00:00:01.1Z"},
        {"name": f"{APP}/conversations/t6", "startTime": "2025-01-01T00:00:02.00012Z"},
        {"name": f"{APP}/conversations/t9", "startTime": "2025-01-01T00:00:03.0000001Z"},
    ])

    found = {c["name"].rsplit("/", 1)[1]: c["startTime"] for c in await list_all(alice, {"parent": APP})}

    assert found == {
        "t0": "2025-01-01T00:00:00Z",
        "t3": "2025-01-01T00:00:01.100Z",
        "t6": "2025-01-01T00:00:02.000120Z",
        "t9": "2025-01-01T00:00:03.000000100Z",
    }
