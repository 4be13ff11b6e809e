"""YAML from outside: alias bombs, deep nesting, many nodes and big documents are refused quickly, naming the
limit and the line, and leave nothing behind (issue 17, finding 5: 429 bytes of import_app content cost 11.5 s
of CPU, ×8 per extra level)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from mcp import Client
from typer.testing import CliRunner

from convener.api.errors import InvalidArgument
from convener.cli import app as cli
from convener.config import Settings
from convener.knowledge.converting import convert
from convener.outside.limits import YAML_ALIAS_NODES, YAML_ALIASES, YAML_DEPTH, YAML_NODES
from convener.outside.yaml_documents import read_yaml
from tests.ces.session_helpers import APP, make_app
from tests.e2e.conftest import call_json, error_text

pytestmark = pytest.mark.anyio
PARENT = "projects/acme/locations/global"
QUICK = 2.0
"""Seconds a refusal may take on a loaded machine; the attack took 11.5 s at 9 levels and 8× more per level."""


def laughs(levels: int, width: int = 8) -> str:
    """The attack's shape: an app document holding a tower of 8-wide aliases."""
    lines = ["format: convener.app/v1", "app: {displayName: lol}", "lol:", "  l0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol]"]
    lines += [f"  l{n}: &l{n} [{','.join([f'*l{n - 1}'] * width)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_the_attack_is_the_size_it_was() -> None:
    assert 400 <= len(laughs(9)) <= 460
    assert 8 ** 9 > 100_000_000, "what 429 bytes would have grown into"


async def test_a_billion_laughs_to_import_app_is_refused_at_once_and_writes_nothing(client: Client) -> None:
    for levels in (9, 12):
        started = time.monotonic()
        result = await client.call_tool("import_app", {"parent": PARENT, "appId": "lol", "appContent": laughs(levels)})
        elapsed = time.monotonic() - started
        text = error_text(result, "INVALID_ARGUMENT")
        assert "yaml.alias" in text and "at line" in text, text
        assert elapsed < QUICK, f"{levels} levels took {elapsed:.1f} s"
    error_text(await client.call_tool("get_app", {"name": f"{PARENT}/apps/lol"}), "NOT_FOUND")
    assert (await call_json(client, "list_apps", {"parent": PARENT})).get("apps", []) == []


async def test_an_app_that_uses_a_few_aliases_still_imports(client: Client) -> None:
    content = (
        "format: convener.app/v1\n"
        "app: {displayName: Shop, rootAgent: front}\n"
        "agents:\n"
        "  front: {displayName: Front, playbookAgent: {fallback: &reply [{reply: Hello}]}}\n"
        "  back: {displayName: Back, playbookAgent: {fallback: *reply}}\n"
    )
    await call_json(client, "import_app", {"parent": PARENT, "appId": "shop", "appContent": content})
    back = await call_json(client, "get_agent", {"name": f"{APP}/agents/back"})
    assert back["playbookAgent"]["fallback"] == [{"reply": "Hello"}]


@pytest.mark.parametrize(("content", "limit", "line"), [
    pytest.param("app:\n  displayName: deep\n  description: " + "[" * 5_000 + "]" * 5_000 + "\n", "yaml.depth", 3,
                 id="deep-nesting"),
    pytest.param("app: {displayName: many}\nlol: [" + "0," * YAML_NODES + "0]\n", "yaml.nodes", 2, id="many-nodes"),
    pytest.param("a: &a [x]\nb: [" + ",".join(["*a"] * (YAML_ALIASES + 1)) + "]\n", "yaml.aliases", 2,
                 id="many-aliases"),
    pytest.param("a: &a [1]\nb: *b\n", "no complete anchor", 2, id="undefined-alias"),
    pytest.param("app:\n  displayName: loop\n  description: &me [*me]\n", "no complete anchor", 3, id="recursive-alias"),
], )
async def test_hostile_yaml_shapes_are_refused_naming_the_limit_and_line(client: Client, content: str, limit: str,
                                                                          line: int) -> None:
    started = time.monotonic()
    result = await client.call_tool("import_app", {"parent": PARENT, "appId": "bad", "appContent": content})
    text = error_text(result, "INVALID_ARGUMENT")
    assert limit in text and f"line {line}" in text, text
    assert time.monotonic() - started < 3 * QUICK
    error_text(await client.call_tool("get_app", {"name": f"{PARENT}/apps/bad"}), "NOT_FOUND")


def test_a_big_app_file_through_the_cli_is_refused_before_it_is_parsed(settings: Settings, tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("w", encoding="utf-8") as out:
        out.write("format: convener.app/v1\napp: {displayName: big}\nlol: |\n")
        line = "  " + "x" * 98 + "\n"
        out.write(line * 60_000)  # 6 MB
    common = ["--data-dir", str(tmp_path / "cli"), "--database-url", settings.resolved_database_url]
    result = CliRunner().invoke(cli, ["apps", "import", str(big), "--parent", PARENT, *common])
    assert result.exit_code == 1
    assert "INVALID_ARGUMENT" in result.output and "5000000 bytes" in result.output, result.output
    bomb = tmp_path / "lol.yaml"
    bomb.write_text(laughs(9), encoding="utf-8")
    result = CliRunner().invoke(cli, ["apps", "import", str(bomb), "--parent", PARENT, *common])
    assert result.exit_code == 1 and "yaml.alias_nodes" in result.output, result.output


async def test_an_alias_bomb_in_an_openapi_spec_is_refused(client: Client) -> None:
    spec = (
        "openapi: 3.0.0\ninfo: {title: lol, version: '1'}\nservers: [{url: 'http://127.0.0.1:1'}]\n"
        "paths:\n  /a:\n    get:\n      operationId: lol\n      x-lol:\n"
        + "".join(f"        l{n}: &l{n} [{','.join([f'*l{n - 1}'] * 8) if n else 'lol,lol,lol,lol,lol,lol,lol,lol'}]\n"
                  for n in range(9))
    )
    await make_app(client)
    started = time.monotonic()
    result = await client.call_tool("create_tool", {"parent": APP, "toolId": "lol",
                                                    "tool": {"openApiTool": {"openApiSchema": spec}}})
    text = error_text(result, "INVALID_ARGUMENT")
    assert text.startswith("INVALID_ARGUMENT: tool.openApiTool.openApiSchema") and "yaml.alias_nodes" in text, text
    assert time.monotonic() - started < QUICK
    assert (await call_json(client, "list_tools", {"parent": APP})).get("tools", []) == []


def test_an_alias_bomb_in_markdown_front_matter_is_ignored_like_junk_front_matter() -> None:
    front = "title: lol\n" + "".join(
        f"l{n}: &l{n} [{','.join([f'*l{n - 1}'] * 8) if n else 'lol,lol,lol,lol,lol,lol,lol,lol'}]\n" for n in range(12))
    started = time.monotonic()
    result = convert("notes.md", f"---\n{front}---\nBody text.\n".encode())
    assert time.monotonic() - started < QUICK
    assert result.title == "Notes", "the front matter was not read"
    assert "Body text." in result.markdown


def test_the_reader_counts_aliases_by_what_they_expand_to() -> None:
    shared = "s: &s [" + ",".join(["0"] * 199) + "]\n"  # 200 nodes
    references = YAML_ALIAS_NODES // 200
    under = shared + "t: [" + ",".join(["*s"] * references) + "]\n"
    assert references < YAML_ALIASES
    assert len(read_yaml(under, "doc")["t"]) == references
    with pytest.raises(InvalidArgument, match=r"yaml\.alias_nodes\)"):
        read_yaml(under.replace("t: [", "t: [*s, "), "doc")


def test_the_reader_builds_what_the_safe_loader_builds() -> None:
    text = "a: &a {b: [1, 2.5, true, null, 2024-01-02, '3']}\nc: *a\nd: !!str 4\n<<: *a\n"
    assert read_yaml(text, "doc") == yaml.safe_load(text)
    assert read_yaml(text.encode(), "doc") == yaml.safe_load(text)
    nested = "x: " + "[" * (YAML_DEPTH - 1) + "]" * (YAML_DEPTH - 1)  # the mapping is the first level
    assert read_yaml(nested, "doc")["x"] == yaml.safe_load(nested)["x"]
    for hostile, words in (("!!python/object/apply:os.system [ls]", "could not determine a constructor"),
                           ("a: 1\n---\nb: 2\n", "another document"), ("n: " + "9" * 5_000, "cannot be read"),
                           (b"\xff\xfe\x00", "not UTF-8")):
        with pytest.raises(InvalidArgument, match=words):
            read_yaml(hostile, "doc")
