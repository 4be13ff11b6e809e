"""The demo workspace: what it holds, that loading it again changes nothing, and that it reads back
through the MCP tools with the output-only fields the service derives."""

from __future__ import annotations

import base64
import re
import struct
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from typer.testing import CliRunner

from convener.api.protojson import Duration, Timestamp
from convener.cli import app as cli
from convener.demo import APP, PLAN, demo_conversations, load_demo
from convener.services import Services

Json = dict[str, Any]
PARENT = str(APP)
AGENT = re.compile(rf"^{re.escape(PARENT)}/agents/(triage|orders|refunds)$")
TOOL = re.compile(rf"^{re.escape(PARENT)}/tools/[a-z_]+$")
TOOLSET = re.compile(rf"^{re.escape(PARENT)}/toolsets/[a-z_]+$")
SPAN_NAMES = re.compile(r"^(llm|guardrail|agent_transfer|tool:[a-z_]+)$")
USER_INPUTS = {
    "text": "INPUT_TYPE_TEXT", "transcript": "INPUT_TYPE_AUDIO", "image": "INPUT_TYPE_IMAGE",
    "payload": "INPUT_TYPE_EVENT", "toolResponse": "INPUT_TYPE_TOOL_RESPONSE",
    "updatedVariables": "INPUT_TYPE_VARIABLES",
}


async def call(client: Client, tool: str, arguments: Json) -> Json:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    content: Json | None = result.structured_content
    assert content is not None
    return content


async def listed(client: Client, **arguments: Any) -> list[Json]:
    """Every conversation list_conversations returns for these arguments, across pages."""
    found: list[Json] = []
    token = None
    while True:
        page = await call(client, "list_conversations", {"parent": PARENT, "pageSize": 10, **arguments,
                                                         **({"pageToken": token} if token else {})})
        found.extend(page.get("conversations", []))
        token = page.get("nextPageToken")
        if not token:
            return found


@pytest.fixture
async def demo(services: Services, client: Client) -> list[Json]:
    """The demo loaded into a fresh store, read back with list_conversations, oldest first."""
    load_demo(services)
    return sorted(await listed(client), key=lambda c: c["name"])


def by_id(conversations: list[Json]) -> dict[str, Json]:
    return {c["name"].rsplit("/", 1)[1]: c for c in conversations}


def messages(conversation: Json) -> Iterator[Json]:
    for turn in conversation["turns"]:
        yield from turn.get("messages", [])


def chunks(conversation: Json, role: str | None = None) -> Iterator[Json]:
    for message in messages(conversation):
        if role is None or message["role"] == role:
            yield from message["chunks"]


def spans(span: Json) -> Iterator[Json]:
    yield span
    for child in span.get("childSpans", []):
        yield from spans(child)


def with_chunk(conversations: list[Json], kind: str, role: str = "user") -> list[Json]:
    return [c for c in conversations if any(kind in chunk for chunk in chunks(c, role))]


@pytest.mark.anyio
async def test_demo_loads_app_with_two_dozen_conversations(services: Services, client: Client) -> None:
    summary = load_demo(services)

    assert summary == f"{PARENT}: {len(PLAN)} conversations ({len(PLAN)} new)"
    app = await call(client, "get_app", {"name": PARENT})
    assert app["displayName"] == "Acme Support" and app["description"]
    conversations = await listed(client)
    assert len(conversations) == len(PLAN) >= 24
    assert sorted(by_id(conversations)) == [f"demo-{n:03d}" for n in range(1, len(PLAN) + 1)]


@pytest.mark.anyio
async def test_loading_demo_twice_stores_nothing_new(services: Services, client: Client) -> None:
    load_demo(services)
    before = await listed(client)

    summary = load_demo(services)

    assert summary.endswith(f": {len(PLAN)} conversations (0 new)")
    assert await listed(client) == before


def test_demo_generator_is_deterministic_and_sets_no_output_only_fields() -> None:
    first, second = demo_conversations(), demo_conversations()

    assert [(i, c.to_json()) for i, c in first] == [(i, c.to_json()) for i, c in second]
    for _, conversation in first:
        body = conversation.to_json()
        assert not {"name", "turnCount", "inputTypes", "channelType", "startTime", "endTime"} & set(body)
        for turn in body["turns"]:
            assert all("duration" not in span for span in spans(turn["rootSpan"]))


def test_demo_cli_command_is_idempotent(database_url: str, tmp_path: Any) -> None:
    runner = CliRunner()
    arguments = ["demo", "--database-url", database_url, "--data-dir", str(tmp_path / "cli")]

    first = runner.invoke(cli, arguments)
    second = runner.invoke(cli, arguments)

    assert first.exit_code == 0, first.output
    assert f"({len(PLAN)} new)" in first.output
    assert second.exit_code == 0, second.output
    assert "(0 new)" in second.output


