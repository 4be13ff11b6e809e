"""The knowledge service: search chunks, get documents, answer questions, and administer the corpus.

The corpus is shared by every caller of an installation (documentation is not per user); who may ingest
and delete is decided by scopes at the tool layer, and which folders the ingest tool may read by
``CONVENER_KNOWLEDGE_ROOTS``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Select, bindparam, delete, func, select
from sqlalchemy.sql.elements import ColumnElement

from convener.api.errors import InvalidArgument, NotFound
from convener.api.filtering import FieldType, FilterField, compile_filter
from convener.api.paging import PageTokens, resolve_page_size, split_page
from convener.api.protojson import Timestamp
from convener.auth.caller import Caller
from convener.knowledge import retrieval
from convener.knowledge.answers import Answer, Evidence, Passage, extractive_answer, generated_answer
from convener.knowledge.embeddings import Embedder
from convener.knowledge.lexicon import Connect, Hit, LexicalIndex, bump_generation
from convener.knowledge.ingest import Ingestor, IngestPlan, Progress, StopRequested
from convener.knowledge.models import (
    DataSource,
    Document,
    DocumentChunk,
    DocumentView,
    IngestSummary,
)
from convener.knowledge.names import check_name
from convener.knowledge.scope import FAMILY_SIZE, compounds, family, holds_phrase, name_runs
from convener.knowledge.tables import chunks, data_sources, documents
from convener.knowledge.text import MAX_QUERY_CHARACTERS, query_terms, stem
from convener.llm.base import ModelProvider
from convener.outside.gate import Gate
from convener.store.database import Database

ModelT = TypeVar("ModelT", DocumentChunk, Document)

DEFAULT_PAGE_SIZE = 5
MAX_PAGE_SIZE = 100
MAX_NAMES = 20
MAX_DELETE_NAMES = 1000
ANSWER_PASSAGES = 6
"""Passages a model is given to answer from."""
ANSWER_WINDOW = 20
"""Passages the offline answer weighs: their pages compete on how much of the question each supports."""
RARITY_DEPTH = 200
"""How many of a word's chunks are counted for its rarity; a word in more is common either way."""

FILTER_FIELDS = {
    "data_source": FilterField(documents.c.data_source, FieldType.STRING),
    "uri": FilterField(documents.c.uri, FieldType.STRING),
    "update_time": FilterField(documents.c.update_time_us, FieldType.TIMESTAMP),
    "content_length_bytes": FilterField(documents.c.content_length_bytes, FieldType.INTEGER),
}
"""Google's filter fields of SearchDocumentChunks, over the chunks' documents."""


@dataclass(frozen=True)
class SearchPage:
    results: list[DocumentChunk]
    next_page_token: str | None


