"""The knowledge tools end to end through the MCP client: ingest, search, get, answer, administration."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client

from convener.knowledge.answers import NOT_FOUND, OFFLINE_NOTE
from tests.e2e.conftest import error_text, structured
from tests.knowledge.conftest import BASE_URL, CORPUS, name_of

pytestmark = pytest.mark.anyio

ANSWER_SCHEMA = {
    # The seed's AnswerQueryResponse, and nothing else.
    "type": "object",
    "properties": {"answerText": {"type": "string"}, "references": {"type": "array", "items": {"type": "string"}}},
    "required": ["answerText"],  # proto3 JSON omits an empty references list
    "additionalProperties": False,
}


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    return structured(await client.call_tool(tool, arguments))


async def failure(client: Client, tool: str, code: str, **arguments: Any) -> str:
    return error_text(await client.call_tool(tool, arguments), code)


async def ingest(client: Client, path: Path, **options: Any) -> dict[str, Any]:
    operation = await call(client, "ingest_documents", path=str(path), baseUrl=BASE_URL, **options)
    assert operation["done"] is True, operation
    assert "error" not in operation, operation
    response = operation["response"]
    assert response["@type"].endswith("IngestSummary")
    return dict(response)


async def search(client: Client, query: str, **options: Any) -> dict[str, Any]:
    return await call(client, "search_documents", query=query, **options)


# ---------------------------------------------------------------- ingest


async def test_a_folder_is_ingested_with_one_document_per_supported_file(client: Client, docs: Path) -> None:
    summary = await ingest(client, docs)

    assert (summary["filesSeen"], summary["added"], summary["unchanged"]) == (4, 4, 0)
    assert summary.get("problems", []) == []
    sources = await call(client, "list_data_sources")
    assert [(s["name"], s["documentCount"]) for s in sources["dataSources"]] == [("docs.quill.example", "4")]


async def test_ingest_reports_progress_notifications(client: Client, docs: Path) -> None:
    seen: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    result = await client.call_tool("ingest_documents", {"path": str(docs), "baseUrl": BASE_URL},
                                    progress_callback=progress)

    assert structured(result)["done"] is True
    assert seen and seen[-1] == 4.0


async def test_an_archive_is_ingested_like_the_folder_it_holds(client: Client, docs: Path, tmp_path: Path) -> None:
    archive = tmp_path / "roots" / "docs.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path, text in CORPUS.items():
            zipped.writestr(path, text)
    tarball = tmp_path / "roots" / "docs.tar.gz"
    with tarfile.open(tarball, "w:gz") as tarred:
        tarred.add(docs / "install.md", arcname="install.md")

    zipped_summary = await ingest(client, archive, dataSource="zipped")
    tarred_summary = await call(client, "ingest_documents", path=str(tarball), baseUrl="https://tar.example/")

    assert zipped_summary["added"] == 4
    assert tarred_summary["response"]["added"] == 1
    got = await call(client, "get_documents", names=[name_of("install.md"), "documents/tar.example/install.md"])
    assert [d["title"] for d in got["documents"]] == ["Installing Quill", "Installing Quill"]


async def test_re_ingest_skips_unchanged_files_reindexes_edits_and_deletes_removed_files(
        client: Client, docs: Path) -> None:
    await ingest(client, docs)
    (docs / "faq.txt").unlink()
    (docs / "install.md").write_text(CORPUS["install.md"].replace("7410", "8123"), encoding="utf-8")

    summary = await ingest(client, docs)

    assert (summary["unchanged"], summary["updated"], summary["removed"], summary["added"]) == (2, 1, 1, 0)
    assert "8123" in (await search(client, "port"))["results"][0]["content"]
    await failure(client, "get_documents", "NOT_FOUND", names=[name_of("faq.txt")])


async def test_keep_removed_keeps_documents_whose_files_are_gone(client: Client, docs: Path) -> None:
    await ingest(client, docs)
    (docs / "faq.txt").unlink()

    summary = await ingest(client, docs, keepRemoved=True)

    assert summary["removed"] == 0
    assert (await call(client, "get_documents", names=[name_of("faq.txt")]))["documents"][0]["title"]


async def test_unreadable_files_are_reported_by_path_and_the_rest_is_ingested(client: Client, docs: Path) -> None:
    (docs / "latin1.md").write_bytes("Caf\xe9 cr\xe8me".encode("latin-1"))
    (docs / "binary.txt").write_bytes(b"\x00\x01\x02" * 100)

    summary = await ingest(client, docs)

    problems = {p["path"]: p["reason"] for p in summary["problems"]}
    assert set(problems) == {"latin1.md", "binary.txt"}
    assert "UTF-8" in problems["latin1.md"]
    assert summary["added"] == 4


async def test_ingest_reads_only_inside_the_configured_roots(client: Client, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe launch code is 0000.\n")

    text = await failure(client, "ingest_documents", "PERMISSION_DENIED", path=str(outside))
    assert "CONVENER_KNOWLEDGE_ROOTS" in text
    await failure(client, "ingest_documents", "PERMISSION_DENIED", path=str(tmp_path / "roots" / ".." / "elsewhere"))
    assert (await search(client, "launch code")).get("results", []) == []


async def test_hostile_archives_are_reported_member_by_member_and_nothing_escapes(
        client: Client, tmp_path: Path) -> None:
    (tmp_path / "roots").mkdir()
    archive = tmp_path / "roots" / "hostile.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("good.md", "# Good\n\nThis page is fine.\n")
        zipped.writestr("../escape.md", "# Escape\n\nWritten outside.\n")
        zipped.writestr("/etc/absolute.md", "# Absolute\n")
        zipped.writestr("bomb.txt", b"\0" * (60 * 1024 * 1024))
    tarball = tmp_path / "roots" / "links.tar"
    with tarfile.open(tarball, "w") as tarred:
        link = tarfile.TarInfo("passwd.md")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tarred.addfile(link)

    summary = await ingest(client, archive, dataSource="hostile")
    linked = await ingest(client, tarball, dataSource="links")

    assert summary["added"] == 1
    assert {p["path"] for p in summary["problems"]} >= {"bomb.txt"}
    assert len(summary["problems"]) == 3
    assert linked.get("added", 0) == 0 and len(linked["problems"]) == 1
    assert not (tmp_path / "escape.md").exists() and not (tmp_path / "roots" / "escape.md").exists()
    assert (await search(client, "root")).get("results", []) == []


async def test_a_corrupt_archive_is_invalid_and_leaves_no_data_source(client: Client, tmp_path: Path) -> None:
    (tmp_path / "roots").mkdir()
    broken = tmp_path / "roots" / "broken.zip"
    broken.write_bytes(b"PK\x03\x04" + b"\xff" * 200)

    await failure(client, "ingest_documents", "INVALID_ARGUMENT", path=str(broken), baseUrl=BASE_URL)
    await failure(client, "ingest_documents", "INVALID_ARGUMENT", path=str(tmp_path / "roots" / "missing"))

    assert (await call(client, "list_data_sources")).get("dataSources", []) == []


async def test_paths_no_file_system_holds_are_invalid(client: Client, tmp_path: Path) -> None:
    for path in (str(tmp_path / "roots" / "a\x00b"), "~no-such-user-here/docs", str(tmp_path / ("x" * 5000))):
        error_text(await client.call_tool("ingest_documents", {"path": path}))


async def test_a_bad_base_url_is_invalid(client: Client, docs: Path) -> None:
    for base_url in ("not a url", "https://docs.example/?q=1", "ftp://"):
        await failure(client, "ingest_documents", "INVALID_ARGUMENT", path=str(docs), baseUrl=base_url)


# ---------------------------------------------------------------- search


async def test_search_finds_the_section_that_answers_with_its_document(client: Client, docs: Path) -> None:
    await ingest(client, docs)

    results = (await search(client, "how do I limit storage per workspace?"))["results"]

    best = results[0]
    assert best["parent"] == name_of("admin/configuration.html")
    assert "quota_gb" in best["content"]
    assert best["document"] == {
        "name": name_of("admin/configuration.html"), "uri": BASE_URL + "admin/configuration.html",
        "dataSource": "docs.quill.example", "title": "Configuring Quill", "description": "Settings of the Quill server.",
        "updateTime": best["document"]["updateTime"], "view": "DOCUMENT_VIEW_BASIC",
    }
    assert best["relevanceScore"] == 1.0
    assert all(0.0 <= r["relevanceScore"] <= 1.0 for r in results)
    scores = [r["relevanceScore"] for r in results]
    assert scores == sorted(scores, reverse=True)


async def test_html_boilerplate_is_not_indexed(client: Client, docs: Path) -> None:
    await ingest(client, docs)

    for words in ("pricing menu", "analytics beacon", "cookie preferences"):
        assert (await search(client, words)).get("results", []) == [], words


async def test_search_pages_through_every_match_once(client: Client, docs: Path) -> None:
    await ingest(client, docs)
    everything = (await search(client, "quill", pageSize=100))["results"]

    paged: list[str] = []
    token = None
    while True:
        page = await search(client, "quill", pageSize=1, **({"pageToken": token} if token else {}))
        assert len(page["results"]) <= 1
        paged += [f'{r["parent"]}#{r["id"]}' for r in page["results"]]
        token = page.get("nextPageToken")
        if not token:
            break

    assert len(everything) == 4  # each small page is one chunk
    assert paged == [f'{r["parent"]}#{r["id"]}' for r in everything]


async def test_a_page_token_only_continues_its_own_query(client: Client, docs: Path) -> None:
    await ingest(client, docs)
    token = (await search(client, "quill", pageSize=1))["nextPageToken"]

    await failure(client, "search_documents", "INVALID_ARGUMENT", query="backup", pageToken=token)
    await failure(client, "search_documents", "INVALID_ARGUMENT", query="quill", pageToken=token + "x")
    await failure(client, "search_documents", "INVALID_ARGUMENT", query="quill", pageToken=token,
                  filter='data_source = "docs.quill.example"')


async def test_search_filters_on_the_documents_fields(client: Client, docs: Path, tmp_path: Path) -> None:
    await ingest(client, docs)
    other = tmp_path / "roots" / "other"
    other.mkdir()
    (other / "quill.md").write_text("# Quill elsewhere\n\nQuill is also a feather pen.\n")
    await call(client, "ingest_documents", path=str(other), baseUrl="https://pens.example/")

    def parents(page: dict[str, Any]) -> set[str]:
        return {r["parent"] for r in page.get("results", [])}

    everything = parents(await search(client, "quill", pageSize=100))
    assert "documents/pens.example/quill.md" in everything
    assert parents(await search(client, "quill", pageSize=100, filter='data_source = "pens.example"')) == {
        "documents/pens.example/quill.md"}
    assert parents(await search(client, "quill", pageSize=100, filter='data_source != "pens.example"')) == \
        everything - {"documents/pens.example/quill.md"}
    assert parents(await search(client, "quill", pageSize=100,
                                filter=f'uri = "{BASE_URL}faq.txt" OR uri = "{BASE_URL}install.md"')) == {
        name_of("faq.txt"), name_of("install.md")}
    assert parents(await search(client, "quill", pageSize=100, filter="content_length_bytes < 100")) == {
        "documents/pens.example/quill.md"}
    assert parents(await search(client, "quill", pageSize=100, filter='update_time > "2000-01-01T00:00:00Z"')) == \
        everything
    assert parents(await search(client, "quill", pageSize=100, filter='update_time < "2000-01-01T00:00:00Z"')) == set()
    await failure(client, "search_documents", "INVALID_ARGUMENT", query="quill", filter='title = "x"')
    await failure(client, "search_documents", "INVALID_ARGUMENT", query="quill", filter='data_source = ')


@pytest.mark.parametrize("query", ['"', "quill*", "quill NEAR backup", "quill OR", "NOT", "content:quill",
                                   "^quill", "(quill", "quill AND -", "'; DROP TABLE knowledge_chunks; --",
                                   "quill:*", "!!!", "&|"])
async def test_search_syntax_in_a_query_is_taken_as_text(client: Client, docs: Path, query: str) -> None:
    await ingest(client, docs)

    page = await search(client, query)

    assert all(r["parent"].startswith("documents/") for r in page.get("results", []))
    assert (await search(client, "backup"))["results"]


async def test_empty_long_and_negative_requests_are_invalid(client: Client, docs: Path) -> None:
    await ingest(client, docs)

    for tool in ("search_documents", "answer_query"):
        assert "query" in await failure(client, tool, "INVALID_ARGUMENT", query="")
        assert "query" in await failure(client, tool, "INVALID_ARGUMENT", query="   ")
        assert "500" in await failure(client, tool, "INVALID_ARGUMENT", query="quill " * 200_000)
    await failure(client, "search_documents", "INVALID_ARGUMENT", query="quill", pageSize=-1)
    assert len((await search(client, "quill", pageSize=1000))["results"]) <= 100


async def test_a_query_of_only_common_words_finds_nothing_rather_than_everything(client: Client, docs: Path) -> None:
    await ingest(client, docs)

    assert (await search(client, "how do I do it?")).get("results", []) == []


# ---------------------------------------------------------------- documents


async def test_get_documents_returns_whole_markdown_in_request_order(client: Client, docs: Path) -> None:
    await ingest(client, docs)
    names = [name_of("faq.txt"), name_of("admin/backups.rst"), name_of("install.md")]

    documents = (await call(client, "get_documents", names=names))["documents"]

    assert [d["name"] for d in documents] == names
    backups = documents[1]
    assert backups["view"] == "DOCUMENT_VIEW_CONTENT"
    assert backups["title"] == "Backing up Quill"
    assert "quill backup --to /mnt/backups" in backups["content"]
    assert int(backups["contentLengthBytes"]) == len(backups["content"].encode())
    install = documents[2]
    assert not install["content"].startswith("---")  # front matter is metadata, not content
    assert install["description"] == "How to install the Quill server."


async def test_get_documents_checks_its_names(client: Client, docs: Path) -> None:
    await ingest(client, docs)

    missing = await failure(client, "get_documents", "NOT_FOUND", names=[name_of("install.md"), name_of("nope.md")])
    assert name_of("nope.md") in missing
    assert "20" in await failure(client, "get_documents", "INVALID_ARGUMENT", names=[name_of("install.md")] * 21)
    await failure(client, "get_documents", "INVALID_ARGUMENT", names=[])
    for bad in ("install.md", "documents/", "documents/a b", "documents/x\n", "documents/" + "a" * 600):
        await failure(client, "get_documents", "INVALID_ARGUMENT", names=[bad])


# ---------------------------------------------------------------- answers


async def test_an_answer_quotes_the_documents_it_references(client: Client, docs: Path) -> None:
    await ingest(client, docs)

    answer = await call(client, "answer_query", query="What is the default storage quota per workspace?")

    jsonschema.validate(answer, ANSWER_SCHEMA)
    assert answer["answerText"].startswith(OFFLINE_NOTE)
    assert "The default quota is 50 gigabytes." in answer["answerText"]
    assert answer["references"][0] == name_of("admin/configuration.html")
    quoted = answer["answerText"][len(OFFLINE_NOTE):].strip()
    contents = {d["name"]: d["content"] for d in (await call(
        client, "get_documents", names=answer["references"]))["documents"]}
    assert all(any(part in content for content in contents.values()) for part in _sentences(quoted))


async def test_citations_give_byte_ranges_in_the_answer_and_the_documents(client: Client, docs: Path) -> None:
    await ingest(client, docs)

    answer = await call(client, "answer_query", query="How do I restore a backup?", includeCitations=True)

    text = answer["answerText"].encode()
    documents = {d["name"]: d["content"].encode() for d in (await call(
        client, "get_documents", names=answer["references"]))["documents"]}
    assert answer["citations"]
    for citation in answer["citations"]:
        sentence = text[citation["startByte"]:citation["endByte"]]
        for source in citation["sources"]:
            assert documents[source["document"]][source["startByte"]:source["endByte"]] == sentence
    assert b"quill restore" in text


async def test_a_question_the_documents_do_not_cover_is_not_found(client: Client, docs: Path) -> None:
    await ingest(client, docs)

    for query in ("How do I configure a Kubernetes ingress controller?", "What is the capital of France?"):
        answer = await call(client, "answer_query", query=query)
        assert answer == {"answerText": NOT_FOUND}, query


async def test_an_empty_corpus_answers_not_found(client: Client) -> None:
    assert await call(client, "answer_query", query="How do I install Quill?") == {"answerText": NOT_FOUND}


# ---------------------------------------------------------------- administration


async def test_delete_documents_by_name_and_by_data_source(client: Client, docs: Path) -> None:
    await ingest(client, docs)

    assert (await call(client, "delete_documents", names=[name_of("faq.txt")]))["deletedCount"] == "1"
    await failure(client, "get_documents", "NOT_FOUND", names=[name_of("faq.txt")])
    assert (await call(client, "delete_documents", dataSource="docs.quill.example"))["deletedCount"] == "3"
    assert (await call(client, "list_data_sources")).get("dataSources", []) == []
    assert (await search(client, "quill")).get("results", []) == []
    await failure(client, "delete_documents", "NOT_FOUND", dataSource="docs.quill.example")
    await failure(client, "delete_documents", "INVALID_ARGUMENT")
    await failure(client, "delete_documents", "INVALID_ARGUMENT", names=["x"])


def _sentences(text: str) -> list[str]:
    import re

    return [part for part in re.split(r"(?<=[.!?])\s+", text) if part]