@pytest.mark.anyio
async def test_demo_has_every_source_mostly_live(demo: list[Json]) -> None:
    sources = Counter(c["source"] for c in demo)

    assert set(sources) == {"LIVE", "SIMULATOR", "EVAL", "AGENT_TOOL"}
    assert sources["LIVE"] > len(demo) / 2


@pytest.mark.anyio
async def test_demo_user_input_of_every_kind_is_recorded_and_derived(demo: list[Json]) -> None:
    for conversation in demo:
        user = list(chunks(conversation, "user"))
        expected = {USER_INPUTS[kind] for chunk in user for kind in chunk if kind in USER_INPUTS}
        if any(chunk.get("blob", {}).get("mimeType", "").startswith("audio/") for chunk in user):
            expected.add("INPUT_TYPE_AUDIO")
        assert set(conversation["inputTypes"]) == expected, conversation["name"]
        channel = "TEXT"
        if "INPUT_TYPE_AUDIO" in expected:
            channel = "AUDIO"
        elif "INPUT_TYPE_IMAGE" in expected:
            channel = "MULTIMODAL"
        assert conversation["channelType"] == channel

    for kind in ("text", "transcript", "blob", "image", "payload", "updatedVariables", "toolResponse"):
        assert with_chunk(demo, kind), f"no user {kind} chunk"
    assert with_chunk(demo, "text", "agent")
    assert any(turn.get("userIntendedText") for c in with_chunk(demo, "transcript") for turn in c["turns"])


@pytest.mark.anyio
async def test_demo_image_is_a_valid_png_in_a_multimodal_conversation(demo: list[Json]) -> None:
    (conversation,) = with_chunk(demo, "image")
    image = next(chunk["image"] for chunk in chunks(conversation, "user") if "image" in chunk)
    data = base64.b64decode(image["data"], validate=True)

    assert image["mimeType"] == "image/png" and image["altText"]
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (2, 2)
    idat = data.index(b"IDAT")
    (length,) = struct.unpack(">I", data[idat - 4 : idat])
    assert len(zlib.decompress(data[idat + 4 : idat + 4 + length])) == height * (1 + 3 * width)
    assert "INPUT_TYPE_IMAGE" in conversation["inputTypes"] and conversation["channelType"] == "MULTIMODAL"


@pytest.mark.anyio
async def test_demo_audio_call_is_an_audio_channel(demo: list[Json]) -> None:
    calls = with_chunk(demo, "blob")

    assert calls
    for conversation in calls:
        blob = next(chunk["blob"] for chunk in chunks(conversation, "user") if "blob" in chunk)
        assert blob["mimeType"] == "audio/wav" and base64.b64decode(blob["data"]).startswith(b"RIFF")
        assert conversation["inputTypes"] == ["INPUT_TYPE_AUDIO"] and conversation["channelType"] == "AUDIO"


@pytest.mark.anyio
async def test_demo_tool_calls_are_answered_with_matching_ids(demo: list[Json]) -> None:
    persisted, from_toolsets = set(), set()
    for conversation in demo:
        calls = {c["toolCall"]["id"]: c["toolCall"] for c in chunks(conversation) if "toolCall" in c}
        responses = [chunk["toolResponse"] for chunk in chunks(conversation) if "toolResponse" in chunk]
        assert sorted(r["id"] for r in responses) == sorted(calls), conversation["name"]
        for response in responses:
            call = calls[response["id"]]
            assert call.get("tool") == response.get("tool")
            assert call.get("toolsetTool") == response.get("toolsetTool")
            assert "output" in response["response"] and isinstance(call["args"], dict)
            if "tool" in call:
                assert TOOL.match(call["tool"]), call["tool"]
                persisted.add(call["tool"].rsplit("/", 1)[1])
            else:
                assert TOOLSET.match(call["toolsetTool"]["toolset"]) and call["toolsetTool"]["toolId"]
                from_toolsets.add(call["toolsetTool"]["toolId"])

    assert {"lookup_order", "get_cart", "update_address", "create_return", "escalate_to_human"} <= persisted
    assert {"search_products", "check_refund_eligibility", "issue_refund"} <= from_toolsets
    # The client-side tool is answered by the client: a user message carries the response.
    (cart,) = with_chunk(demo, "toolResponse")
    assert "INPUT_TYPE_TOOL_RESPONSE" in cart["inputTypes"]


@pytest.mark.anyio
async def test_demo_triage_hands_off_to_orders_and_refunds(demo: list[Json]) -> None:
    targets = set()
    for conversation in demo:
        assert AGENT.match(conversation["entryAgent"])
        for chunk in chunks(conversation, "agent"):
            if "agentTransfer" in chunk:
                transfer = chunk["agentTransfer"]
                assert AGENT.match(transfer["targetAgent"]) and transfer["displayName"]
                targets.add(transfer["targetAgent"].rsplit("/", 1)[1])

    assert targets == {"orders", "refunds"}
    entries = Counter(c["entryAgent"].rsplit("/", 1)[1] for c in demo)
    assert entries.most_common(1)[0][0] == "triage" and set(entries) == {"triage", "orders", "refunds"}


