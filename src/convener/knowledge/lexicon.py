"""Lexical search in memory: a BM25 index of the store's chunks, kept in step with the store.

The engine's full-text search scores every chunk holding any word of a question (often half the corpus)
before the top 10. This index holds, per term, the ordinals of the chunks that have it and their BM25
weight, computed once; a query adds its terms' postings into one float array and takes the top k with
``argpartition``. The database stays the source of truth:

* The tokens are the engine's own: on SQLite the store's FTS5 index read through ``fts5vocab`` (and a
  private in-memory FTS5 table with the same tokenizer for query words), on PostgreSQL the stored
  ``search_vector`` (and ``to_tsvector('english', ...)`` for query words, cached per word). So ranking on
  SQLite is exactly FTS5's ``bm25`` (same k1, b, IDF, column weights and tie order by row ID); on
  PostgreSQL it is the same textbook BM25 over PostgreSQL's lexemes, where the engine path (the fallback)
  ranks by IDF-weighted ``ts_rank`` instead.
* Freshness: every change of the chunks bumps ``knowledge_search_generation`` in its own transaction.
  Writes of this process invalidate the index at once (``invalidate``); writes of other processes are seen
  when a search reads the generation, which it does at most every ``check_interval`` seconds, so a search
  may miss another process's ingest for at most that long (``STALENESS_SECONDS`` by default). A changed
  generation rebuilds the index from the store in the search's own snapshot.
* Stored fields: the index also keeps what a search's response carries for each chunk (its content and ID,
  its document's name, URI, data source, title, description and update time as a ``Document`` validated once,
  at build), read in the same build, so a search returns its page without fetching rows: it is the index's
  document store (Lucene's stored fields), under the same generation, not a cache of results.
* Filters are evaluated on every search over the documents' metadata the index holds (see
  ``_DocumentFilter``): an in-memory SQLite table evaluates the same compiled condition the engine would, so
  a filter needs no round trip either; a filter's allowed documents are kept per generation.
* So a search with a warm index touches the database only to check the generation (at most every
  ``check_interval``), for query words never seen before (PostgreSQL tokenizes them) and for a word the
  engine cuts in several tokens, once per generation (SQLite).
* Memory is bounded by ``max_chunks`` and ``max_stored_bytes`` (the UTF-8 bytes of the chunks' stored
  content): above either, no index is built and searches use the engine, with the reason logged once per
  generation. About 12 bytes per (term, chunk) pair and ~250 per term: Git's manual
  (4,255 chunks, 312,000 pairs, 7,400 terms) takes ~6 MB; the 250,000-chunk cap, at ~75 pairs a chunk,
  ~250 MB (a rebuild briefly needs a few times that, as Python lists, while it reads the tokens). Stored
  fields add their text (about its UTF-8 size for mostly-ASCII text, up to four times it for other scripts,
  as Python strings) plus ~150 bytes a chunk and ~1 KB a document: Git's manual, ~9 MB more; the 256 MB cap
  of stored bytes bounds them.

``search`` returns None whenever the engine must answer instead: the index is over its cap, or being
rebuilt by another thread. A query word the engine cuts in several tokens (``user's``) costs one engine
query the first time it is seen in a generation (see ``_phrase``).
"""

from __future__ import annotations

import functools
import logging
import math
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, NamedTuple

import numpy as np
import numpy.typing as npt
from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    Table,
    Text,
    create_engine,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql.elements import ColumnElement

from convener.api.protojson import Timestamp
from convener.knowledge.models import Document, DocumentView
from convener.knowledge.tables import chunks, documents, search_generation

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
HEADING_WEIGHT = 2.0
"""FTS5's ``bm25`` defaults and the weights the engine path gives headings (``retrieval.HEADING_WEIGHT``)."""
MIN_IDF = 1e-6
"""FTS5's floor for a term in more than half the chunks, whose BM25 IDF would be negative."""
MAX_CHUNKS = 250_000
MAX_STORED_BYTES = 256 * 1024 * 1024
"""The stored fields' cap: UTF-8 bytes of chunk content (``end_byte - start_byte`` summed)."""
FILTER_CACHE = 256
"""Filters whose allowed documents are kept per generation."""
STALENESS_SECONDS = 1.0
TOKEN_CACHE_WORDS = 65_536
PROBE_STRIDE = 8
"""Every how many chunks' scores a search samples to guess its top scores' threshold (``_at_least_top``)."""
SQLITE_TOKENIZER = "porter unicode61 remove_diacritics 2"
"""The tokenizer of ``knowledge_chunks_fts`` (migration 0006): query words must be cut and stemmed the same."""

