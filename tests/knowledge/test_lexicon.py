"""The in-memory lexical index: the engine's ranking, kept in step with ingests and deletes in this process and in
others, hostile queries answered cleanly, and its cap honoured."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from convener.api.errors import InvalidArgument
from convener.auth.caller import LOCAL_USER
from convener.config import Settings
from convener.knowledge import retrieval
from convener.knowledge.ingest import IngestPlan
from convener.knowledge.lexicon import Connect, LexicalIndex, read_generation
from convener.knowledge.models import SearchDocumentsResponse
from convener.knowledge.service import KnowledgeService, _stored_chunk
from convener.knowledge.text import query_terms
from convener.services import Services
from convener.store.database import Database
from tests.conftest import empty_database
from tests.knowledge.conftest import BASE_URL, name_of

QUERIES = ["install quill on linux", "quill's backup", "doesn't start", "it's the server's port", "backup restore", "log level debug", "storage quota gigabytes",
           "certificate upgrade connections", "quill", "brew homebrew upgrade", "data folder server"]


def _search(knowledge: KnowledgeService, query: str, size: int = 10, token: str | None = None,
            filter_text: str | None = None) -> tuple[list[tuple[str, str]], str | None]:
    page = knowledge.search(query, size, token, filter_text, LOCAL_USER, mode="lexical")
    return [(chunk.parent, chunk.id) for chunk in page.results], page.next_page_token


def _engine(knowledge: KnowledgeService, query: str, limit: int = 50) -> list[retrieval.Ranked]:
    with knowledge.database.reading() as connection:
        return retrieval.lexical(connection, query_terms(query), None, limit)


def _index(knowledge: KnowledgeService, query: str, limit: int = 50) -> list[retrieval.Ranked]:
    with knowledge.database.reading() as connection:
        return knowledge._lexical(connection, query_terms(query), None, limit)


def test_the_index_answers_and_on_sqlite_ranks_as_fts5_does(services: Services, docs: Path) -> None:
    knowledge = services.knowledge
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    for query in QUERIES:
        mine, engine = _index(knowledge, query), _engine(knowledge, query)
        assert knowledge.lexicon.indexed_chunks > 0
        assert {r.row_id for r in mine} == {r.row_id for r in engine}, query  # the same chunks match
        if services.database.dialect == "sqlite":
            assert [r.row_id for r in mine] == [r.row_id for r in engine], query
            assert [r.score for r in mine] == pytest.approx([r.score for r in engine], rel=1e-9), query
    assert _search(knowledge, "storage quota")[0][0][0] == name_of("admin/configuration.html")


def test_pages_of_the_index_follow_one_another(services: Services, docs: Path) -> None:
    knowledge = services.knowledge
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    whole, _ = _search(knowledge, "quill server backup install", size=100)
    paged: list[tuple[str, str]] = []
    token: str | None = None
    while True:
        page, token = _search(knowledge, "quill server backup install", size=1, token=token)
        paged.extend(page)
        if token is None:
            break
    assert len(whole) == 4  # every chunk of the corpus
    assert paged == whole


def test_a_filter_restricts_the_index_results(services: Services, docs: Path, tmp_path: Path) -> None:
    knowledge = services.knowledge
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    other = tmp_path / "roots" / "other"
    other.mkdir(parents=True)
    (other / "quill.md").write_text("# Quill elsewhere\n\nQuill backup notes from another source.\n")
    knowledge.ingest(IngestPlan.make(other, "https://other.example/"))
    everything, _ = _search(knowledge, "quill backup")
    only, _ = _search(knowledge, "quill backup", filter_text='data_source = "other.example"')
    assert {parent for parent, _ in everything} > {parent for parent, _ in only}
    assert {parent for parent, _ in only} == {"documents/other.example/quill.md"}


def test_ingest_reingest_and_delete_are_seen_at_once(services: Services, docs: Path) -> None:
    knowledge = services.knowledge
    assert _search(knowledge, "zeppelin")[0] == []  # builds the (empty) index first
    (docs / "airship.md").write_text("# Airships\n\nA zeppelin floats on hydrogen.\n")
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    assert [parent for parent, _ in _search(knowledge, "zeppelin")[0]] == [name_of("airship.md")]

    (docs / "airship.md").write_text("# Airships\n\nA dirigible floats on helium.\n")
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    assert _search(knowledge, "zeppelin")[0] == []
    assert [parent for parent, _ in _search(knowledge, "dirigible")[0]] == [name_of("airship.md")]

    knowledge.delete_documents([name_of("airship.md")], None)
    assert _search(knowledge, "dirigible")[0] == []

    (docs / "airship.md").unlink()
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    assert _search(knowledge, "quill")[0]
    knowledge.delete_documents(None, "docs.quill.example")
    assert _search(knowledge, "quill")[0] == []


def test_another_process_ingest_is_seen_after_the_staleness_bound(settings: Settings, docs: Path) -> None:
    first, second = Services.open(settings), Services.open(settings)
    try:
        first.knowledge.lexicon = LexicalIndex(check_interval=0.3)
        first.knowledge.ingest(IngestPlan.make(docs, BASE_URL))
        assert _search(first.knowledge, "zeppelin")[0] == []
        (docs / "airship.md").write_text("# Airships\n\nA zeppelin floats on hydrogen.\n")
        with first.database.reading() as connection:
            before = read_generation(connection)
        second.knowledge.ingest(IngestPlan.make(docs, BASE_URL))
        with first.database.reading() as connection:
            assert read_generation(connection) > before
        time.sleep(0.4)
        assert [parent for parent, _ in _search(first.knowledge, "zeppelin")[0]] == [name_of("airship.md")]
        second.knowledge.delete_documents([name_of("airship.md")], None)
        time.sleep(0.4)
        assert _search(first.knowledge, "zeppelin")[0] == []
    finally:
        first.close()
        second.close()


def test_hostile_queries_answer_cleanly(services: Services, docs: Path) -> None:
    knowledge = services.knowledge
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    for query in ["", "   "]:
        with pytest.raises(InvalidArgument):
            knowledge.search(query, 10, None, None, LOCAL_USER, mode="lexical")
    with pytest.raises(InvalidArgument):
        knowledge.search(" ".join(["word"] * 10_000), 10, None, None, LOCAL_USER, mode="lexical")
    many = " ".join(f"w{index}" for index in range(120))  # as many distinct words as the length limit allows
    assert _search(knowledge, many)[0] == []
    assert _search(knowledge, many + " quill")[0]
    assert _search(knowledge, "?!* -- \"\" '' () NEAR OR AND : ^ ~ {}")[0] == []
    # Words FTS5 cuts in two are phrases (no chunk says "quill's"); PostgreSQL drops the "s" as a stopword.
    assert bool(_search(knowledge, "quill's user's")[0]) == (services.database.dialect == "postgresql")
    for query in ["quill's", "server's quota", "don't upgrade"]:
        assert [r.row_id for r in _index(knowledge, query)] == [r.row_id for r in _engine(knowledge, query)] \
            or services.database.dialect == "postgresql", query
    for query in ["日本語のドキュメント", "Ünïcödé ñandú", "😀 quill 🚀", "\u200b\u202e quota", "ﬁle ǆ"]:
        results, _ = _search(knowledge, query)
        assert isinstance(results, list)
    assert _search(knowledge, "😀 quota 🚀")[0][0][0] == name_of("admin/configuration.html")


def test_over_its_cap_the_index_steps_aside_for_the_engine(services: Services, docs: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    knowledge = services.knowledge
    knowledge.lexicon = LexicalIndex(max_chunks=2)
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    with caplog.at_level(logging.WARNING, logger="convener.knowledge.lexicon"):
        results, _ = _search(knowledge, "storage quota")
        _search(knowledge, "backup")
    assert results[0][0] == name_of("admin/configuration.html")
    assert knowledge.lexicon.indexed_chunks == 0
    assert sum("exceed the in-memory index's cap of 2" in record.getMessage() for record in caplog.records) == 1
    with knowledge.database.reading() as connection:
        assert knowledge.lexicon.search(Connect.given(connection), ["quota"], None, 10) is None


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_upgrading_a_store_of_0008_keeps_its_chunks_searchable(backend: str, tmp_path: Path) -> None:
    from tests.conftest import POSTGRES_URL
    if backend == "postgresql" and not POSTGRES_URL:
        pytest.skip("no PostgreSQL for the tests")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "airship.md").write_text("# Airships\n\nA zeppelin floats on hydrogen.\n")
    with empty_database(backend, tmp_path) as url:
        database = Database(url)
        try:
            database.migrate("0008")
            settings = Settings(data_dir=tmp_path / "data", database_url=url, allow_anonymous=False,
                                knowledge_roots=(tmp_path,), knowledge_embeddings="off")
            with database.transaction() as connection:
                connection.exec_driver_sql(
                    "INSERT INTO knowledge_data_sources (name, base_url, location, create_time_us, update_time_us)"
                    " VALUES ('air.example', 'https://air.example/', '/x', 0, 0)")
                connection.exec_driver_sql(
                    "INSERT INTO knowledge_documents (name, uri, data_source, source_path, title, description,"
                    " content, content_hash, content_length_bytes, update_time_us) VALUES ('documents/air.example/a.md',"
                    " 'https://air.example/a.md', 'air.example', 'a.md', 'Airships', '', 'A zeppelin floats.', 'h',"
                    " 18, 0)")
                connection.exec_driver_sql(
                    "INSERT INTO knowledge_chunks (doc_id, chunk_index, heading, content, start_byte, end_byte)"
                    " SELECT doc_id, 0, 'Airships', 'A zeppelin floats.', 0, 18 FROM knowledge_documents")
            database.migrate()
            with database.reading() as connection:
                assert read_generation(connection) == 0
            services = Services.open(settings)
            try:
                assert [p for p, _ in _search(services.knowledge, "zeppelin")[0]] == ["documents/air.example/a.md"]
                assert services.knowledge.lexicon.indexed_chunks == 1
            finally:
                services.close()
        finally:
            database.dispose()


def _fresh_index(knowledge: KnowledgeService, **options: float) -> LexicalIndex:
    """A lexicon with other options, wired to the ingests of this service as the service's own is."""
    knowledge.lexicon = LexicalIndex(**options)  # type: ignore[arg-type]
    knowledge.ingestor.on_change = knowledge.lexicon.invalidate
    return knowledge.lexicon


