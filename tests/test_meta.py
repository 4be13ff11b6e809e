"""What every tool tells a client before it is called, and the one shape every failure has.

Driven through the in-process MCP client, so it checks what goes over the wire, not the registry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from convener.config import Settings
from convener.server import mcp_servers
from convener.services import Services
from tests.conftest import ALL_TOOLS, BACKENDS, private_database

SEED_TOOLS = ("list_conversations", "get_conversation", "get_evaluation", "list_messages", "answer_query",
              "search_documents", "get_documents")
SOURCES = ["SOURCE_UNSPECIFIED", "LIVE", "SIMULATOR", "EVAL", "AGENT_TOOL"]
LOCATION = "projects/meta/locations/global"
APP = f"{LOCATION}/apps/meta-app"
ERROR_SHAPE = re.compile(r"^[A-Z_]+: .+", re.DOTALL)


Listing = dict[str, types.Tool]
"""The tools /mcp lists, by name."""


async def _listed(services: Services) -> Listing:
    async with Client(mcp_servers(services)["/mcp"]) as client:
        return {tool.name: tool for tool in (await client.list_tools()).tools}


@pytest.fixture(scope="module", params=BACKENDS)
def listing(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Listing:
    """What /mcp lists, by tool name: listed once per backend for the module's checks of what tools declare
    (a fresh store and server for each of those hundreds of checks cost most of the module's time)."""
    directory = tmp_path_factory.mktemp("meta")
    with private_database(request.param, directory) as url:
        services = Services.open(Settings(data_dir=directory / "data", database_url=url, allow_anonymous=False))
        try:
            return anyio.run(_listed, services)
        finally:
            services.close()


def _properties(schema: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every property of the schema and of its $defs, as "Owner.property" → (property, subschema)."""
    found = {f"{schema.get('title', 'input')}.{key}": (key, value) for key, value in schema.get("properties", {}).items()}
    for definition in schema.get("$defs", {}).values():
        found.update(_properties(definition))
    return found


def _enum_of(schema: dict[str, Any], prop: dict[str, Any]) -> list[str]:
    """The enum values a property allows, following a $ref (possibly inside anyOf or items)."""
    for option in prop.get("anyOf", [prop]):
        option = option.get("items", option)
        if "$ref" in option:
            return list(schema["$defs"][option["$ref"].rsplit("/", 1)[1]]["enum"])
        if "enum" in option:
            return list(option["enum"])
    raise AssertionError(f"no enum in {prop}")


# ---------------------------------------------------------------- tool metadata


def test_the_tools_of_every_service_are_all_listed(listing: Listing) -> None:
    assert set(listing) == set(ALL_TOOLS)


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_every_tool_has_a_title_a_description_and_all_four_hints(listing: Listing, name: str) -> None:
    tool = listing[name]

    assert tool.title and tool.title.strip()
    assert tool.description and len(tool.description) >= 10
    assert tool.annotations is not None
    hints = tool.annotations.model_dump(by_alias=True)
    for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
        assert isinstance(hints[hint], bool), f"{name}: {hint} is not set"


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_every_input_property_of_a_request_is_described_in_the_listing(listing: Listing, name: str) -> None:
    schema = listing[name].input_schema

    assert schema["type"] == "object"
    undocumented = [key for key, prop in schema.get("properties", {}).items() if not prop.get("description", "").strip()]
    assert not undocumented


def test_every_nested_input_property_is_described_in_the_model(services: Services) -> None:
    # The listing leaves nested descriptions out (a client's context is dear); the models, which the docs are
    # written from, keep every one.
    specs = [spec for registry in services.registries().values() for spec in registry.tools.values()]
    undocumented = [f"{spec.name}: {where}" for spec in specs
                    for where, (_, prop) in _properties(spec.request.input_json_schema()).items()
                    if not prop.get("description", "").strip()]

    assert len(specs) == len(ALL_TOOLS)
    assert not undocumented


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_every_tool_declares_an_object_output_schema(listing: Listing, name: str) -> None:
    tool = listing[name]

    assert tool.output_schema is not None
    assert tool.output_schema.get("type") == "object"


@pytest.mark.parametrize("name", SEED_TOOLS)
def test_seed_tools_are_read_only_idempotent_and_closed_world(listing: Listing, name: str) -> None:
    # The seed: destructive ❌ | idempotent ✅ | read-only ✅ | open world ❌
    annotations = listing[name].annotations
    assert annotations is not None

    assert annotations.read_only_hint is True
    assert annotations.destructive_hint is False
    assert annotations.idempotent_hint is True
    assert annotations.open_world_hint is False


@pytest.mark.parametrize("name", ["delete_conversation", "delete_app"])
def test_delete_tools_say_they_are_destructive(listing: Listing, name: str) -> None:
    annotations = listing[name].annotations
    assert annotations is not None

    assert annotations.read_only_hint is False
    assert annotations.destructive_hint is True


def test_list_conversations_takes_exactly_the_seed_inputs(listing: Listing) -> None:
    schema = listing["list_conversations"].input_schema

    assert set(schema["properties"]) == {"parent", "pageSize", "pageToken", "filter", "source", "sources"}
    assert schema.get("required") == ["parent"]
    assert _enum_of(schema, schema["properties"]["source"]) == SOURCES
    assert _enum_of(schema, schema["properties"]["sources"]) == SOURCES


def test_list_conversations_returns_exactly_the_seed_outputs(listing: Listing) -> None:
    schema = listing["list_conversations"].output_schema
    assert schema is not None

    assert set(schema["properties"]) == {"conversations", "nextPageToken"}


# ---------------------------------------------------------------- the one error shape


Call = Callable[[Client], Awaitable[types.CallToolResult]]


async def _bad_argument(client: Client) -> types.CallToolResult:
    return await client.call_tool("list_conversations", {"parent": APP, "pageSize": "abc"})


async def _not_found(client: Client) -> types.CallToolResult:
    return await client.call_tool("get_conversation", {"name": f"{APP}/conversations/absent"})


async def _bad_filter(client: Client) -> types.CallToolResult:
    return await client.call_tool("list_conversations", {"parent": APP, "filter": "nope = 1"})


async def _bad_token(client: Client) -> types.CallToolResult:
    return await client.call_tool("list_conversations", {"parent": APP, "pageToken": "forged.token"})


async def _negative_page_size(client: Client) -> types.CallToolResult:
    return await client.call_tool("list_conversations", {"parent": APP, "pageSize": -1})


async def _already_exists(client: Client) -> types.CallToolResult:
    return await client.call_tool("create_app", {"parent": LOCATION, "appId": "meta-app", "app": {}})


async def _stale_etag(client: Client) -> types.CallToolResult:
    return await client.call_tool("update_app", {"app": {"name": APP, "displayName": "x", "etag": "stale"}})


async def _stale_etag_on_delete(client: Client) -> types.CallToolResult:
    return await client.call_tool("delete_app", {"name": APP, "etag": "stale"})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("make_call", "code"),
    [
        (_bad_argument, "INVALID_ARGUMENT"),
        (_not_found, "NOT_FOUND"),
        (_bad_filter, "INVALID_ARGUMENT"),
        (_bad_token, "INVALID_ARGUMENT"),
        (_negative_page_size, "INVALID_ARGUMENT"),
        (_already_exists, "ALREADY_EXISTS"),
        (_stale_etag, "ABORTED"),
        (_stale_etag_on_delete, "ABORTED"),
    ],
    ids=["bad-argument", "not-found", "bad-filter", "bad-token", "negative-page-size", "already-exists", "aborted-update",
         "aborted-delete"],
)
async def test_every_failure_has_the_one_error_shape(client: Client, make_call: Call, code: str) -> None:
    created = await client.call_tool("create_app", {"parent": LOCATION, "appId": "meta-app", "app": {"displayName": "Meta"}})
    assert not created.is_error

    result = await make_call(client)

    assert result.is_error is True
    assert result.structured_content is None
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert ERROR_SHAPE.match(block.text), block.text
    assert block.text.startswith(f"{code}: ")
    assert "Traceback" not in block.text and "Error executing tool" not in block.text


@pytest.mark.anyio
async def test_a_success_has_structured_content_and_the_same_json_as_text(client: Client) -> None:
    result = await client.call_tool("create_app", {"parent": LOCATION, "appId": "meta-app", "app": {"displayName": "Meta"}})

    assert not result.is_error
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    assert json.loads(result.content[0].text) == result.structured_content
    assert result.structured_content is not None and result.structured_content["name"] == APP
