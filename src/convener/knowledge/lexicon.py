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
* Memory is bounded by ``max_chunks``: above it, no index is built and searches use the engine, with the
  reason logged once per generation. About 12 bytes per (term, chunk) pair and ~250 per term: Git's manual
  (4,255 chunks, 312,000 pairs, 7,400 terms) takes ~6 MB; the 250,000-chunk cap, at ~75 pairs a chunk,
  ~250 MB (a rebuild briefly needs a few times that, as Python lists, while it reads the tokens).

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from sqlalchemy import Connection, func, select, update
from sqlalchemy.sql.elements import ColumnElement

from convener.knowledge.tables import chunks, documents, search_generation

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
HEADING_WEIGHT = 2.0
"""FTS5's ``bm25`` defaults and the weights the engine path gives headings (``retrieval.HEADING_WEIGHT``)."""
MIN_IDF = 1e-6
"""FTS5's floor for a term in more than half the chunks, whose BM25 IDF would be negative."""
MAX_CHUNKS = 250_000
STALENESS_SECONDS = 1.0
TOKEN_CACHE_WORDS = 65_536
SQLITE_TOKENIZER = "porter unicode61 remove_diacritics 2"
"""The tokenizer of ``knowledge_chunks_fts`` (migration 0006): query words must be cut and stemmed the same."""

Tokens = tuple[str, ...]


@dataclass(frozen=True)
class Hit:
    row_id: int
    score: float


@dataclass(frozen=True)
class IndexSize:
    chunks: int
    terms: int
    postings: int
    array_bytes: int
    """The arrays alone; each term adds ~250 bytes of Python objects (its key and two array headers)."""


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
    phrases: dict[str, _Postings | None] = field(default_factory=dict)
    """Words of several tokens (see ``LexicalIndex._phrase``), looked up as queries bring them."""


_Postings.NONE = _Postings(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64))


def bump_generation(connection: Connection) -> None:
    """Mark the chunks changed, in the transaction that changes them: every index rebuilds on its next check."""
    connection.execute(update(search_generation).where(search_generation.c.id == 1)
                       .values(generation=search_generation.c.generation + 1))


def read_generation(connection: Connection) -> int:
    return int(connection.scalar(select(search_generation.c.generation).where(search_generation.c.id == 1)) or 0)