Tokens = tuple[str, ...]


class Connect:
    """A search's connection, opened the first time the search must ask the database (with a warm index, most
    searches never do): on PostgreSQL a search then costs no pool checkout and no round trip."""

    def __init__(self, dialect: str, opener: Callable[[], AbstractContextManager[Connection]]) -> None:
        self.dialect = dialect
        self._opener = opener
        self._stack = ExitStack()
        self._connection: Connection | None = None

    @classmethod
    def given(cls, connection: Connection) -> Connect:
        """An already open connection (of a caller's transaction)."""
        return cls(connection.dialect.name, lambda: nullcontext(connection))

    def __call__(self) -> Connection:
        if self._connection is None:
            self._connection = self._stack.enter_context(self._opener())
        return self._connection

    def __enter__(self) -> Connect:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
                 ) -> bool | None:
        return self._stack.__exit__(kind, error, trace)


@dataclass(frozen=True, slots=True)
class StoredDocument:
    doc_id: int
    basic: Document
    """As a search response shows it (``DOCUMENT_VIEW_BASIC``), validated when indexed: copy before handing out."""
    content_length_bytes: int


class Hit(NamedTuple):
    """A named tuple rather than a frozen dataclass: a search makes one per result, and a frozen dataclass's
    ``__init__`` (a guarded ``object.__setattr__`` per field) costs several times a tuple's."""

    row_id: int
    score: float
    chunk_id: str
    """The chunk's index in its document, as the response's ``id``."""
    content: str
    document: StoredDocument


@dataclass(frozen=True)
class IndexSize:
    chunks: int
    terms: int
    postings: int
    array_bytes: int
    """The arrays alone; each term adds ~250 bytes of Python objects (its key and two array headers)."""
    stored_bytes: int
    """UTF-8 bytes of the stored chunk contents."""


@dataclass(frozen=True)
class _Postings:
    ordinals: npt.NDArray[np.int32]
    """Ascending."""
    weights: npt.NDArray[np.float64]

    NONE: ClassVar[_Postings]
    """Marks a phrase not looked up yet (a phrase no chunk has is cached as None)."""


@dataclass(frozen=True)
class _Snapshot:
    generation: int
    row_ids: npt.NDArray[np.int64]
    """Ascending, so an ordinal's order is the row ID's order (the engine's tie break)."""
    doc_ids: npt.NDArray[np.int64]
    postings: dict[str, _Postings]
    stored: _Stored
    phrases: dict[str, _Postings | None] = field(default_factory=dict)
    """Words of several tokens (see ``LexicalIndex._phrase``), looked up as queries bring them."""
    filters: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)
    """A filter's text -> the IDs of the documents it allows (ascending), evaluated over ``stored.documents``."""


@dataclass(frozen=True)
class _Stored:
    """The stored fields, by ordinal (the chunk's place in ``_Snapshot.row_ids``)."""

    chunk_ids: list[str]
    contents: list[str]
    documents: list[StoredDocument]
    """By chunk ordinal; a document's object is shared by its chunks."""
    metadata: list[dict[str, Any]]
    """One per document: the filterable columns, as the in-memory filter table holds them."""
    content_bytes: int


_Postings.NONE = _Postings(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64))


def bump_generation(connection: Connection) -> None:
    """Mark the chunks changed, in the transaction that changes them: every index rebuilds on its next check."""
    connection.execute(update(search_generation).where(search_generation.c.id == 1)
                       .values(generation=search_generation.c.generation + 1))


def read_generation(connection: Connection) -> int:
    return int(connection.scalar(select(search_generation.c.generation).where(search_generation.c.id == 1)) or 0)


