"""Every tool and CLI argument that names something outside the store goes through the gate.

The candidates are found, not listed: every MCP tool's input schema is walked recursively, and the CLI's command
tree, for fields named like a path, URL, database location, entry point or command. ``CLASSIFIED`` then says,
for each one found, either how the gate refuses a hostile value (and the test sends that value and checks the
refusal is the gate's: its code and the setting the operator can change), or why it does not reach outside
(a reason). An argument added later and not classified fails ``test_every_candidate_is_classified``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
import typer.main
import yaml
from mcp import Client
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from convener.cli import app as cli
from convener.config import Settings
from convener.services import Services
from tests.e2e.conftest import call_json, error_text

APP_PARENT = "projects/p/locations/l"
APP = f"{APP_PARENT}/apps/gate"
HOSTILE_CALLABLE = "convener.demo.analytics_data:build_demo_database"
pytestmark = pytest.mark.anyio

LOOPBACK = "http://127.0.0.1:9"  # refused by the host allow-list before any connection is made

CANDIDATE = re.compile(
    r"(paths?|uri|urls?|location|entry_?point|command|args|file|folder|directory|dir|root|endpoint|"
    r"server_?address|base_?url|open_?api_?schema|app_?content)$", re.IGNORECASE)
"""Field names (their last part) that may name something outside the store."""


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    (tmp_path / "roots").mkdir()
    return Settings(data_dir=tmp_path / "data", database_url=database_url, knowledge_roots=(tmp_path / "roots",),
                    analytics_roots=(tmp_path / "roots",), url_hosts=("allowed.test",), knowledge_embeddings="off")


# ---------------------------------------------------------------- finding the candidates


def _schema_fields(schema: Any, defs: dict[str, Any], trail: tuple[str, ...], seen: frozenset[str]) -> Iterator[str]:
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name not in seen:
            yield from _schema_fields(defs.get(name), defs, trail, seen | {name})
    for key, sub in (schema.get("properties") or {}).items():
        if CANDIDATE.search(key):
            yield ".".join((*trail, key))
        yield from _schema_fields(sub, defs, (*trail, key), seen)
    for key in ("items", "additionalProperties"):
        yield from _schema_fields(schema.get(key), defs, (*trail, "[]"), seen)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            yield from _schema_fields(sub, defs, trail, seen)


def tool_candidates(services: Services) -> set[tuple[str, str]]:
    found = set()
    for registry in services.registries().values():
        for spec in registry.tools.values():
            schema = spec.definition.input_schema
            found |= {(spec.name, field) for field in _schema_fields(schema, schema.get("$defs", {}), (), frozenset())}
    return found


def cli_candidates() -> set[tuple[str, str]]:
    found = set()

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        found.update((" ".join(path), param.name) for param in command.params
                     if param.name and CANDIDATE.search(param.name))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(cli), ())
    return found


# ---------------------------------------------------------------- the classification


@dataclass(frozen=True)
class Gated:
    """Refused by the gate: ``refuse`` sends a hostile value and returns the error text."""

    refuse: Callable[[Client, Services], Awaitable[str]] | None
    code: str
    setting: str


@dataclass(frozen=True)
class NotOutside:
    reason: str


Verdict = Gated | NotOutside


async def _setup(client: Client) -> None:
    await call_json(client, "create_app", {"parent": APP_PARENT, "appId": "gate", "app": {"displayName": "Gate"}})


async def _create(client: Client, kind: str, body: dict[str, Any], code: str) -> str:
    await _setup(client)
    result = await client.call_tool(f"create_{kind}", {"parent": APP, f"{kind}Id": "hostile", kind: body})
    return error_text(result, code)


async def _update(client: Client, kind: str, valid: dict[str, Any], hostile: dict[str, Any], mask: str,
                  code: str) -> str:
    await _setup(client)
    await call_json(client, f"create_{kind}", {"parent": APP, f"{kind}Id": "kept", kind: valid})
    result = await client.call_tool(f"update_{kind}", {kind: {"name": f"{APP}/{kind}s/kept", **hostile},
                                                       "updateMask": mask})
    return error_text(result, code)


OPENAPI = yaml.safe_dump({"openapi": "3.0.0", "info": {"title": "t", "version": "1"},
                          "servers": [{"url": "http://allowed.test/api"}],
                          "paths": {"/x": {"get": {"operationId": "x", "responses": {"200": {"description": "ok"}}}}}})
CALLBACKS = ("beforeAgentCallbacks", "afterAgentCallbacks", "beforeModelCallbacks", "afterModelCallbacks",
             "beforeToolCallbacks", "afterToolCallbacks")
GUARDRAIL_STAGES = ("beforeAgentCallback", "afterAgentCallback", "beforeModelCallback", "afterModelCallback")
VALID_TOOLSET = {"mcpToolset": {"serverAddress": "http://allowed.test/mcp"}}
VALID_TOOL = {"pythonFunction": {"entryPoint": "convener.demo.tools:lookup_order"}}
VALID_GUARDRAIL = {"displayName": "G", "contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"}}


def _both(kind: str, field: str, hostile: dict[str, Any], valid: dict[str, Any], mask: str, code: str,
          setting: str) -> dict[tuple[str, str], Verdict]:
    """The verdicts of ``create_<kind>`` and ``update_<kind>`` for the same field."""
    async def create(client: Client, services: Services) -> str:
        return await _create(client, kind, {**valid, **hostile} if kind != "tool" else hostile, code)

    async def update(client: Client, services: Services) -> str:
        return await _update(client, kind, valid, hostile, mask, code)

    return {(f"create_{kind}", field): Gated(create, code, setting),
            (f"update_{kind}", field): Gated(update, code, setting)}


def _callable_field(kind: str, field: str, hostile: dict[str, Any], valid: dict[str, Any],
                    mask: str) -> dict[tuple[str, str], Verdict]:
    return _both(kind, field, hostile, valid, mask, "PERMISSION_DENIED", "CONVENER_PYTHON_CALLABLES")


async def _ingest(client: Client, services: Services) -> str:
    return error_text(await client.call_tool("ingest_documents", {"path": "/etc"}), "PERMISSION_DENIED")


async def _export_to(client: Client, services: Services) -> str:
    await _setup(client)
    return error_text(await client.call_tool("start_export_app", {
        "projectId": "p", "locationId": "l", "appId": "gate", "path": "/tmp/out.zip"}), "PERMISSION_DENIED")


async def _import_from(client: Client, services: Services) -> str:
    return error_text(await client.call_tool("start_import_app", {
        "projectId": "p", "locationId": "l", "appId": "gate", "path": "/etc/passwd"}), "PERMISSION_DENIED")


async def _add_store(client: Client, services: Services) -> str:
    location = services.database.url  # sqlite:///…/convener.db, or the PostgreSQL store's own URL
    return error_text(await client.call_tool("add_sql_source", {"name": "store", "location": location}),
                      "PERMISSION_DENIED")


async def _import_app(client: Client, services: Services) -> str:
    content = yaml.safe_dump({"format": "convener.app/v1", "app": {"displayName": "X"},
                              "tools": {"t": {"pythonFunction": {"entryPoint": HOSTILE_CALLABLE}}}})
    result = await client.call_tool("import_app", {"parent": APP_PARENT, "appId": "imported", "appContent": content})
    return error_text(result, "PERMISSION_DENIED")


CLASSIFIED: dict[tuple[str, str], Verdict] = {
    **{key: verdict for stage in CALLBACKS for key, verdict in _callable_field(
        "agent", f"agent.{stage}.[].entryPoint", {stage: [{"entryPoint": HOSTILE_CALLABLE}]}, {"displayName": "A"},
        stage).items()},
    **_callable_field("agent", "agent.pythonAgent.entryPoint",
                      {"pythonAgent": {"entryPoint": "convener.demo.evaluations:personas"}}, {"displayName": "A"},
                      "pythonAgent"),
    **_both("agent", "agent.remoteAgent.url", {"remoteAgent": {"url": f"{LOOPBACK}/hook"}}, {"displayName": "A"},
            "remoteAgent", "PERMISSION_DENIED", "CONVENER_URL_HOSTS"),
    **{key: verdict for stage in GUARDRAIL_STAGES for key, verdict in _callable_field(
        "guardrail", f"guardrail.codeCallback.{stage}.entryPoint",
        {"contentFilter": None, "codeCallback": {stage: {"entryPoint": HOSTILE_CALLABLE}}}, VALID_GUARDRAIL,
        "contentFilter,codeCallback").items()},
    **_callable_field("tool", "tool.pythonFunction.entryPoint", {"pythonFunction": {"entryPoint": HOSTILE_CALLABLE}},
                      VALID_TOOL, "pythonFunction"),
    **_both("tool", "tool.openApiTool.openApiSchema", {"pythonFunction": None, "openApiTool": {
        "openApiSchema": f"{LOOPBACK}/openapi.yaml"}}, VALID_TOOL, "pythonFunction,openApiTool",
            "PERMISSION_DENIED", "CONVENER_URL_HOSTS"),
    **_both("tool", "tool.openApiTool.url", {"pythonFunction": None, "openApiTool": {
        "openApiSchema": OPENAPI, "url": LOOPBACK}}, VALID_TOOL, "pythonFunction,openApiTool",
            "PERMISSION_DENIED", "CONVENER_URL_HOSTS"),
    **_both("toolset", "toolset.mcpToolset.serverAddress", {"mcpToolset": {"serverAddress": f"{LOOPBACK}/mcp"}},
            VALID_TOOLSET, "mcpToolset", "PERMISSION_DENIED", "CONVENER_URL_HOSTS"),
    **_both("toolset", "toolset.mcpToolset.command", {"mcpToolset": {"command": "/bin/sh"}}, VALID_TOOLSET,
            "mcpToolset", "PERMISSION_DENIED", "CONVENER_MCP_STDIO_COMMANDS"),
    **_both("toolset", "toolset.mcpToolset.args", {"mcpToolset": {"command": "/bin/sh", "args": ["-c", "id"]}},
            VALID_TOOLSET, "mcpToolset", "PERMISSION_DENIED", "CONVENER_MCP_STDIO_COMMANDS"),
    ("import_app", "appContent"): Gated(_import_app, "PERMISSION_DENIED", "CONVENER_PYTHON_CALLABLES"),
    ("ingest_documents", "path"): Gated(_ingest, "PERMISSION_DENIED", "CONVENER_KNOWLEDGE_ROOTS"),
    ("start_export_app", "path"): Gated(_export_to, "PERMISSION_DENIED", "CONVENER_APP_ROOTS"),
    ("start_import_app", "path"): Gated(_import_from, "PERMISSION_DENIED", "CONVENER_APP_ROOTS"),
    **{(f"{verb}_deployment", "deployment.channelProfile"): NotOutside(
        "channel settings stored as data; nothing is reached through them") for verb in ("create", "update")},
    ("add_sql_source", "location"): Gated(_add_store, "PERMISSION_DENIED", "own store"),
    **{(tool, f"{field}.args"): NotOutside("a tool call's arguments, kept as data; the tool they go to checks them")
       for tool, field in [
           *((f"{verb}_evaluation", field) for verb in ("create", "update") for field in (
               "evaluation.golden.turns.[].steps.[].expectation.toolCall",
               "evaluation.golden.turns.[].steps.[].expectation.agentResponse.chunks.[].toolCall",
               "evaluation.scenario.scenarioExpectations.[].agentResponse.chunks.[].toolCall",
               "evaluation.scenario.scenarioExpectations.[].toolExpectation.expectedToolCall")),
           ("simulate_scenario", "scenario.scenarioExpectations.[].agentResponse.chunks.[].toolCall"),
           ("simulate_scenario", "scenario.scenarioExpectations.[].toolExpectation.expectedToolCall"),
           ("run_session", "config.historicalContexts.[].chunks.[].toolCall"),
       ]},
    ("ingest_documents", "baseUrl"): NotOutside("only the prefix of the documents' URIs; never fetched"),
    **{(f"{verb}_data_agent", f"data_agent.dataAnalyticsAgent.{context}.schemaRelationships.[].{side}SchemaPaths"
        f"{tail}"): NotOutside("column paths inside a table's schema")
       for verb in ("create", "update") for context in ("publishedContext", "stagingContext")
       for side in ("left", "right") for tail in ("", ".paths")},
}

NOT_OUTSIDE_CLI = NotOutside("the operator's own store or input, chosen by the operator on the server")
CLI_CLASSIFIED: dict[tuple[str, str], Verdict] = {
    ("knowledge ingest", "path"): Gated(None, "PERMISSION_DENIED", "own store"),
    ("data add-source", "location"): Gated(None, "PERMISSION_DENIED", "own store"),
    ("knowledge ingest", "base_url"): NotOutside("only the prefix of the documents' URIs; never fetched"),
    ("import conversations", "file"): NOT_OUTSIDE_CLI,
    ("import chat", "path"): NOT_OUTSIDE_CLI,
    ("apps import", "file"): NOT_OUTSIDE_CLI,
    ("eval import-adk", "file"): NOT_OUTSIDE_CLI,
}
"""``data_dir`` and ``database_url``, on every command, are the operator's own store: not outside."""


