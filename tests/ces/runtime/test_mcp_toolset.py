"""MCP toolsets against a real MCP server built with the SDK, over Streamable HTTP and over stdio."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from convener.api.errors import InvalidArgument, PermissionDenied
from convener.ces.runtime.failures import ToolFailure
from convener.config import Settings
from convener.ces.runtime.mcp_toolset import (
    McpEndpoint,
    call_tool,
    check_endpoint,
    clear_tool_cache,
    list_tools,
)
from tests.conftest import free_port, serving_asgi

SERVER_SCRIPT = Path(__file__).with_name("remote_mcp_server.py")
FIELD = "toolset.mcpToolset"


def remote_server() -> Any:
    """A fresh instance of the script's server (loaded by path: the script is not part of a package)."""
    spec = importlib.util.spec_from_file_location("remote_mcp_server", SERVER_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build()


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    clear_tool_cache()
    yield
    clear_tool_cache()


API_KEYS_SEEN: list[str] = []


def recording_api_keys(app: ASGIApp) -> ASGIApp:
    """``app``, noting the X-Api-Key of every HTTP request it gets."""

    async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            API_KEYS_SEEN.append(dict(scope["headers"]).get(b"x-api-key", b"").decode())
        await app(scope, receive, send)

    return recorded


def gate_settings(*commands: str) -> Settings:
    return Settings(mcp_stdio_commands=commands)


@pytest.fixture(scope="module")
def http_endpoint() -> Iterator[McpEndpoint]:
    with serving_asgi(recording_api_keys(remote_server().streamable_http_app())) as base_url:
        yield McpEndpoint(server_address=f"{base_url}/mcp", headers={"X-Api-Key": "secret"})


@pytest.fixture
def stdio_endpoint() -> McpEndpoint:
    return McpEndpoint(command=sys.executable, args=(str(SERVER_SCRIPT),))


def test_lists_the_tools_of_an_http_server(http_endpoint: McpEndpoint) -> None:
    check_endpoint(http_endpoint, gate_settings(), FIELD)

    tools = {tool.name: tool for tool in list_tools(http_endpoint, timeout=10)}

    assert set(tools) == {"add", "shout", "explode", "dawdle"}
    assert tools["add"].description == "Adds two integers."
    assert tools["add"].input_schema["type"] == "object"
    assert set(tools["add"].input_schema["properties"]) == {"a", "b"}
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert API_KEYS_SEEN and set(API_KEYS_SEEN) == {"secret"}, "the endpoint's headers go with every request"


def test_calls_return_structured_content_or_text(http_endpoint: McpEndpoint) -> None:
    assert call_tool(http_endpoint, "add", {"a": 2, "b": 3}, timeout=10) == {"output": {"result": 5}}
    assert call_tool(http_endpoint, "shout", {"text": "quiet"}, timeout=10) == {"output": "QUIET"}


def test_a_failing_tool_is_a_tool_failure_with_its_message(http_endpoint: McpEndpoint) -> None:
    with pytest.raises(ToolFailure) as failure:
        call_tool(http_endpoint, "explode", {"reason": "the fuse was lit"}, timeout=10)

    assert "exploded because the fuse was lit" in failure.value.message
    assert "Traceback" not in failure.value.message


def test_an_unknown_tool_is_a_tool_failure(http_endpoint: McpEndpoint) -> None:
    with pytest.raises(ToolFailure) as failure:
        call_tool(http_endpoint, "no_such_tool", {}, timeout=10)

    assert "no_such_tool" in failure.value.message


def test_a_slow_tool_runs_out_of_time(http_endpoint: McpEndpoint) -> None:
    started = time.monotonic()
    with pytest.raises(ToolFailure) as failure:
        call_tool(http_endpoint, "dawdle", {"seconds": 3}, timeout=0.5)

    assert failure.value.code == "DEADLINE_EXCEEDED"
    assert "0.5 s" in failure.value.message
    assert time.monotonic() - started < 2.5


def test_an_unreachable_server_is_unavailable() -> None:
    endpoint = McpEndpoint(server_address=f"http://127.0.0.1:{free_port()}/mcp")

    with pytest.raises(ToolFailure) as failure:
        list_tools(endpoint, timeout=5)
    assert failure.value.code == "UNAVAILABLE"
    assert "cannot reach" in failure.value.message

    with pytest.raises(ToolFailure) as failure:
        call_tool(endpoint, "add", {"a": 1, "b": 2}, timeout=5)
    assert failure.value.code == "UNAVAILABLE"


def test_listings_are_cached_for_a_while() -> None:
    """Listing happens at every model step, so a listing is reused even once the server is gone."""
    with serving_asgi(remote_server().streamable_http_app()) as base_url:
        endpoint = McpEndpoint(server_address=f"{base_url}/mcp")
        first = list_tools(endpoint, timeout=10)
        first[0].input_schema["mutated"] = True  # a caller's change must not leak into the cache

    again = list_tools(endpoint, timeout=10)
    assert [tool.name for tool in again] == [tool.name for tool in first]
    assert "mutated" not in again[0].input_schema

    clear_tool_cache()
    with pytest.raises(ToolFailure):
        list_tools(endpoint, timeout=5)


def test_a_stdio_server_lists_and_calls(stdio_endpoint: McpEndpoint) -> None:
    check_endpoint(stdio_endpoint, gate_settings(sys.executable), FIELD)

    names = {tool.name for tool in list_tools(stdio_endpoint, timeout=20)}
    assert names == {"add", "shout", "explode", "dawdle"}
    assert call_tool(stdio_endpoint, "add", {"a": 20, "b": 22}, timeout=20) == {"output": {"result": 42}}


def test_a_command_that_cannot_start_is_unavailable() -> None:
    endpoint = McpEndpoint(command="/nonexistent/convener-test-mcp-server")

    with pytest.raises(ToolFailure) as failure:
        list_tools(endpoint, timeout=5)

    assert failure.value.code == "UNAVAILABLE"
    assert "convener-test-mcp-server" in failure.value.message


def test_a_command_must_be_allowed(stdio_endpoint: McpEndpoint) -> None:
    with pytest.raises(PermissionDenied) as refused:
        check_endpoint(stdio_endpoint, gate_settings("/usr/bin/true"), FIELD)

    assert refused.value.message.startswith(FIELD)
    assert "CONVENER_MCP_STDIO_COMMANDS" in refused.value.message
    assert Path(sys.executable).name in refused.value.message


@pytest.mark.parametrize(
    ("endpoint", "problem"),
    [
        (McpEndpoint(), "exactly one"),
        (McpEndpoint(server_address="http://example.com/mcp", command="python"), "exactly one"),
        (McpEndpoint(server_address="ftp://example.com/mcp"), "http:// or https://"),
        (McpEndpoint(server_address="example.com/mcp"), "http:// or https://"),
        (McpEndpoint(server_address="http://example.com/mcp", args=("-v",)), "only to a command"),
        (McpEndpoint(server_address="http://example.com/mcp", headers={"Bad Name": "x"}), "header name"),
        (McpEndpoint(server_address="http://example.com/mcp", headers={"X-Key": "a\r\nB: c"}), "line breaks"),
        (McpEndpoint(command="python", headers={"X-Key": "x"}), "only to a serverAddress"),
    ],
)
def test_malformed_endpoints_are_invalid(endpoint: McpEndpoint, problem: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        check_endpoint(endpoint, gate_settings("python"), FIELD)

    assert refused.value.message.startswith(FIELD)
    assert problem in refused.value.message
