"""The knowledge pages through Starlette's test client: data sources, document search, a document, the ask
page with its references and supporting passages, hostile Markdown in a document, scope and bad parameters."""

from __future__ import annotations

from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from convener.auth.caller import Caller
from convener.knowledge.ingest import IngestPlan
from convener.services import Services
from tests.console.conftest import Keys
from tests.console.test_chat_views import HOSTILE, key
from tests.console.test_views import signed_in

SOURCE = "convener-docs"


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def test_data_sources_and_a_sources_documents(workspace: Services, keys: Keys) -> None:
    alice = signed_in(workspace, keys.admin)
    assert 'href="/console/dataSources"' in alice.get("/console/").text
    listed = soup(alice.get("/console/dataSources").text)
    row = listed.select_one(f'table.data-sources a[href="/console/dataSources/{SOURCE}"]')
    assert row is not None
    count = int(row.find_parent("tr").select_one("td.num").text)
    assert count > 0
    page = alice.get(f"/console/dataSources/{SOURCE}")
    assert page.status_code == 200 and soup(page.text).select_one(".facts dd").text == str(count)
    found = soup(alice.get(f"/console/dataSources/{SOURCE}", params={"query": "console sign in"}).text)
    documents = [a["href"] for a in found.select("ul.documents a")]
    assert documents and all(href.startswith("/console/documents/") for href in documents)
    assert any(href.endswith("/docs/console.md") for href in documents)
    assert alice.get("/console/dataSources/nowhere").status_code == 404


def test_search_and_a_document(workspace: Services, keys: Keys) -> None:
    alice = signed_in(workspace, keys.admin)
    page = alice.get("/console/documents", params={"query": "page tokens", "pageSize": "2"})
    assert page.status_code == 200
    html = soup(page.text)
    chunks = html.select("article.chunk")
    assert len(chunks) == 2
    following = html.select_one("nav.pager a[rel=next]")
    assert following is not None and alice.get(str(following["href"])).status_code == 200
    link = str(chunks[0].select_one("header a")["href"])
    document = alice.get(link)
    assert document.status_code == 200
    body = soup(document.text).select_one("article.document")
    assert body.select("h1, h2") and body.select("p")
    assert soup(document.text).select("article.document img") == []  # images are not fetched
    assert alice.get("/console/documents/no/such/doc.md").status_code == 404


def test_the_ask_page_shows_the_answer_its_references_and_passages(workspace: Services, keys: Keys) -> None:
    alice = signed_in(workspace, keys.admin)
    blank = alice.get("/console/answer")
    assert blank.status_code == 200 and not soup(blank.text).select("section.answer")
    page = alice.get("/console/answer", params={"query": "How do I sign in to the console?"})
    assert page.status_code == 200
    html = soup(page.text)
    assert html.select_one("section.answer .md").text.strip()
    references = [a["href"] for a in html.select("section.references a")]
    assert references and any(href.endswith("/docs/console.md") for href in references)
    passages = html.select("section.citations blockquote.passage")
    assert passages
    assert all(p.select_one("footer a")["href"] in references for p in passages)
    assert all(p.select_one("p.text").text.strip() for p in passages)


def test_hostile_markdown_in_a_document_stays_text(workspace: Services, tmp_path: Path) -> None:
    folder = tmp_path / "hostile-docs"
    folder.mkdir()
    (folder / "hostile.md").write_text(f"# Hostile quokka\n\n{HOSTILE}\n", encoding="utf-8")
    location = workspace.knowledge.check_readable(folder, remote=False)
    summary = workspace.knowledge.ingest(IngestPlan.make(location, None, "hostile", False))
    assert summary.added == 1
    alice = signed_in(workspace, key(workspace, "users/alice"))
    found = soup(alice.get("/console/documents", params={"query": "quokka"}).text)
    link = found.select_one("article.chunk header a")
    assert link is not None
    for page in (found, soup(alice.get(str(link["href"])).text)):
        main = page.select_one("main")
        assert "<script>alert('chat')</script>" in main.text
        assert "[click me](javascript:alert('link'))" in main.text
        assert main.select("script, img, b, iframe") == []
        assert not any(str(a.get("href", "")).lower().startswith(("javascript:", "data:")) for a in main.select("a"))


def test_a_data_source_shows_its_ingests_with_the_files_not_indexed(workspace: Services, tmp_path: Path) -> None:
    folder = tmp_path / "mixed-docs"
    folder.mkdir()
    (folder / "fine.md").write_text("# Fine\n\nA page that reads well.\n", encoding="utf-8")
    (folder / "<b onmouseover=alert(1)>x.md").write_bytes(b"\x00\x01 binary \xff\xfe")
    location = workspace.knowledge.check_readable(folder, remote=False)
    alice_key = key(workspace, "users/alice")
    operation = workspace.ingests.ingest(IngestPlan.make(location, None, "mixed", False), Caller("users/alice"))
    assert operation.done
    alice = signed_in(workspace, alice_key)
    page = soup(alice.get("/console/dataSources/mixed").text)
    (row,) = page.select("section.ingests tbody tr")
    assert row.select_one("a")["href"] == f"/console/{operation.name}"
    assert "succeeded" in row.text and "1 file not indexed" in row.text
    problem = row.select_one("details.problems li")
    assert problem.select_one("code").text == "<b onmouseover=alert(1)>x.md"
    assert page.select("main script, main b") == []
    assert "None of your recent operations" in soup(alice.get(f"/console/dataSources/{SOURCE}").text).text
    ben = signed_in(workspace, key(workspace, "users/ben"))  # another user's ingests are not theirs to see
    assert soup(ben.get("/console/dataSources/mixed").text).select("section.ingests tbody tr") == []


def test_a_key_without_the_knowledge_scope_is_refused(workspace: Services, keys: Keys) -> None:
    ben = signed_in(workspace, keys.chat_only)
    for path in ("/console/dataSources", f"/console/dataSources/{SOURCE}", "/console/documents?query=console",
                 "/console/answer?query=console"):
        page = ben.get(path)
        assert page.status_code == 403 and "PERMISSION_DENIED" in page.text, path
    assert 'href="/console/dataSources"' not in ben.get("/console/").text


@pytest.mark.parametrize(("path", "params"), [
    ("/console/documents", {"query": "console", "pageSize": "many"}),
    ("/console/documents", {"query": "console", "filter": "data_source >> 2"}),
    ("/console/documents", {"query": "console", "pageToken": "forged"}),
    ("/console/documents", {"query": "", "filter": 'data_source = "convener-docs"'}),
    ("/console/dataSources/convener-docs", {"query": "console", "filter": "nonsense = 1"}),
    ("/console/answer", {"query": ""}),
    ("/console/answer", {"query": "x" * 600}),
])
def test_bad_parameters_are_invalid_arguments(workspace: Services, keys: Keys, path: str,
                                              params: dict[str, str]) -> None:
    alice = signed_in(workspace, keys.admin)
    page = alice.get(path, params=params)
    assert page.status_code == 400, (path, params, page.status_code)
    assert "INVALID_ARGUMENT" in page.text and "Traceback" not in page.text