def _other_source(knowledge: KnowledgeService, roots: Path) -> None:
    other = roots / "other"
    other.mkdir(parents=True, exist_ok=True)
    (other / "quill.md").write_text("# Quill elsewhere\n\nQuill backup notes from another source.\n")
    knowledge.ingest(IngestPlan.make(other, "https://other.example/"))


def test_a_warm_search_touches_no_connection(services: Services, docs: Path) -> None:
    knowledge = services.knowledge
    _fresh_index(knowledge, check_interval=3600.0)
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    checkouts: list[object] = []
    with services.database.listening("checkout", lambda *args: checkouts.append(args)):
        _warm_searches(knowledge, checkouts)


def _warm_searches(knowledge: KnowledgeService, checkouts: list[object]) -> None:
    filtered = 'data_source = "docs.quill.example" AND NOT uri : "faq"'
    first = [_search(knowledge, "quill backup install"), _search(knowledge, "quota", filter_text=filtered)]
    assert checkouts  # the index was built, the words tokenized
    checkouts.clear()
    again = [_search(knowledge, "quill backup install"), _search(knowledge, "quota", filter_text=filtered),
             _search(knowledge, "install quota", filter_text='uri = "https://nowhere.example/*"')]
    assert checkouts == []
    assert again[:2] == first and again[2] == ([], None)
    knowledge.delete_documents([name_of("admin/configuration.html")], None)
    assert _search(knowledge, "quota", filter_text=filtered)[0] == []  # an in-process write is seen at once