# ---------------------------------------------------------------- the tests


def test_every_candidate_is_classified(services: Services) -> None:
    tools = tool_candidates(services)
    assert tools == set(CLASSIFIED), {"unclassified": sorted(tools - set(CLASSIFIED)),
                                      "gone": sorted(set(CLASSIFIED) - tools)}
    commands = {found for found in cli_candidates() if found[1] not in ("data_dir", "database_url")}
    assert commands == set(CLI_CLASSIFIED), {"unclassified": sorted(commands - set(CLI_CLASSIFIED)),
                                             "gone": sorted(set(CLI_CLASSIFIED) - commands)}


GATED_TOOLS = sorted(key for key, verdict in CLASSIFIED.items() if isinstance(verdict, Gated))


@pytest.mark.parametrize("key", GATED_TOOLS, ids=["/".join(key) for key in GATED_TOOLS])
async def test_each_gated_tool_argument_refuses_a_hostile_value(client: Client, services: Services,
                                                                key: tuple[str, str]) -> None:
    verdict = CLASSIFIED[key]
    assert isinstance(verdict, Gated) and verdict.refuse is not None
    message = await verdict.refuse(client, services)
    assert verdict.setting in message, message


def test_the_cli_may_read_any_path_but_never_registers_the_store(settings: Settings, tmp_path: Path) -> None:
    Services.open(settings).close()
    common = ["--data-dir", str(settings.data_dir), "--database-url", settings.resolved_database_url]
    store = Path(make_url(settings.resolved_database_url).database or "")
    if settings.resolved_database_url.startswith("sqlite"):  # the SQLite store: as a path, as a URL, and through a link
        link = tmp_path / "innocent.sqlite"
        link.symlink_to(store)
        for location in (str(store), f"sqlite:///{store}", str(link)):
            result = CliRunner().invoke(cli, ["data", "add-source", "store", location, *common])
            assert result.exit_code != 0 and "PERMISSION_DENIED" in result.output, (location, result.output)
        ingest = CliRunner().invoke(cli, ["knowledge", "ingest", str(link), *common])
        assert ingest.exit_code != 0 and "PERMISSION_DENIED" in ingest.output, ingest.output
    else:  # the PostgreSQL store, named by its own URL
        result = CliRunner().invoke(cli, ["data", "add-source", "store", settings.resolved_database_url, *common])
        assert result.exit_code != 0 and "PERMISSION_DENIED" in result.output, result.output
    elsewhere = tmp_path / "plain.csv"
    elsewhere.write_text("a,b\n1,2\n")
    added = CliRunner().invoke(cli, ["data", "add-source", "plain", str(elsewhere), *common])
    assert added.exit_code == 0, added.output