class LexicalIndex:
    def __init__(self, max_chunks: int = MAX_CHUNKS, check_interval: float = STALENESS_SECONDS,
                 max_stored_bytes: int = MAX_STORED_BYTES) -> None:
        self.max_chunks = max_chunks
        self.max_stored_bytes = max_stored_bytes
        self.check_interval = check_interval
        self._snapshot: _Snapshot | None = None
        self._too_large: int | None = None
        """The generation found over the cap: no index for it, the engine answers."""
        self._checked_at = -math.inf
        self._invalidations = 0
        """Counts ``invalidate`` calls: a search that read the generation before one must not mark it checked."""
        self._state = threading.Lock()
        self._building = threading.Lock()
        self._tokens: OrderedDict[str, Tokens] = OrderedDict()
        self._tokenizer: sqlite3.Connection | None = None
        self._filter = _DocumentFilter()

    def invalidate(self) -> None:
        """This process changed the chunks: the next search reads the generation whatever the interval."""
        with self._state:
            self._checked_at = -math.inf
            self._invalidations += 1

    @property
    def indexed_chunks(self) -> int:
        snapshot = self._snapshot
        return 0 if snapshot is None else len(snapshot.row_ids)

    @property
    def size(self) -> IndexSize:
        snapshot = self._snapshot
        if snapshot is None:
            return IndexSize(0, 0, 0, 0, 0)
        postings = sum(len(p.ordinals) for p in snapshot.postings.values())
        arrays = snapshot.row_ids.nbytes + snapshot.doc_ids.nbytes + sum(
            p.ordinals.nbytes + p.weights.nbytes for p in snapshot.postings.values())
        return IndexSize(len(snapshot.row_ids), len(snapshot.postings), postings, arrays,
                         snapshot.stored.content_bytes)

    def search(self, connect: Connect, terms: Sequence[str], condition: ColumnElement[bool] | None,
               limit: int, after: tuple[float, int] | None = None, filter_text: str | None = None
               ) -> list[Hit] | None:
        """Chunks with any of ``terms``, best first, after the keyset position ``after``, with their stored
        fields; None: ask the engine. ``condition`` is the compiled ``filter_text`` (the text keys the
        filter's allowed documents for the generation; without it the condition is evaluated afresh)."""
        snapshot = self._current(connect)
        if snapshot is None:
            return None
        found: list[_Postings] = []
        for term, tokens in zip(terms, self._query_tokens(connect, terms), strict=True):
            postings = snapshot.postings.get(tokens[0]) if len(tokens) == 1 else (
                self._phrase(connect, snapshot, term, tokens) if tokens else None)
            if postings is not None:
                found.append(postings)
        if not found:
            return []
        # One pass over the query's postings (a chunk's weights summed in the terms' order, as repeated
        # ``scores[ordinals] += weights`` would, a few times slower); every weight is positive, so a chunk
        # matched iff its score is, and a boolean array's nonzero is several times faster than a float one's.
        scores = np.bincount(np.concatenate([p.ordinals for p in found]),
                             weights=np.concatenate([p.weights for p in found]),
                             minlength=len(snapshot.row_ids)).astype(np.float64, copy=False)
        stored = snapshot.stored
        if condition is None and after is None:
            ordinals, best = _top_matched(scores, limit)
        else:
            ordinals, best = _top(self._candidates(snapshot, scores, condition, filter_text, after, connect), scores,
                                  limit)
        row_ids = snapshot.row_ids[ordinals].tolist()
        chunk_ids, contents, placed = stored.chunk_ids, stored.contents, stored.documents
        return [Hit(row_ids[place], best[place], chunk_ids[ordinal], contents[ordinal], placed[ordinal])
                for place, ordinal in enumerate(ordinals)]

    def _candidates(self, snapshot: _Snapshot, scores: npt.NDArray[np.float64], condition: ColumnElement[bool] | None,
                    filter_text: str | None, after: tuple[float, int] | None, connect: Connect) -> npt.NDArray[np.intp]:
        """The matched chunks (a positive score) that ``condition`` allows, after the keyset position ``after``."""
        candidates = np.flatnonzero(scores > 0)
        if condition is not None and len(candidates):
            allowed = self._allowed(snapshot, condition, filter_text, connect)
            candidates = candidates[np.isin(snapshot.doc_ids[candidates], allowed, assume_unique=False)]
        if after is not None and len(candidates):
            score, row_id = after
            values = scores[candidates]
            candidates = candidates[(values < score) | ((values == score) & (snapshot.row_ids[candidates] > row_id))]
        return candidates

    def _allowed(self, snapshot: _Snapshot, condition: ColumnElement[bool], filter_text: str | None,
                 connect: Connect) -> npt.NDArray[np.int64]:
        """The IDs of the documents ``condition`` allows, from the index's own metadata, kept per filter text."""
        if filter_text is not None:
            with self._state:
                known = snapshot.filters.get(filter_text)
            if known is not None:
                return known
        allowed = self._filter.allowed(snapshot, condition)
        if filter_text is not None:
            with self._state:
                if len(snapshot.filters) >= FILTER_CACHE:
                    snapshot.filters.clear()
                snapshot.filters[filter_text] = allowed
        return allowed

    def _phrase(self, connect: Connect, snapshot: _Snapshot, term: str, tokens: Tokens) -> _Postings | None:
        """A word the engine cuts in several tokens (``i'm``, ``user's``). FTS5 matches it as a phrase, which
        needs positions the postings do not hold: the engine scores the phrase alone once per generation (its
        ``bm25`` for a one-phrase query is exactly the phrase's posting weight). PostgreSQL's
        ``plainto_tsquery`` ANDs the lexemes: the chunks holding all of them, their weights summed."""
        with self._state:
            if snapshot.phrases.get(term, _Postings.NONE) is not _Postings.NONE:
                return snapshot.phrases[term]
        if connect.dialect == "postgresql":
            parts = [snapshot.postings.get(token) for token in tokens]
            found: _Postings | None = None
            if all(part is not None for part in parts):
                ordinals = functools.reduce(np.intersect1d, [part.ordinals for part in parts if part is not None])
                weights = np.zeros(len(ordinals), dtype=np.float64)
                for part in parts:
                    assert part is not None
                    weights += part.weights[np.searchsorted(part.ordinals, ordinals)]
                found = _Postings(ordinals.astype(np.int32), weights)
        else:
            phrase = '"' + term.replace('"', '""') + '"'
            rows = connect().exec_driver_sql(
                f"SELECT rowid, -bm25(knowledge_chunks_fts, {HEADING_WEIGHT}, 1.0) FROM knowledge_chunks_fts"
                " WHERE knowledge_chunks_fts MATCH ? ORDER BY rowid", (phrase,)).all()
            row_ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            places = np.searchsorted(snapshot.row_ids, row_ids)
            known = places < len(snapshot.row_ids)
            known[known] = snapshot.row_ids[places[known]] == row_ids[known]
            weights = np.fromiter((row[1] for row in rows), dtype=np.float64, count=len(rows))
            found = _Postings(places[known].astype(np.int32), weights[known]) if known.any() else None
        with self._state:
            if len(snapshot.phrases) >= TOKEN_CACHE_WORDS:
                snapshot.phrases.clear()
            snapshot.phrases[term] = found
        return found

    # -- freshness -----------------------------------------------------------------------------------

    def _current(self, connect: Connect) -> _Snapshot | None:
        now = time.monotonic()
        with self._state:
            snapshot, due = self._snapshot, now - self._checked_at >= self.check_interval
            invalidations = self._invalidations
        if not due:
            return snapshot
        connection = connect()
        generation = read_generation(connection)
        if snapshot is not None and snapshot.generation == generation:
            self._checked(now, invalidations)
            return snapshot
        if self._too_large == generation:
            self._checked(now, invalidations)
            return None
        if not self._building.acquire(blocking=False):
            return None  # another thread is rebuilding: the engine answers meanwhile rather than wait
        try:
            built = self._build(connection, generation)
        finally:
            self._building.release()
        with self._state:
            self._snapshot = built
        self._checked(now, invalidations)
        return built

    def _checked(self, now: float, invalidations: int) -> None:
        """The generation read at ``now`` is current, unless this process changed the chunks since."""
        with self._state:
            if self._invalidations == invalidations:
                self._checked_at = now

    def _build(self, connection: Connection, generation: int) -> _Snapshot | None:
        count, content_bytes = connection.execute(select(
            func.count(), func.coalesce(func.sum(chunks.c.end_byte - chunks.c.start_byte), 0))).one()
        if count > self.max_chunks or content_bytes > self.max_stored_bytes:
            if self._too_large != generation:
                log.warning("knowledge search: %d chunks (%d bytes of content) exceed the in-memory index's cap of "
                            "%d chunks (%d bytes); the database's full-text search answers instead",
                            count, content_bytes, self.max_chunks, self.max_stored_bytes)
            self._too_large = generation
            return None
        self._too_large = None
        started = time.perf_counter()
        # The keys and the stored fields in one statement, so one snapshot (on PostgreSQL each statement of a
        # search's connection is its own): a write after it bumps the generation and rebuilds the index.
        rows = connection.execute(
            select(chunks.c.row_id, chunks.c.doc_id, chunks.c.chunk_index, chunks.c.content, *_DOCUMENT_FIELDS)
            .select_from(chunks.join(documents, documents.c.doc_id == chunks.c.doc_id))
            .order_by(chunks.c.row_id)).all()
        row_ids = np.fromiter((row.row_id for row in rows), dtype=np.int64, count=len(rows))
        doc_ids = np.fromiter((row.doc_id for row in rows), dtype=np.int64, count=len(rows))
        stored = _store(rows)
        if connection.dialect.name == "postgresql":
            occurrences = connection.exec_driver_sql(
                "SELECT u.lexeme, c.row_id, coalesce(cardinality(array_positions(u.weights, 'A')), 0),"
                " cardinality(u.positions) FROM knowledge_chunks c, unnest(c.search_vector) u")
        else:
            occurrences = connection.exec_driver_sql(
                "SELECT term, doc, sum(col = 'heading'), count(*) FROM knowledge_chunks_fts_instances"
                " GROUP BY term, doc")
        snapshot = _weigh(generation, row_ids, doc_ids, occurrences, stored)
        log.info("knowledge search: indexed %d chunks, %d terms in %.2f s", len(row_ids), len(snapshot.postings),
                 time.perf_counter() - started)
        return snapshot

    # -- query words ---------------------------------------------------------------------------------

    def _query_tokens(self, connect: Connect, terms: Sequence[str]) -> list[Tokens]:
        """Each term as the engine tokenizes it, from a per-process cache; the misses asked in one go."""
        with self._state:
            known = {term: self._tokens.get(term) for term in terms}
        missing = [term for term, tokens in known.items() if tokens is None]
        if missing:
            found = (_postgresql_tokens(connect(), missing) if connect.dialect == "postgresql"
                     else self._sqlite_tokens(missing))
            with self._state:
                for term, tokens in found.items():
                    self._tokens[term] = tokens
                    known[term] = tokens
                while len(self._tokens) > TOKEN_CACHE_WORDS:
                    self._tokens.popitem(last=False)
        return [known[term] or () for term in terms]

    def _sqlite_tokens(self, words: Sequence[str]) -> dict[str, Tokens]:
        """Through a private in-memory FTS5 table with the store's tokenizer: no round trip to the store."""
        with self._state:
            if self._tokenizer is None:
                tokenizer = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
                tokenizer.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{SQLITE_TOKENIZER}')")
                tokenizer.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, instance)")
                self._tokenizer = tokenizer
            tokenizer = self._tokenizer
            tokenizer.execute("BEGIN")
            try:
                tokenizer.executemany("INSERT INTO words(rowid, word) VALUES (?, ?)",
                                      [(index, word) for index, word in enumerate(words, start=1)])
                rows = tokenizer.execute("SELECT doc, term, offset FROM tokens").fetchall()
            finally:
                tokenizer.execute("ROLLBACK")
        cut: dict[int, list[tuple[int, str]]] = {}
        for doc, term, offset in rows:
            cut.setdefault(doc, []).append((offset, term))
        return {word: tuple(term for _, term in sorted(cut.get(index, []))) for index, word in enumerate(words, 1)}


