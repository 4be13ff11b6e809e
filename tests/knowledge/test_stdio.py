"""The knowledge tools over ``convener serve --transport stdio``: a real subprocess on a store the docs were
ingested into with ``convener knowledge ingest``, as a local assistant would use them."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from convener.cli import app
from tests.e2e.conftest import error_text, structured
from tests.knowledge.conftest import BASE_URL, name_of

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CONVENER = str(Path(sys.executable).parent / "convener")
DEADLINE = 120


async def test_search_get_and_answer_over_stdio(database_url: str, tmp_path: Path, docs: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("CONVENER_KNOWLEDGE_EMBEDDINGS", "off")
    options = ["--data-dir", str(tmp_path / "data"), "--database-url", database_url]
    ingested = CliRunner().invoke(app, ["knowledge", "ingest", str(docs), "--base-url", BASE_URL, *options])
    assert ingested.exit_code == 0, ingested.output

    parameters = StdioServerParameters(command=CONVENER, args=["serve", "--transport", "stdio", "--toolsets", "all",
                                                              *options],
                                       env={"CONVENER_KNOWLEDGE_EMBEDDINGS": "off", "PATH": "/usr/bin:/bin"})
    with anyio.fail_after(DEADLINE):
        async with Client(parameters, read_timeout_seconds=DEADLINE) as client:
            found = structured(await client.call_tool("search_documents", {"query": "restore the newest backup"}))
            got = structured(await client.call_tool("get_documents", {"names": [found["results"][0]["parent"]]}))
            answer = structured(await client.call_tool("answer_query", {"query": "How do I restore a backup?"}))
            refused = error_text(await client.call_tool("ingest_documents", {"path": str(docs)}),
                                 "PERMISSION_DENIED")

    assert found["results"][0]["parent"] == name_of("admin/backups.rst")
    assert "quill restore /mnt/backups/latest" in got["documents"][0]["content"]
    assert answer["references"] == [name_of("admin/backups.rst")]
    assert "CONVENER_KNOWLEDGE_ROOTS" in refused
