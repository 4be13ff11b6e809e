"""The tool surface a client's model pays for: the default listing within budget, toolsets and read-only, and
each client configuration the README gives, tried as written.

Sizes are printed (``pytest -s``) per service, per toolset and per tool, largest first.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from convener.api.tool_schemas import size_of
from convener.auth.keys import ApiKeys
from convener.config import Settings
from convener.server import mcp_servers
from convener.services import Services
from convener.tooling import OUTPUT_SCHEMA_BYTES, TOOL_BYTES, listed_size, served, specs_of
from convener.toolsets import DEFAULT_TOOLSETS, TOOLSETS, Selection
from tests.conftest import ALL_TOOLS, serving

LISTING_BYTES = 150_000
"""The most the default /mcp listing may take: about 37k tokens of a client's context."""
ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def listing_body(tools: list[types.Tool]) -> int:
    """Bytes of a ``tools/list`` result holding ``tools``, as the wire carries it."""
    return size_of({"tools": [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]})


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """What an operator who chose nothing runs (the rest of the suite serves every toolset)."""
    return Settings(data_dir=tmp_path / "data", database_url=database_url, allow_anonymous=False,
                    toolsets=("default",))


@pytest.fixture
def default_server(http_server: str, api_key: str) -> tuple[str, str]:
    """The real server with the default settings, and a key with every scope."""
    return http_server, api_key


def tools_list(url: str, key: str, query: str = "") -> httpx.Response:
    return httpx.post(f"{url}/mcp{query}", headers={**HEADERS, "authorization": f"Bearer {key}"}, timeout=30,
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


def listed_names(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [tool["name"] for tool in response.json()["result"]["tools"]]


# ---------------------------------------------------------------- the budget


def test_the_default_listing_fits_a_client_context_and_every_tool_its_share(default_server: tuple[str, str],
                                                                            services: Services) -> None:
    url, key = default_server
    response = tools_list(url, key)
    body = len(response.content)
    tools = response.json()["result"]["tools"]

    specs = specs_of(services.registries().values())
    every = {spec.name: (service, spec) for service, spec in specs}
    by_service: Counter[str] = Counter()
    by_toolset: Counter[str] = Counter()
    for service, spec in specs:
        by_service[service] += listed_size(spec.definition)
        by_toolset[spec.toolset] += listed_size(spec.definition)
    print(f"\n/mcp by default: {len(tools)} tools, {body:,} bytes")
    print("every tool, by service:", dict(by_service.most_common()))
    print("every tool, by toolset:", dict(by_toolset.most_common()))
    for size, name in sorted(((listed_size(spec.definition), spec.name) for _, spec in specs), reverse=True):
        print(f"  {size:>7,}  {name} ({every[name][1].toolset})")

    assert body <= LISTING_BYTES, f"the default listing takes {body:,} bytes"
    assert {tool["name"] for tool in tools} == {
        spec.name for _, spec in specs if spec.toolset in DEFAULT_TOOLSETS}
    too_large = {spec.name: listed_size(spec.definition) for _, spec in specs
                 if listed_size(spec.definition) > TOOL_BYTES or size_of(spec.definition.output_schema or {})
                 > OUTPUT_SCHEMA_BYTES}
    assert not too_large


def test_every_toolset_is_used_and_every_tool_is_in_one(services: Services) -> None:
    specs = specs_of(services.registries().values())

    assert {spec.toolset for _, spec in specs} == set(TOOLSETS)
    assert sorted(spec.name for spec in served(specs, Selection.of(["all"]))) == sorted(ALL_TOOLS)


def test_listed_schemas_name_every_field_of_the_wire_models(services: Services) -> None:
    # Compact, not approximate: every field a request takes (but the output-only ones it ignores) and every
    # field a response has keep their names, and enums keep every value.
    for _, spec in specs_of(services.registries().values()):
        listed = spec.definition
        taken = {info.alias or name for name, info in spec.request.model_fields.items()
                 if not (info.description or "").startswith("Output only.")}
        given = {info.alias or name for name, info in spec.response.model_fields.items()}
        assert set(listed.input_schema.get("properties", {})) == taken, spec.name
        assert set((listed.output_schema or {}).get("properties", {})) == given, spec.name
        for schema in (listed.input_schema, listed.output_schema or {}):
            assert not keywords_in(schema) & {"title", "default"}, spec.name
            assert '{"type": "null"}' not in json.dumps(schema), spec.name


def keywords_in(schema: Any) -> set[str]:
    """The schema keywords used anywhere in ``schema`` (property names are not keywords)."""
    found: set[str] = set()
    if isinstance(schema, list):
        for item in schema:
            found |= keywords_in(item)
    elif isinstance(schema, dict):
        for key, value in schema.items():
            found.add(key)
            children = value.values() if key in ("properties", "$defs") and isinstance(value, dict) else [value]
            for child in children:
                found |= keywords_in(child)
    return found


@pytest.mark.anyio
async def test_outputs_still_validate_against_the_compact_schemas(services: Services) -> None:
    # The SDK client checks every structured result against the tool's output schema and raises when one
    # does not validate (the whole suite does the same for every tool it calls).
    async with Client(mcp_servers(services)["/ces/mcp"]) as client:
        await _create_and_list(client)


async def _create_and_list(client: Client) -> None:
    created = await client.call_tool("create_app", {"parent": "projects/p/locations/l", "appId": "a",
                                                    "app": {"displayName": "A"}})
    assert not created.is_error, created.content
    listed = await client.call_tool("list_apps", {"parent": "projects/p/locations/l"})
    assert not listed.is_error
    assert listed.structured_content is not None
    assert [app["name"] for app in listed.structured_content["apps"]] == ["projects/p/locations/l/apps/a"]


# ---------------------------------------------------------------- choosing tools


def test_a_client_chooses_toolsets_on_the_url_and_each_choice_is_listed_alike_again(
        default_server: tuple[str, str]) -> None:
    url, key = default_server
    agents = listed_names(tools_list(url, key, "?toolsets=agents"))
    both = listed_names(tools_list(url, key, "?toolsets=agents,chat"))
    default = listed_names(tools_list(url, key))

    assert "create_agent" in agents and "list_messages" not in agents and "list_conversations" not in agents
    assert set(both) == set(agents) | {"list_messages", "search_messages", "search_conversations", "send_message",
                                       "list_memberships"}
    assert "create_agent" not in default and "list_conversations" in default
    # Answered again (from the kept listings): still each selection's own.
    assert listed_names(tools_list(url, key, "?toolsets=agents")) == agents
    assert listed_names(tools_list(url, key)) == default
    assert len(listed_names(tools_list(url, key, "?toolsets=all"))) == len(ALL_TOOLS)


def test_read_only_on_the_url_lists_and_runs_only_read_only_tools(default_server: tuple[str, str]) -> None:
    url, key = default_server
    names = listed_names(tools_list(url, key, "?toolsets=all&read_only=true"))

    assert "get_app" in names and "create_app" not in names and "delete_conversation" not in names
    refused = httpx.post(f"{url}/mcp?toolsets=all&read_only=true", timeout=30,
                         headers={**HEADERS, "authorization": f"Bearer {key}"},
                         json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                             "name": "create_app", "arguments": {"parent": "projects/p/locations/l", "appId": "x",
                                                                 "app": {"displayName": "X"}}}})
    assert "error" in refused.json(), refused.text
    assert "read-only" in refused.json()["error"]["message"]