def test_stored_fields_are_the_store_rows(services: Services, docs: Path) -> None:
    """A page from the index's stored fields is, field for field, what fetching its rows builds."""
    knowledge = services.knowledge
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    for query in QUERIES:
        with knowledge.database.reading() as connection:
            hits = knowledge.lexicon.search(Connect.given(connection), query_terms(query), None, 20)
            assert hits is not None
            fetched = knowledge._chunks(connection, [retrieval.Ranked(hit.row_id, hit.score) for hit in hits])
        stored = [_stored_chunk(hit, hit.score) for hit in hits]
        assert [chunk.to_json() for chunk in stored] == [chunk.to_json() for chunk in fetched], query
    page = knowledge.search("storage quota", 3, None, None, LOCAL_USER, mode="lexical")
    response = SearchDocumentsResponse.model_validate(
        SearchDocumentsResponse(results=page.results, next_page_token=page.next_page_token).to_json())
    assert response.results and response.results[0].document and response.results[0].document.title


def test_filters_in_memory_agree_with_the_engine(services: Services, docs: Path, tmp_path: Path) -> None:
    knowledge = services.knowledge
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    _other_source(knowledge, tmp_path / "roots")
    engine = KnowledgeService(knowledge.database, knowledge.tokens, gate=knowledge.gate)
    engine.lexicon = LexicalIndex(max_chunks=0)
    everything = "quill server backup install quota certificate"
    for filter_text in ['data_source = "other.example"', 'data_source != "other.example"', 'uri : "QUILL"',
                        'uri : "quill"', 'uri = "https://docs.quill.example/admin/*"', 'content_length_bytes > 300',
                        'update_time > "2000-01-01T00:00:00Z"', 'update_time < "2000-01-01T00:00:00Z"',
                        'NOT (data_source = "other.example" OR uri : "faq")', 'uri = "*.rst"']:
        mine = {parent for parent, _ in _search(knowledge, everything, size=100, filter_text=filter_text)[0]}
        theirs = {parent for parent, _ in _search(engine, everything, size=100, filter_text=filter_text)[0]}
        assert engine.lexicon.indexed_chunks == 0
        assert mine == theirs, filter_text
    # LIKE is case-sensitive on both engines (the store makes SQLite's so).
    assert _search(knowledge, everything, filter_text='uri : "QUILL"')[0] == []
    assert _search(knowledge, everything, filter_text='uri : "quill"')[0]


