"""``convener knowledge …`` through the real CLI, on a real store."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from convener.cli import app
from convener.knowledge.answers import OFFLINE_NOTE
from tests.knowledge.conftest import BASE_URL, name_of


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("CONVENER_KNOWLEDGE_EMBEDDINGS", "off")


def run(database_url: str, tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(app, ["knowledge", *args, "--data-dir", str(tmp_path / "data"),
                                    "--database-url", database_url])


def test_ingest_then_search_ask_list_and_delete(database_url: str, tmp_path: Path, docs: Path) -> None:
    ingested = run(database_url, tmp_path, "ingest", str(docs), "--base-url", BASE_URL)
    assert ingested.exit_code == 0, ingested.output
    assert ingested.stdout.startswith("docs.quill.example: 4 files, 4 added, 0 updated, 0 unchanged, 0 removed")
    again = run(database_url, tmp_path, "ingest", str(docs), "--base-url", BASE_URL)
    assert "0 added, 0 updated, 4 unchanged" in again.stdout

    found = run(database_url, tmp_path, "search", "restore backup")
    assert found.exit_code == 0 and name_of("admin/backups.rst") in found.stdout.splitlines()[0]
    asked = run(database_url, tmp_path, "ask", "How do I restore a backup?")
    assert asked.stdout.startswith(OFFLINE_NOTE) and f"- {name_of('admin/backups.rst')}" in asked.stdout
    listed = run(database_url, tmp_path, "sources")
    assert listed.stdout.startswith(f"docs.quill.example: 4 documents from {BASE_URL}, lexical only, updated ")
    deleted = run(database_url, tmp_path, "delete", "docs.quill.example")
    assert deleted.stdout.strip() == "docs.quill.example: 4 documents deleted"


def test_problems_go_to_stderr_and_bad_input_is_a_clean_error(database_url: str, tmp_path: Path, docs: Path) -> None:
    (docs / "broken.md").write_bytes("caf\xe9".encode("latin-1"))
    ingested = run(database_url, tmp_path, "ingest", str(docs), "--base-url", BASE_URL)
    assert ingested.exit_code == 0
    assert "broken.md: " in ingested.stderr

    for args, code in ((("ingest", str(tmp_path / "missing")), "INVALID_ARGUMENT"),
                       (("ingest", str(docs), "--base-url", "nope"), "INVALID_ARGUMENT"),
                       (("search", ""), "INVALID_ARGUMENT"),
                       (("search", "quill", "--filter", "bogus = 1"), "INVALID_ARGUMENT"),
                       (("delete", "nobody"), "NOT_FOUND")):
        result = run(database_url, tmp_path, *args)
        assert result.exit_code != 0 and "Traceback" not in result.output, result.output
        assert result.stderr.startswith(f"{code}: "), result.stderr