@pytest.mark.anyio
async def test_demo_conversations_start_with_default_variables(demo: list[Json]) -> None:
    for conversation in demo:
        first = conversation["turns"][0]["messages"][0]
        assert first["chunks"][0]["defaultVariables"]["shop"] == "Acme"


@pytest.mark.anyio
async def test_demo_turn_counts_range_from_one_to_six(demo: list[Json]) -> None:
    counts = [c["turnCount"] for c in demo]

    assert counts == [len(c["turns"]) for c in demo]
    assert min(counts) == 1 and max(counts) <= 6 and sum(count >= 3 for count in counts) >= 5


@pytest.mark.anyio
async def test_demo_turns_have_span_trees_inside_their_turn(demo: list[Json]) -> None:
    names: set[str] = set()
    for conversation in demo:
        times = [Timestamp.parse(m["eventTime"]) for m in messages(conversation)]
        assert times == sorted(times)
        assert Timestamp.parse(conversation["startTime"]) == times[0]
        for turn in conversation["turns"]:
            root = turn["rootSpan"]
            assert root["name"] == "turn" and root["attributes"]["type"] == "TURN" and root["childSpans"]
            for span in spans(root):
                start, end = Timestamp.parse(span["startTime"]), Timestamp.parse(span["endTime"])
                assert start.nanos % 1_000_000 == 0 and end.nanos % 1_000_000 == 0  # millisecond clock
                assert Duration.parse(span["duration"]) == end - start > Duration(0)
                assert span["attributes"]["type"]
            root_start, root_end = Timestamp.parse(root["startTime"]), Timestamp.parse(root["endTime"])
            for child in root["childSpans"]:
                assert SPAN_NAMES.match(child["name"]), child["name"]
                began, ended = Timestamp.parse(child["startTime"]), Timestamp.parse(child["endTime"])
                assert root_start <= began <= ended <= root_end
                names.add(child["name"])
            for message in turn["messages"]:
                assert Timestamp.parse(message["eventTime"]) <= root_end
        assert Timestamp.parse(conversation["endTime"]) == root_end

    assert {"llm", "guardrail", "agent_transfer", "tool:lookup_order"} <= names
    llm = next(s for c in demo for t in c["turns"] for s in t["rootSpan"]["childSpans"] if s["name"] == "llm")
    assert llm["attributes"] == {"type": "LLM", "model": "offline", "agent": llm["attributes"]["agent"]}


@pytest.mark.anyio
async def test_demo_versions_deployments_and_languages(demo: list[Json]) -> None:
    versions = Counter(c["appVersion"] for c in demo)
    assert set(versions) == {f"{PARENT}/versions/v1", f"{PARENT}/versions/v2"}
    deployed = [c for c in demo if "deployment" in c]
    assert 0 < len(deployed) < len(demo)
    assert all(c["deployment"] == f"{PARENT}/deployments/prod" and c["source"] == "LIVE" for c in deployed)

    languages = Counter(c["languageCode"] for c in demo)
    assert languages.most_common(1)[0][0] == "en-US" and {"de-DE", "it-IT"} <= set(languages)
    words = {"de-DE": "Bestellung", "it-IT": "ordine"}
    for conversation in demo:
        if conversation["languageCode"] in words:
            text = " ".join(chunk["text"] for chunk in chunks(conversation) if "text" in chunk)
            assert words[conversation["languageCode"]] in text and "order" not in text.replace("ordine", "")


@pytest.mark.anyio
async def test_demo_keeps_deprecated_messages_next_to_turns(demo: list[Json]) -> None:
    legacy = [c for c in demo if "messages" in c]

    assert legacy
    for conversation in legacy:
        assert conversation["messages"] == list(messages(conversation))


@pytest.mark.anyio
async def test_demo_source_filter_lists_the_eval_conversations(demo: list[Json], client: Client) -> None:
    expected = sorted(i for i, c in demo_conversations() if c.source is not None and c.source.value == "EVAL")

    assert len(expected) >= 2
    assert sorted(by_id(await listed(client, filter="source = EVAL"))) == expected
    assert sorted(by_id(await listed(client, sources=["EVAL"]))) == expected


@pytest.mark.anyio
async def test_demo_input_type_filter_finds_the_photo(demo: list[Json], client: Client) -> None:
    expected = sorted(by_id(with_chunk(demo, "image")))

    found = await listed(client, filter="inputTypes:INPUT_TYPE_IMAGE")

    assert sorted(by_id(found)) == expected and expected
    assert sorted(by_id(await listed(client, filter="inputTypes:INPUT_TYPE_AUDIO"))) == sorted(
        by_id(with_chunk(demo, "blob"))
    )