_DOCUMENT_FIELDS = (documents.c.name, documents.c.uri, documents.c.data_source, documents.c.title,
                    documents.c.description, documents.c.update_time_us, documents.c.content_length_bytes)
_FILTERED = ("doc_id", "name", "uri", "data_source", "title", "update_time_us", "content_length_bytes")
"""The document columns a search filter may name (``service.FILTER_FIELDS`` and more), held for filtering."""


def _store(rows: Sequence[Any]) -> _Stored:
    """The stored fields of ``rows`` (chunks joined with their documents, by row ID). Each document's response
    model is validated here, once per build, so that a search can hand out copies without validating."""
    by_document: dict[int, StoredDocument] = {}
    metadata: list[dict[str, Any]] = []
    content_bytes = 0
    placed: list[StoredDocument] = []
    for row in rows:
        document = by_document.get(row.doc_id)
        if document is None:
            basic = Document(name=row.name, uri=row.uri, data_source=row.data_source, title=row.title,
                             description=row.description or None,
                             update_time=Timestamp.from_micros(row.update_time_us),
                             view=DocumentView.DOCUMENT_VIEW_BASIC)
            document = by_document[row.doc_id] = StoredDocument(row.doc_id, basic, row.content_length_bytes)
            metadata.append({column: getattr(row, column) for column in _FILTERED})
        placed.append(document)
        content_bytes += len(row.content.encode())
    return _Stored([str(row.chunk_index) for row in rows], [row.content for row in rows], placed, metadata,
                   content_bytes)