class KnowledgeService:
    def __init__(self, database: Database, tokens: PageTokens, embedder: Embedder | None = None,
                 provider: Callable[[], ModelProvider | None] = lambda: None,
                 *, gate: Gate) -> None:
        self.database = database
        self.tokens = tokens
        self.embedder = embedder
        self.vectors = retrieval.VectorIndex(embedder) if embedder is not None else None
        self.provider = provider
        self.gate = gate
        self.lexicon = LexicalIndex()
        self.ingestor = Ingestor(database, embedder, on_change=self.lexicon.invalidate)

    # -- search --------------------------------------------------------------------------------------

    def search(self, query: str, page_size: int | None, page_token: str | None, filter_text: str | None,
               caller: Caller, mode: str = "auto") -> SearchPage:
        """Chunks for ``query``, most relevant first. ``mode`` is ``auto`` (fused when the index has vectors,
        else lexical), ``lexical``, ``semantic`` or ``fused``; the last three are for measuring."""
        terms = _check_query(query)
        size = resolve_page_size(page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        condition = compile_filter(filter_text, FILTER_FIELDS)
        request = {"method": "search_documents", "query": query, "filter": filter_text or "", "mode": mode}
        position = self.tokens.position(page_token, query=request, caller=caller.principal) if page_token else None
        lexical_only = mode == "lexical" or (mode == "auto" and self.vectors is None)
        opener = self._statements if lexical_only else self.database.reading
        with Connect(self.database.dialect, opener) as connect:
            mode = self._mode(connect, mode)
            if position is not None and len(position) != (3 if mode == "lexical" else 2):
                # Issued while the index ranked the other way (vectors were added or removed since).
                raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
            if mode == "lexical":
                after = (float(position[0]), int(position[1])) if position else None  # type: ignore[arg-type]
                hits = self.lexicon.search(connect, terms, condition, size + 1, after, filter_text) if terms else []
                ranked: Sequence[Hit | retrieval.Ranked] = hits if hits is not None else retrieval.lexical(
                    connect(), terms, condition, size + 1, after)
                top = float(position[2]) if position else (ranked[0].score if ranked else 1.0)  # type: ignore[arg-type]
                page, more = split_page(list(ranked), size)
                next_position = [page[-1].score, page[-1].row_id, top] if more else None
                if hits is not None:
                    results = [_stored_chunk(hit, _share(hit.score, top)) for hit in hits[:len(page)]]
                else:
                    results = self._chunks(connect(), [retrieval.Ranked(r.row_id, _share(r.score, top)) for r in page])
            else:
                connection = connect()
                ranked = self._ranking(connection, mode, query, terms, condition, retrieval.FUSION_WINDOW)
                if position:
                    score, row_id = float(position[0]), int(position[1])  # type: ignore[arg-type]
                    ranked = [r for r in ranked if (r.score, -r.row_id) < (score, -row_id)]
                fused, more = split_page(ranked, size)
                next_position = [fused[-1].score, fused[-1].row_id] if more else None
                results = self._chunks(connection, fused)
        token = self.tokens.issue(query=request, caller=caller.principal, position=next_position) \
            if next_position else None
        return SearchPage(results, token)

    @contextmanager
    def _statements(self) -> Iterator[Connection]:
        """For a lexical search, opened only when the search must ask the database (``lexicon.Connect``): with a
        warm index, to check the generation at most once a second. On PostgreSQL a connection without a
        transaction, each statement its own snapshot: BEGIN, SET TRANSACTION and COMMIT would be three more
        round trips around a single statement. (The engine's search, when
        it stands in, counts its words' chunks and scores them in two statements: a write between them shifts
        an IDF a little, never the results' validity.) On SQLite, where a transaction costs no round trip and
        begins read-only only through ``reading``, ``reading``."""
        if self.database.dialect != "postgresql":
            with self.database.reading() as connection:
                yield connection
            return
        with self.database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            yield connection

    def _mode(self, connect: Connect, mode: str) -> str:
        if mode not in ("auto", "lexical", "semantic", "fused"):
            raise InvalidArgument(f"unknown search mode {mode}")
        if mode == "lexical":
            return mode
        has_vectors = self.vectors is not None and self.vectors.has_vectors(connect())
        if mode == "auto":
            return "fused" if has_vectors else "lexical"
        if mode != "lexical" and not has_vectors:
            raise InvalidArgument("semantic search needs the embeddings extra and documents ingested with it")
        return mode

    def _ranking(self, connection: Connection, mode: str, query: str, terms: list[str],
                 condition: ColumnElement[bool] | None, depth: int) -> list[retrieval.Ranked]:
        if mode == "lexical":
            ranked = self._lexical(connection, terms, condition, depth)
            top = ranked[0].score if ranked else 1.0
            return [retrieval.Ranked(r.row_id, _share(r.score, top)) for r in ranked]
        assert self.vectors is not None
        semantic = self.vectors.search(connection, query, condition, depth)
        if mode == "semantic":
            return [retrieval.Ranked(r.row_id, max(0.0, min(1.0, r.score))) for r in semantic]
        return retrieval.fuse([self._lexical(connection, terms, condition, depth), semantic])

    def _lexical(self, connection: Connection, terms: list[str], condition: ColumnElement[bool] | None, limit: int,
                 after: tuple[float, int] | None = None) -> list[retrieval.Ranked]:
        """The in-memory index's ranking, or the engine's when the index cannot answer (see ``lexicon``)."""
        if not terms:
            return []
        hits = self.lexicon.search(Connect.given(connection), terms, condition, limit, after)
        if hits is None:
            return retrieval.lexical(connection, terms, condition, limit, after)
        return [retrieval.Ranked(hit.row_id, hit.score) for hit in hits]

    def _chunks(self, connection: Connection, ranked: Sequence[retrieval.Ranked]) -> list[DocumentChunk]:
        if not ranked:
            return []
        statement = _chunk_rows(len(ranked))
        rows = {row.row_id: row for row in connection.execute(
            statement, {f"row_{index}": r.row_id for index, r in enumerate(ranked)})}
        return [DocumentChunk(parent=rows[r.row_id].name, id=str(rows[r.row_id].chunk_index),
                              content=rows[r.row_id].content, document=_document(rows[r.row_id], DocumentView.DOCUMENT_VIEW_BASIC),
                              relevance_score=round(r.score, 6))
                for r in ranked if r.row_id in rows]

    # -- documents -----------------------------------------------------------------------------------

    def get_documents(self, names: Sequence[str]) -> list[Document]:
        if not names:
            raise InvalidArgument("names is required: give 1 to 20 document names")
        if len(names) > MAX_NAMES:
            raise InvalidArgument(f"names has {len(names)} entries; at most {MAX_NAMES} documents per call")
        for index, name in enumerate(names):
            check_name(name, f"names[{index}]")
        with self.database.reading() as connection:
            rows = {row.name: row for row in connection.execute(
                select(*_basic_columns(), documents.c.content, documents.c.content_length_bytes)
                .where(documents.c.name.in_(set(names))))}
        missing = [name for name in names if name not in rows]
        if missing:
            raise NotFound(f"document {missing[0]} does not exist" + (
                f" (nor {len(missing) - 1} other of the names)" if len(missing) > 1 else ""))
        return [_document(rows[name], DocumentView.DOCUMENT_VIEW_CONTENT) for name in names]

    # -- answers -------------------------------------------------------------------------------------

    def answer(self, query: str) -> Answer:
        terms = _check_query(query)
        with self.database.reading() as connection:
            mode = self._mode(Connect.given(connection), "auto")
            depth = retrieval.FUSION_WINDOW
            similarity: dict[int, float] = {}
            if mode == "lexical":
                ranked = self._ranking(connection, mode, query, terms, None, depth)[:ANSWER_WINDOW]
            else:
                assert self.vectors is not None
                semantic = self.vectors.search(connection, query, None, depth)
                similarity = {r.row_id: r.score for r in semantic}
                ranked = retrieval.fuse([self._lexical(connection, terms, None, depth), semantic])[:ANSWER_WINDOW]
            passages = self._passages(connection, ranked, similarity, query)
            evidence = self._evidence(connection, query, terms)
        provider = self.provider()
        if provider is not None and passages:
            generated = generated_answer(provider, query, passages[:ANSWER_PASSAGES])
            if generated is not None:
                return generated
        return extractive_answer(query, passages, evidence)

    def _evidence(self, connection: Connection, query: str, terms: Sequence[str]) -> Evidence:
        """The IDF of each query word over every chunk, under the answer composer's stem of it, the words
        no chunk holds and those that many do, and the question's names of several words that no chunk holds
        together (hyphenated ones only where the documentation makes its own names that way, ``FAMILY_SIZE``).
        A word's chunks are counted by a lexical search for it alone, up to ``RARITY_DEPTH``: beyond that a word
        is common, and its exact count would not change how little it weighs."""
        total = int(connection.execute(select(func.count()).select_from(chunks)).scalar_one())
        rarity: dict[str, float] = {}
        absent: set[str] = set()
        common: set[str] = set()
        for term in terms:
            frequency = len(self._lexical(connection, [term], None, RARITY_DEPTH))
            idf = math.log(1 + (total - frequency + 0.5) / (frequency + 0.5))
            key = stem(term)
            rarity[key] = max(rarity.get(key, 0.0), idf)
            if not frequency:
                absent.add(key)
            elif frequency >= RARITY_DEPTH:
                common.add(key)
        unheld = [phrase for phrase in name_runs(query, common) if not self._holds(connection, phrase)]
        for parts in compounds(query):
            named_so = len(family(self._texts(connection, parts[:1]), parts[0])) >= FAMILY_SIZE
            if named_so and not self._holds(connection, parts):
                unheld.append(parts)
        return Evidence(rarity, frozenset(absent), frozenset(common), tuple(unheld))

    def _holds(self, connection: Connection, phrase: Sequence[str]) -> bool:
        """Whether a chunk holds ``phrase``'s words together: one holding them all is among the lexical
        search's best for them, so its ``RARITY_DEPTH`` best chunks are read rather than every chunk."""
        texts = self._texts(connection, phrase)
        return any(holds_phrase(text, phrase) for text in texts)

    def _texts(self, connection: Connection, words: Sequence[str]) -> list[str]:
        """The content and heading of the ``RARITY_DEPTH`` chunks a lexical search for ``words`` finds first."""
        ranked = self._lexical(connection, query_terms(" ".join(words)), None, RARITY_DEPTH)
        if not ranked:
            return []
        rows = connection.execute(select(chunks.c.content, chunks.c.heading)
                                  .where(chunks.c.row_id.in_([r.row_id for r in ranked])))
        return [text for row in rows for text in (row.content, row.heading)]

    def _passages(self, connection: Connection, ranked: Sequence[retrieval.Ranked],
                  similarity: dict[int, float], query: str) -> list[Passage]:
        """The ranked chunks as passages; with ``similarity`` (the chunks' cosines to ``query``), each also
        carries its own and its document's summary's closeness to the question."""
        if not ranked:
            return []
        rows = {row.row_id: row for row in connection.execute(
            select(chunks.c.row_id, chunks.c.content, chunks.c.start_byte, chunks.c.heading, documents.c.name,
                   documents.c.title, documents.c.description)
            .select_from(chunks.join(documents, documents.c.doc_id == chunks.c.doc_id))
            .where(chunks.c.row_id.in_([r.row_id for r in ranked])))}
        found = [rows[r.row_id] for r in ranked if r.row_id in rows]
        if not similarity or self.vectors is None:
            return [Passage(row.name, row.content, row.start_byte, row.heading) for row in found]
        # A passage beyond the semantic window is no closer to the question than the last one in it.
        floor = min(similarity.values(), default=0.0)
        summaries = {row.name: _summary(row.title, row.description) for row in found}
        closeness = dict(zip(summaries, self.vectors.closeness(query, list(summaries.values())), strict=True))
        return [Passage(row.name, row.content, row.start_byte, row.heading, similarity.get(row.row_id, floor),
                        closeness[row.name]) for row in found]

    # -- administration ------------------------------------------------------------------------------

    def list_data_sources(self) -> list[DataSource]:
        counts = (select(documents.c.data_source, func.count().label("document_count"))
                  .group_by(documents.c.data_source).subquery())
        with self.database.reading() as connection:
            rows = connection.execute(
                select(data_sources, func.coalesce(counts.c.document_count, 0).label("document_count"))
                .outerjoin(counts, counts.c.data_source == data_sources.c.name).order_by(data_sources.c.name)).all()
        return [DataSource(name=row.name, base_url=row.base_url, location=row.location,
                           document_count=row.document_count, embedding_model=row.embedding_model,
                           create_time=Timestamp.from_micros(row.create_time_us),
                           update_time=Timestamp.from_micros(row.update_time_us)) for row in rows]

    def delete_documents(self, names: Sequence[str] | None, data_source: str | None) -> int:
        if bool(names) == bool(data_source):
            raise InvalidArgument("give either names or dataSource")
        with self.database.transaction() as connection:
            if data_source:
                count = connection.scalar(select(func.count()).where(documents.c.data_source == data_source))
                if not connection.scalar(select(func.count()).where(data_sources.c.name == data_source)):
                    raise NotFound(f"data source {data_source} does not exist")
                connection.execute(delete(data_sources).where(data_sources.c.name == data_source))
                bump_generation(connection)
                deleted = int(count or 0)
            else:
                assert names is not None
                if len(names) > MAX_DELETE_NAMES:
                    raise InvalidArgument(f"names has {len(names)} entries; at most {MAX_DELETE_NAMES} per call")
                for index, name in enumerate(names):
                    check_name(name, f"names[{index}]")
                deleted = int(connection.execute(delete(documents).where(documents.c.name.in_(set(names)))).rowcount or 0)
                bump_generation(connection)
        self.lexicon.invalidate()
        return deleted

    def check_readable(self, path: Path, *, remote: bool = True) -> Path:
        """The real path the ingest may read, as the gate says: for a remote caller (the ingest tool) inside
        CONVENER_KNOWLEDGE_ROOTS, for the operator's CLI any path; never the store's own files."""
        if not remote:
            return self.gate.local_path(path, "path")
        return self.gate.path(path, self.gate.knowledge_roots, "path")

    def ingest(self, plan: IngestPlan, progress: Progress | None = None,
               stop_requested: StopRequested | None = None) -> IngestSummary:
        return self.ingestor.run(plan, progress, stop_requested)


def _check_query(query: str) -> list[str]:
    if not query or not query.strip():
        raise InvalidArgument("query is required")
    if len(query) > MAX_QUERY_CHARACTERS:
        raise InvalidArgument(f"query is {len(query)} characters long; at most {MAX_QUERY_CHARACTERS} are allowed")
    return query_terms(query)


def _share(score: float, top: float) -> float:
    """A lexical score as a share of the query's best one: the top chunk is 1.0, the rest in (0, 1]."""
    return max(0.0, min(1.0, score / top)) if top > 0 else 0.0


def _basic_columns() -> tuple[Any, ...]:
    return (documents.c.name, documents.c.uri, documents.c.data_source, documents.c.title,
            documents.c.description, documents.c.update_time_us)


@functools.lru_cache(maxsize=MAX_PAGE_SIZE + 2)
def _chunk_rows(count: int) -> Select[Any]:
    """A page's ``count`` chunks with their documents (parameters ``row_0`` ...). Built once per count, with
    one parameter per row rather than an expanding list: on every search's path, SQLAlchemy's rendering of an
    expanding IN cost more than the query."""
    return (select(chunks.c.row_id, chunks.c.chunk_index, chunks.c.content, *_basic_columns())
            .select_from(chunks.join(documents, documents.c.doc_id == chunks.c.doc_id))
            .where(chunks.c.row_id.in_([bindparam(f"row_{index}") for index in range(count)])))


def _stored_chunk(hit: Hit, score: float) -> DocumentChunk:
    """A chunk of the response from the index's stored fields, without validation: the document was validated
    when indexed (copied, so that no response shares the index's object), the rest are two str, a str read
    from the store and a float."""
    basic = hit.document.basic
    return _constructed(DocumentChunk, {"parent": basic.name, "id": hit.chunk_id, "content": hit.content,
                                        "document": _constructed(Document, basic.__dict__.copy()),
                                        "relevance_score": round(score, 6)})




def _constructed(model: type[ModelT], values: dict[str, Any]) -> ModelT:
    """``model.model_construct(**values)`` for values that name every field, each already valid: what pydantic's
    ``model_construct`` sets, without its per-field walk for defaults and aliases (a few times its cost, on
    every chunk of every search). Every field is set, as a validated instance has them (unset ones are None
    and omitted from the wire form either way). The callers name every field (``_stored_chunk`` literally, a
    validated ``Document``'s ``__dict__`` holds them all), which the import-time check below keeps true."""
    instance = model.__new__(model)
    _set_slot(instance, "__dict__", values)
    _set_slot(instance, "__pydantic_fields_set__", set(values))
    _set_slot(instance, "__pydantic_extra__", None)
    _set_slot(instance, "__pydantic_private__", None)
    return instance


_set_slot = object.__setattr__
"""Bound once: ``_constructed`` runs twice per chunk of every search."""


# The fields ``_stored_chunk`` sets are all of the chunk's; were one added to the model, this fails at import.
assert set(DocumentChunk.model_fields) == {"parent", "id", "content", "document", "relevance_score"}


def _document(row: Any, view: DocumentView) -> Document:
    document = Document(name=row.name, uri=row.uri, data_source=row.data_source, title=row.title,
                        description=row.description or None, update_time=Timestamp.from_micros(row.update_time_us),
                        view=view)
    if view is DocumentView.DOCUMENT_VIEW_CONTENT:
        document.content = row.content
        document.content_length_bytes = row.content_length_bytes
    return document


def _summary(title: str, description: str) -> str:
    """What a document is about in a line: its title, and its description where that says more than the title
    ("git-worktree(1): git-worktree - Manage multiple working trees"; a description of a word or two, or one the
    title holds, adds nothing)."""
    description = description.strip()
    if len(description.split()) < 3 or description in title:
        return title
    return f"{title}: {description}"