def test_a_deleted_data_source_is_gone_at_once_and_in_other_processes_within_the_bound(
        settings: Settings, docs: Path, tmp_path: Path) -> None:
    first, second = Services.open(settings), Services.open(settings)
    only_other = 'data_source = "other.example"'
    try:
        _fresh_index(first.knowledge, check_interval=0.3)
        first.knowledge.ingest(IngestPlan.make(docs, BASE_URL))
        assert _search(first.knowledge, "quill backup", filter_text=only_other)[0] == []  # filter kept: no documents
        _other_source(second.knowledge, tmp_path / "roots")  # a new data source, from another process
        time.sleep(0.4)
        assert [p for p, _ in _search(first.knowledge, "quill backup", filter_text=only_other)[0]] == [
            "documents/other.example/quill.md"]
        second.knowledge.delete_documents(None, "other.example")
        time.sleep(0.4)
        assert _search(first.knowledge, "quill backup", filter_text=only_other)[0] == []
        assert _search(first.knowledge, "elsewhere")[0] == []
        _other_source(first.knowledge, tmp_path / "roots")
        assert _search(first.knowledge, "elsewhere", filter_text=only_other)[0]
        first.knowledge.delete_documents(None, "other.example")  # this process: at once, no wait
        assert _search(first.knowledge, "elsewhere", filter_text=only_other)[0] == []
        assert _search(first.knowledge, "elsewhere")[0] == []
    finally:
        first.close()
        second.close()


def test_over_its_stored_bytes_cap_the_index_steps_aside(services: Services, docs: Path) -> None:
    knowledge = services.knowledge
    _fresh_index(knowledge, max_stored_bytes=100)
    knowledge.ingest(IngestPlan.make(docs, BASE_URL))
    assert _search(knowledge, "storage quota")[0][0][0] == name_of("admin/configuration.html")
    assert knowledge.lexicon.indexed_chunks == 0
    _fresh_index(knowledge)
    assert _search(knowledge, "storage quota")[0][0][0] == name_of("admin/configuration.html")
    assert knowledge.lexicon.size.stored_bytes > 100 and knowledge.lexicon.indexed_chunks > 0