class LexicalIndex:
    def __init__(self, max_chunks: int = MAX_CHUNKS, check_interval: float = STALENESS_SECONDS) -> None:
        self.max_chunks = max_chunks
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
            return IndexSize(0, 0, 0, 0)
        postings = sum(len(p.ordinals) for p in snapshot.postings.values())
        arrays = snapshot.row_ids.nbytes + snapshot.doc_ids.nbytes + sum(
            p.ordinals.nbytes + p.weights.nbytes for p in snapshot.postings.values())
        return IndexSize(len(snapshot.row_ids), len(snapshot.postings), postings, arrays)

    def search(self, connection: Connection, terms: Sequence[str], condition: ColumnElement[bool] | None,
               limit: int, after: tuple[float, int] | None = None) -> list[Hit] | None:
        """Chunks with any of ``terms``, best first, after the keyset position ``after``; None: ask the engine."""
        snapshot = self._current(connection)
        if snapshot is None:
            return None
        scores = np.zeros(len(snapshot.row_ids), dtype=np.float64)
        for term, tokens in zip(terms, self._query_tokens(connection, terms), strict=True):
            postings = snapshot.postings.get(tokens[0]) if len(tokens) == 1 else (
                self._phrase(connection, snapshot, term, tokens) if tokens else None)
            if postings is not None:
                scores[postings.ordinals] += postings.weights  # ordinals are distinct within a term
        candidates = np.flatnonzero(scores)
        if condition is not None and len(candidates):
            allowed = connection.execute(select(documents.c.doc_id).where(condition)).scalars().all()
            keep = np.isin(snapshot.doc_ids[candidates], np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            candidates = candidates[keep]
        if after is not None and len(candidates):
            score, row_id = after
            values = scores[candidates]
            candidates = candidates[(values < score) | ((values == score) & (snapshot.row_ids[candidates] > row_id))]
        return _top(candidates, scores, snapshot.row_ids, limit)

    def _phrase(self, connection: Connection, snapshot: _Snapshot, term: str, tokens: Tokens) -> _Postings | None:
        """A word the engine cuts in several tokens (``i'm``, ``user's``). FTS5 matches it as a phrase, which
        needs positions the postings do not hold: the engine scores the phrase alone once per generation (its
        ``bm25`` for a one-phrase query is exactly the phrase's posting weight). PostgreSQL's
        ``plainto_tsquery`` ANDs the lexemes: the chunks holding all of them, their weights summed."""
        with self._state:
            if snapshot.phrases.get(term, _Postings.NONE) is not _Postings.NONE:
                return snapshot.phrases[term]
        if connection.dialect.name == "postgresql":
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
            rows = connection.exec_driver_sql(
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

    def _current(self, connection: Connection) -> _Snapshot | None:
        now = time.monotonic()
        with self._state:
            snapshot, due = self._snapshot, now - self._checked_at >= self.check_interval
            invalidations = self._invalidations
        if not due:
            return snapshot
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
        count = int(connection.scalar(select(func.count()).select_from(chunks)) or 0)
        if count > self.max_chunks:
            if self._too_large != generation:
                log.warning("knowledge search: %d chunks exceed the in-memory index's cap of %d; the database's "
                            "full-text search answers instead", count, self.max_chunks)
            self._too_large = generation
            return None
        self._too_large = None
        started = time.perf_counter()
        keys = connection.execute(select(chunks.c.row_id, chunks.c.doc_id).order_by(chunks.c.row_id)).all()
        row_ids = np.fromiter((row.row_id for row in keys), dtype=np.int64, count=len(keys))
        doc_ids = np.fromiter((row.doc_id for row in keys), dtype=np.int64, count=len(keys))
        if connection.dialect.name == "postgresql":
            occurrences = connection.exec_driver_sql(
                "SELECT u.lexeme, c.row_id, coalesce(cardinality(array_positions(u.weights, 'A')), 0),"
                " cardinality(u.positions) FROM knowledge_chunks c, unnest(c.search_vector) u")
        else:
            occurrences = connection.exec_driver_sql(
                "SELECT term, doc, sum(col = 'heading'), count(*) FROM knowledge_chunks_fts_instances"
                " GROUP BY term, doc")
        snapshot = _weigh(generation, row_ids, doc_ids, occurrences)
        log.info("knowledge search: indexed %d chunks, %d terms in %.2f s", len(row_ids), len(snapshot.postings),
                 time.perf_counter() - started)
        return snapshot

    # -- query words ---------------------------------------------------------------------------------

    def _query_tokens(self, connection: Connection, terms: Sequence[str]) -> list[Tokens]:
        """Each term as the engine tokenizes it, from a per-process cache; the misses asked in one go."""
        with self._state:
            known = {term: self._tokens.get(term) for term in terms}
        missing = [term for term, tokens in known.items() if tokens is None]
        if missing:
            found = (_postgresql_tokens(connection, missing) if connection.dialect.name == "postgresql"
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


def _postgresql_tokens(connection: Connection, words: Sequence[str]) -> dict[str, Tokens]:
    rows = connection.exec_driver_sql(
        "SELECT w, ARRAY(SELECT u.lexeme FROM unnest(to_tsvector('english', w)) u ORDER BY u.positions[1])"
        " FROM unnest(%(words)s::text[]) AS t(w)", {"words": list(words)}).all()
    return {row[0]: tuple(row[1]) for row in rows}


def _weigh(generation: int, row_ids: npt.NDArray[np.int64], doc_ids: npt.NDArray[np.int64],
           occurrences: object) -> _Snapshot:
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
    return _Snapshot(generation, row_ids, doc_ids, postings)


def _top(candidates: npt.NDArray[np.intp], scores: npt.NDArray[np.float64], row_ids: npt.NDArray[np.int64],
         limit: int) -> list[Hit]:
    """The best ``limit`` candidates by score, then row ID (candidates ascend, as ordinals follow row IDs)."""
    if limit <= 0 or not len(candidates):
        return []
    values = scores[candidates]
    if len(candidates) > limit:
        threshold = np.partition(values, len(values) - limit)[len(values) - limit]
        kept = values >= threshold  # every tie of the last place, so the row-ID order decides among them
        candidates, values = candidates[kept], values[kept]
    order = np.lexsort((candidates, -values))[:limit]
    return [Hit(int(row_ids[candidates[i]]), float(values[i])) for i in order]
