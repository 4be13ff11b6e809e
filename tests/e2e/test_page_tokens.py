"""AIP-158 page tokens over HTTP: opaque, signed, bound to the query and the caller; page sizes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from mcp import Client

from tests.e2e.conftest import APP, BIG, BIG_APP, OTHER_APP, SEEDED, call_json, error_text, list_all, listed

LOCATION = "projects/acme/locations/global"


async def first_token(client: Client, arguments: dict[str, Any], page_size: int = 5) -> str:
    page = listed(await client.call_tool("list_conversations", {**arguments, "pageSize": page_size}))
    token = page.get("nextPageToken")
    assert token, "the first page should have a successor"
    return str(token)


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(token: str, edit: Any) -> str:
    """The token with its payload edited and re-encoded, keeping the old signature."""
    body, _, signature = token.partition(".")
    payload = json.loads(_b64decode(body))
    edit(payload)
    return f"{_b64encode(json.dumps(payload, separators=(',', ':')).encode())}.{signature}"


# ---------------------------------------------------------------- replayed on another query or by another caller


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("issued_for", "replayed_with"),
    [
        ({"filter": "turnCount > 1"}, {"filter": "turnCount > 2"}),
        ({"filter": "turnCount > 1"}, {}),
        ({}, {"filter": "turnCount > 1"}),
        ({"parent": APP}, {"parent": OTHER_APP}),
        ({"sources": ["EVAL", "LIVE"]}, {"sources": ["EVAL"]}),
        ({"sources": ["EVAL", "LIVE"]}, {}),
        ({}, {"sources": ["SIMULATOR"]}),
        ({"source": "LIVE"}, {"source": "EVAL"}),
        ({"source": "LIVE"}, {}),
    ],
    ids=["other-filter", "filter-dropped", "filter-added", "other-parent", "fewer-sources", "sources-dropped",
         "sources-added", "other-source", "source-dropped"],
)
async def test_a_token_replayed_with_other_arguments_is_invalid(
    reader: Client, issued_for: dict[str, Any], replayed_with: dict[str, Any]
) -> None:
    token = await first_token(reader, {"parent": APP, **issued_for})

    result = await reader.call_tool("list_conversations", {"parent": APP, **replayed_with, "pageToken": token, "pageSize": 5})

    error_text(result, "INVALID_ARGUMENT")


@pytest.mark.anyio
async def test_a_token_used_by_another_caller_is_invalid(reader: Client, bob_reader: Client) -> None:
    token = await first_token(reader, {"parent": APP})

    result = await bob_reader.call_tool("list_conversations", {"parent": APP, "pageToken": token, "pageSize": 5})

    error_text(result, "INVALID_ARGUMENT")
    # ...while its owner may still use it.
    listed(await reader.call_tool("list_conversations", {"parent": APP, "pageToken": token, "pageSize": 5}))


@pytest.mark.anyio
async def test_a_list_apps_token_is_bound_to_its_caller_and_method(
    reader: Client, bob_reader: Client
) -> None:
    page = await call_json(reader, "list_apps", {"parent": LOCATION, "pageSize": 2})
    token = page["nextPageToken"]

    error_text(await bob_reader.call_tool("list_apps", {"parent": LOCATION, "pageSize": 2, "pageToken": token}), "INVALID_ARGUMENT")
    error_text(await reader.call_tool("list_apps", {"parent": "projects/acme/locations/eu", "pageToken": token}), "INVALID_ARGUMENT")
    error_text(await reader.call_tool("list_apps", {"parent": LOCATION, "filter": 'displayName = ""', "pageToken": token}),
               "INVALID_ARGUMENT")
    error_text(await reader.call_tool("list_conversations", {"parent": APP, "pageToken": token}), "INVALID_ARGUMENT")
    second = await call_json(reader, "list_apps", {"parent": LOCATION, "pageSize": 2, "pageToken": token})
    assert [app["name"] for app in page["apps"] + second["apps"]] == [BIG_APP, OTHER_APP, APP]
    assert "nextPageToken" not in second


# ---------------------------------------------------------------- tampered and malformed tokens


def _bump_position(payload: dict[str, Any]) -> None:
    payload["k"][0] += 1_000_000


def _claim_other_caller(payload: dict[str, Any]) -> None:
    payload["c"] = "0" * len(payload["c"])


def _extra_field(payload: dict[str, Any]) -> None:
    payload["x"] = 1


@pytest.mark.anyio
@pytest.mark.parametrize("edit", [_bump_position, _claim_other_caller, _extra_field], ids=["position", "caller", "extra"])
async def test_a_forged_token_is_invalid(reader: Client, edit: Any) -> None:
    token = await first_token(reader, {"parent": APP})

    result = await reader.call_tool("list_conversations", {"parent": APP, "pageToken": forge(token, edit), "pageSize": 5})

    error_text(result, "INVALID_ARGUMENT")


@pytest.mark.anyio
@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda t: t[:-4], id="truncated"),
        pytest.param(lambda t: t[: len(t) // 2], id="half"),
        pytest.param(lambda t: t.split(".")[0], id="no-signature"),
        pytest.param(lambda t: t + "A", id="appended"),
        pytest.param(lambda t: t.replace(".", ".."), id="double-dot"),
        pytest.param(lambda t: t + "." + t, id="doubled"),
        pytest.param(lambda t: t.upper(), id="upper-cased"),
        pytest.param(lambda t: "garbage", id="garbage"),
        pytest.param(lambda t: ".", id="empty-dot"),
        pytest.param(lambda t: "..", id="two-dots"),
        pytest.param(lambda t: "A.B", id="tiny"),
        pytest.param(lambda t: "\u00e9.\u00fc", id="unicode"),
        pytest.param(lambda t: "=====.=====", id="padding-only"),
        pytest.param(lambda t: "A" * 10 * 1024, id="10kb"),
        pytest.param(lambda t: "A" * 5120 + "." + "B" * 5120, id="10kb-with-dot"),
        pytest.param(lambda t: "\x00" * 4 + t, id="nul-prefixed"),
        pytest.param(lambda t: t[:8] + "!!!!" + t[8:], id="junk-inside"),
        pytest.param(lambda t: " " * 4 + t, id="space-prefixed"),
    ],
)
async def test_a_malformed_token_is_invalid(reader: Client, mangle: Any) -> None:
    token = await first_token(reader, {"parent": APP})

    result = await reader.call_tool("list_conversations", {"parent": APP, "pageToken": mangle(token), "pageSize": 5})

    error_text(result, "INVALID_ARGUMENT")


@pytest.mark.anyio
async def test_a_token_does_not_reveal_the_query(reader: Client) -> None:
    token = await first_token(reader, {"parent": APP, "filter": 'languageCode = "it-IT"'})

    assert "it-IT" not in token
    assert "it-IT" not in _b64decode(token.split(".")[0]).decode("utf-8", "replace")


# ---------------------------------------------------------------- page sizes


@pytest.mark.anyio
async def test_changing_only_page_size_between_pages_is_allowed(reader: Client) -> None:
    everything = [c["name"] for c in await list_all(reader, {"parent": APP}, page_size=100)]
    names: list[str] = []
    token: str | None = None

    for page_size in (5, 20, 1, 13, 100):
        arguments: dict[str, Any] = {"parent": APP, "pageSize": page_size}
        if token:
            arguments["pageToken"] = token
        page = listed(await reader.call_tool("list_conversations", arguments))
        names += [c["name"] for c in page.get("conversations", [])]
        token = page.get("nextPageToken")

    assert token is None
    assert names == everything


@pytest.mark.anyio
@pytest.mark.parametrize("arguments", [{"pageSize": 0}, {}], ids=["zero", "unset"])
async def test_page_size_zero_or_unset_means_twenty(reader: Client, arguments: dict[str, Any]) -> None:
    page = listed(await reader.call_tool("list_conversations", {"parent": APP, **arguments}))

    assert len(page["conversations"]) == 20
    assert page["nextPageToken"]


@pytest.mark.anyio
async def test_page_size_above_the_maximum_is_coerced_to_one_hundred(reader: Client) -> None:
    page = listed(await reader.call_tool("list_conversations", {"parent": BIG_APP, "pageSize": 1000}))
    rest = listed(await reader.call_tool(
        "list_conversations", {"parent": BIG_APP, "pageSize": 1000, "pageToken": page["nextPageToken"]}
    ))

    assert len(page["conversations"]) == 100
    assert len(rest["conversations"]) == BIG - 100 and "nextPageToken" not in rest


@pytest.mark.anyio
@pytest.mark.parametrize("page_size", [-1, -100, -(2**31)])
async def test_a_negative_page_size_is_invalid(reader: Client, page_size: int) -> None:
    result = await reader.call_tool("list_conversations", {"parent": APP, "pageSize": page_size})

    assert "pageSize" in error_text(result, "INVALID_ARGUMENT")


@pytest.mark.anyio
async def test_the_last_page_has_no_token(reader: Client) -> None:
    page = listed(await reader.call_tool("list_conversations", {"parent": APP, "pageSize": SEEDED}))

    assert len(page["conversations"]) == SEEDED
    assert "nextPageToken" not in page


@pytest.mark.anyio
async def test_an_empty_page_token_starts_at_the_first_page(reader: Client) -> None:
    with_empty = listed(await reader.call_tool("list_conversations", {"parent": APP, "pageSize": 5, "pageToken": ""}))
    without = listed(await reader.call_tool("list_conversations", {"parent": APP, "pageSize": 5}))

    assert [c["name"] for c in with_empty["conversations"]] == [c["name"] for c in without["conversations"]]