class _DocumentFilter:
    """Evaluates a search's filter over the documents the index holds, without the store: the filter is
    compiled to a SQLAlchemy condition over ``knowledge_documents`` (``api.filtering``), which runs here on a
    private in-memory SQLite table of the same name and the filterable columns, loaded once per generation.
    Comparisons of integers and strings agree with either engine (strings compare by code point, as the
    store's ``=`` and ``!=`` do); ``LIKE`` (``:`` and wildcards) is case-sensitive, as the store's is on both
    engines (``store.database`` sets SQLite's ``case_sensitive_like``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engine: Engine | None = None
        self._loaded: _Snapshot | None = None
        """The snapshot whose documents the table holds (a reference, so that it stays that snapshot)."""
        self._table = Table(documents.name, MetaData(), Column("doc_id", Integer, primary_key=True),
                            *(Column(name, Text) for name in ("name", "uri", "data_source", "title")),
                            Column("update_time_us", BigInteger), Column("content_length_bytes", BigInteger))

    def allowed(self, snapshot: _Snapshot, condition: ColumnElement[bool]) -> npt.NDArray[np.int64]:
        with self._lock:
            engine = self._load(snapshot)
            with engine.connect() as connection:
                ids = connection.execute(select(documents.c.doc_id).where(condition)).scalars().all()
        return np.unique(np.fromiter(ids, dtype=np.int64, count=len(ids)))

    def _load(self, snapshot: _Snapshot) -> Engine:
        if self._engine is None:
            engine = create_engine("sqlite://", poolclass=StaticPool,
                                   connect_args={"check_same_thread": False})
            with engine.begin() as connection:  # StaticPool: this one connection serves every filter
                connection.exec_driver_sql("PRAGMA case_sensitive_like=ON")
            self._table.metadata.create_all(engine)
            self._engine = engine
        if self._loaded is not snapshot:
            with self._engine.begin() as connection:
                connection.execute(self._table.delete())
                if snapshot.stored.metadata:
                    connection.execute(insert(self._table), snapshot.stored.metadata)
            self._loaded = snapshot
        return self._engine


def _postgresql_tokens(connection: Connection, words: Sequence[str]) -> dict[str, Tokens]:
    rows = connection.exec_driver_sql(
        "SELECT w, ARRAY(SELECT u.lexeme FROM unnest(to_tsvector('english', w)) u ORDER BY u.positions[1])"
        " FROM unnest(%(words)s::text[]) AS t(w)", {"words": list(words)}).all()
    return {row[0]: tuple(row[1]) for row in rows}


def _weigh(generation: int, row_ids: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int64],
           occurrences: object, stored: _Stored) -> _Snapshot:
    """Postings from ``(term, row, heading count, total count)`` rows, weighted as FTS5's ``bm25``: IDF times
    tf·(k1+1)/(tf + k1·(1−b+b·|D|/avgdl)), tf counting heading hits twice, |D| all tokens of the chunk."""
    term_ids: dict[str, int] = {}
    term_column: list[int] = []
    row_column: list[int] = []
    heading_column: list[int] = []
    total_column: list[int] = []
    for term, row, heading, total in occurrences:  # type: ignore[attr-defined]
        term_column.append(term_ids.setdefault(term, len(term_ids)))
        row_column.append(row)
        heading_column.append(heading)
        total_column.append(total)
    rows = np.asarray(row_column, dtype=np.int64)
    ordinals = np.searchsorted(row_ids, rows).astype(np.int32)
    known = (ordinals < len(row_ids)) & (row_ids[np.minimum(ordinals, max(len(row_ids) - 1, 0))] == rows) \
        if len(row_ids) else np.zeros(len(rows), dtype=bool)
    terms = np.asarray(term_column, dtype=np.int64)[known]
    ordinals = ordinals[known]
    heading = np.asarray(heading_column, dtype=np.float64)[known]
    total = np.asarray(total_column, dtype=np.float64)[known]
    chunk_count = len(row_ids)
    lengths = np.bincount(ordinals, weights=total, minlength=chunk_count)
    average = float(lengths.sum()) / chunk_count if chunk_count else 1.0
    frequency = heading * HEADING_WEIGHT + (total - heading)
    frequencies = np.bincount(terms, minlength=len(term_ids)).astype(np.float64)
    idf = np.maximum(np.log((chunk_count - frequencies + 0.5) / (frequencies + 0.5)), MIN_IDF)
    weights = idf[terms] * frequency * (K1 + 1) / (
        frequency + K1 * (1 - B + B * lengths[ordinals] / (average if average > 0 else 1.0)))
    order = np.argsort(terms, kind="stable")
    terms, ordinals, weights = terms[order], ordinals[order], weights[order]
    bounds = np.searchsorted(terms, np.arange(len(term_ids) + 1))
    names = list(term_ids)
    postings = {names[index]: _Postings(ordinals[bounds[index]:bounds[index + 1]].copy(),
                                        weights[bounds[index]:bounds[index + 1]].copy())
                for index in range(len(names)) if bounds[index + 1] > bounds[index]}
    return _Snapshot(generation, row_ids, doc_ids, postings, stored)


def _top(candidates: npt.NDArray[np.intp], scores: npt.NDArray[np.float64], limit: int
         ) -> tuple[list[int], list[float]]:
    """The best ``limit`` candidates by score, then row ID (candidates ascend, as ordinals follow row IDs)."""
    if limit <= 0 or not len(candidates):
        return [], []
    values = scores[candidates]
    if len(candidates) > limit:
        threshold = np.partition(values, len(values) - limit)[len(values) - limit]
        kept = values >= threshold  # every tie of the last place, so the row-ID order decides among them
        candidates, values = candidates[kept], values[kept]
    order = np.lexsort((candidates, -values))[:limit]
    return candidates[order].tolist(), values[order].tolist()  # as Python numbers in one go, not one by one


def _top_matched(scores: npt.NDArray[np.float64], limit: int) -> tuple[list[int], list[float]]:
    """``_top`` of every matched chunk (a positive score), without listing the matched ones first when the
    ``limit``-th best score is positive (most queries: a few words match thousands of chunks): the chunks at or
    above it, every tie of the last place included, are the only ones the order can take."""
    count = len(scores)
    if 0 < limit < count:
        kept = _at_least_top(scores, limit)
        if kept is not None:
            values = scores[kept]
            if len(kept) > limit:
                threshold = np.partition(values, len(values) - limit)[len(values) - limit]
                chosen = values >= threshold  # every tie of the last place, so the row-ID order decides among them
                kept, values = kept[chosen], values[chosen]
            order = np.lexsort((kept, -values))[:limit]
            return kept[order].tolist(), values[order].tolist()
    return _top(np.flatnonzero(scores > 0), scores, limit)


def _at_least_top(scores: npt.NDArray[np.float64], limit: int) -> npt.NDArray[np.intp] | None:
    """The ordinals of a positive score at least some ``guess`` that ``limit`` scores reach, so the best
    ``limit`` (and their ties) are among them, in ascending order; None when no such positive guess is found.
    The guess is the ``limit``-th best of every ``PROBE_STRIDE``-th score, a few hundred values: partitioning
    those and then the few chunks at or above the guess costs a fraction of partitioning every chunk's score
    (mostly zeros, where numpy's selection is slowest). If fewer than ``limit`` reach the guess, the
    ``limit``-th best of all is the threshold itself, as partitioning every score finds it."""
    probe = scores[::PROBE_STRIDE]
    if len(probe) > limit:
        guess = np.partition(probe, len(probe) - limit)[len(probe) - limit]
        if guess > 0:
            kept = np.flatnonzero(scores >= guess)
            if len(kept) >= limit:
                return kept
    threshold = np.partition(scores, len(scores) - limit)[len(scores) - limit]
    return np.flatnonzero(scores >= threshold) if threshold > 0 else None