def test_a_tool_outside_the_chosen_toolsets_is_not_run(default_server: tuple[str, str]) -> None:
    url, key = default_server
    answer = httpx.post(f"{url}/mcp", timeout=30, headers={**HEADERS, "authorization": f"Bearer {key}"},
                        json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                            "name": "create_app", "arguments": {"parent": "projects/p/locations/l", "appId": "x",
                                                                "app": {"displayName": "X"}}}}).json()

    assert "agents toolset" in answer["error"]["message"] and "?toolsets=agents" in answer["error"]["message"]


@pytest.mark.parametrize("query", ["?toolsets=bogus", "?toolsets=", "?toolsets=,,", "?read_only=maybe",
                                   "?toolsets=" + "x" * 5000, "?toolsets=%00"])
def test_a_bad_choice_is_invalid_argument(default_server: tuple[str, str], query: str) -> None:
    url, key = default_server
    response = tools_list(url, key, query)

    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("INVALID_ARGUMENT: ")
    assert listed_names(tools_list(url, key))  # the server still serves


def test_the_operators_read_only_cannot_be_lifted_and_service_endpoints_serve_their_whole_service(
        database_url: str, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", database_url=database_url, read_only=True, toolsets=("all",))
    with opened(settings) as services:
        _, key = ApiKeys(services.database).create("users/ana")
        with serving(services) as url:
            lifted = listed_names(tools_list(url, key, "?read_only=false"))
            ces = httpx.post(f"{url}/ces/mcp", headers={**HEADERS, "authorization": f"Bearer {key}"}, timeout=30,
                             json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()["result"]["tools"]

    assert "create_app" not in lifted and "get_app" in lifted
    assert {tool["name"] for tool in ces} >= {"get_app", "list_agents", "get_evaluation"}
    assert all(tool["annotations"]["readOnlyHint"] for tool in ces)


@contextmanager
def opened(settings: Settings) -> Iterator[Services]:
    services = Services.open(settings)
    try:
        yield services
    finally:
        services.close()


def test_serve_refuses_an_unknown_toolset_before_starting(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from convener.cli import app

    result = CliRunner().invoke(app, ["serve", "--toolsets", "nope", "--data-dir", str(tmp_path)])

    assert result.exit_code == 2
    assert "INVALID_ARGUMENT: unknown toolset 'nope'" in result.output


# ---------------------------------------------------------------- the README's client configurations


def readme_block(info: str) -> str:
    """The fenced block of README.md whose info string is ``info`` (e.g. ``json .vscode/mcp.json``)."""
    found = re.findall(rf"^```{re.escape(info)}\n(.*?)^```$", README, flags=re.MULTILINE | re.DOTALL)
    assert len(found) == 1, f"README.md has {len(found)} blocks ```{info}"
    return str(found[0])


def with_url_and_key(text: str, url: str, key: str) -> str:
    """A snippet pointed at the test's server and key (the README's say 127.0.0.1:8080 and cnv_…)."""
    return text.replace("http://127.0.0.1:8080", url).replace("cnv_…", key)


async def listed_over_http(url: str, headers: dict[str, str]) -> list[types.Tool]:
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        from mcp.client.streamable_http import streamable_http_client

        async with streamable_http_client(url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return list((await session.list_tools()).tools)


def test_the_http_configurations_load_a_tool_list_within_budget(default_server: tuple[str, str],
                                                                services: Services) -> None:
    import anyio

    url, key = default_server
    everyday = served(specs_of(services.registries().values()), Selection.of(["default"]))
    vscode = json.loads(with_url_and_key(readme_block("json .vscode/mcp.json"), url, key))["servers"]["convener"]
    gemini = json.loads(with_url_and_key(readme_block("json ~/.gemini/settings.json"), url, key))
    gemini = gemini["mcpServers"]["convener"]
    claude_code = [shlex.split(line) for line in readme_block("sh claude-code").splitlines() if line.strip()]
    http_line = next(words for words in claude_code if "--transport" in words)
    assert http_line[:5] == ["claude", "mcp", "add", "--transport", "http"]
    name, endpoint, flag, header = http_line[5:]
    assert (name, flag) == ("convener", "--header")
    field, _, value = with_url_and_key(header, url, key).partition(": ")

    assert vscode["type"] == "http"
    for target, headers in ((vscode["url"], vscode["headers"]), (gemini["httpUrl"], gemini["headers"]),
                            (with_url_and_key(endpoint, url, key), {field: value})):
        tools = anyio.run(listed_over_http, target, headers)
        assert [tool.name for tool in tools] == [spec.name for spec in everyday]
        assert listing_body(tools) <= LISTING_BYTES


async def listed_over_stdio(command: str, args: list[str], env: dict[str, str]) -> tuple[list[types.Tool], Any]:
    parameters = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(parameters) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = list((await session.list_tools()).tools)
            chat = await session.call_tool("search_conversations", {})
            return tools, chat


@pytest.mark.slow
def test_the_stdio_configurations_run_as_written(tmp_path: Path) -> None:
    import anyio

    desktop = json.loads(readme_block("json claude_desktop_config.json"))["mcpServers"]["convener"]
    claude_code = [shlex.split(line) for line in readme_block("sh claude-code").splitlines() if line.strip()]
    stdio_line = next(words for words in claude_code if "--" in words)
    assert stdio_line[:4] == ["claude", "mcp", "add", "convener"]
    launched = stdio_line[stdio_line.index("--") + 1:]

    assert [desktop["command"], *desktop["args"]] == launched
    assert desktop["command"] == "/path/to/convener/.venv/bin/convener"
    # This checkout stands for /path/to/convener, its interpreter for .venv/bin/convener.
    env = {**os.environ, "CONVENER_DATA_DIR": str(tmp_path / "data"), "CONVENER_TOOLSETS": "default"}
    env.pop("CONVENER_DATABASE_URL", None)
    tools, chat = anyio.run(listed_over_stdio, sys.executable, ["-m", "convener", *desktop["args"]], env)

    assert listing_body(tools) <= LISTING_BYTES
    assert "list_messages" in {tool.name for tool in tools}
    assert not chat.is_error, chat.content  # acts as users/ana, not as the local user chat refuses
