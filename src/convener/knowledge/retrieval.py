"""Ranking chunks for a query: lexical (BM25 in FTS5, weighted ``ts_rank`` on PostgreSQL), semantic (cosine
over local embeddings), and reciprocal rank fusion of the two.

Lexical ranking is a keyset-paged SQL query, so deep pages cost what the first does. Semantic ranking
scores every vector: the vectors are held in memory, loaded once per change of the index (a query of the
chunk count and highest row ID tells whether it changed), never per search.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection, Double, and_, cast, column, func, literal_column, or_, select, table
from sqlalchemy.sql.elements import ColumnElement

from convener.knowledge.embeddings import Embedder, Vectors, from_bytes
from convener.knowledge.tables import chunks, documents

RRF_K = 60
"""The constant of reciprocal rank fusion (Cormack et al.): ranks past the first few matter little."""
FUSION_WINDOW = 200
"""How deep each ranking is read for fusion; results beyond it are not returned in hybrid mode."""
HEADING_WEIGHT = 2.0
TEXT_VECTORS = 4096
"""Vectors of short texts (pages' summaries) kept in memory by ``VectorIndex.closeness``: 1.5 KB each."""


@dataclass(frozen=True)
class Ranked:
    row_id: int
    score: float
    """Higher is better; comparable only within one ranking."""


def lexical(connection: Connection, terms: Sequence[str], condition: ColumnElement[bool] | None, limit: int,
            after: tuple[float, int] | None = None) -> list[Ranked]:
    """Chunks matching any of ``terms``, best first, after the keyset position ``after`` (score, row_id)."""
    if not terms:
        return []
    score: ColumnElement[Any]
    statement = select(chunks.c.row_id).select_from(chunks.join(documents, documents.c.doc_id == chunks.c.doc_id))
    if connection.dialect.name == "postgresql":
        weighted = _postgresql_score(connection, terms, condition)
        if weighted is None:
            return []
        score, matches = weighted
        statement = statement.where(matches)
    else:
        # Each term a quoted FTS5 string, so FTS syntax in a query (NEAR, OR, *, column:) stays literal text.
        fts_query = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        fts = table("knowledge_chunks_fts", column("rowid"))
        score = -literal_column(f"bm25(knowledge_chunks_fts, {HEADING_WEIGHT}, 1.0)")
        statement = statement.join(fts, fts.c.rowid == chunks.c.row_id).where(
            literal_column("knowledge_chunks_fts").op("MATCH")(fts_query))
    if condition is not None:
        statement = statement.where(condition)
    if after is not None:
        statement = statement.where(or_(score < after[0], and_(score == after[0], chunks.c.row_id > after[1])))
    statement = statement.add_columns(score.label("score")).order_by(score.desc(), chunks.c.row_id).limit(limit)
    return [Ranked(row.row_id, float(row.score)) for row in connection.execute(statement)]


def _postgresql_score(connection: Connection, terms: Sequence[str], condition: ColumnElement[bool] | None
                      ) -> tuple[ColumnElement[Any], ColumnElement[bool]] | None:
    """BM25's idea on PostgreSQL: ``ts_rank`` has no inverse document frequency, so a question's common words
    ("commit", "tree" in Git's manual) would outweigh its telling ones. Each term's ``ts_rank`` is weighted
    by its IDF, counted from the GIN index over the chunks the filter allows. None when no chunk has any term."""
    vector: ColumnElement[Any] = literal_column("knowledge_chunks.search_vector")
    queries = [func.plainto_tsquery(literal_column("'english'"), term) for term in terms]
    scope = select(func.count()).select_from(chunks.join(documents, documents.c.doc_id == chunks.c.doc_id))
    if condition is not None:
        scope = scope.where(condition)
    counts = connection.execute(select(
        scope.scalar_subquery(), *(scope.where(vector.op("@@")(q)).scalar_subquery() for q in queries))).one()
    total = max(int(counts[0]), 1)
    score: ColumnElement[Any] | None = None
    matches: ColumnElement[bool] | None = None
    for query, frequency in zip(queries, counts[1:], strict=True):
        if not frequency:
            continue  # a stopword, or a word no chunk has
        idf = math.log(1 + (total - frequency + 0.5) / (frequency + 0.5))
        # Headings weigh twice the body (weights of D, C, B, A), as the bm25 column weights do on SQLite;
        # normalisation 1 divides by 1 + log(length) so that long chunks do not win by size.
        term_score = func.ts_rank(literal_column("'{0.1, 0.2, 0.5, 1.0}'::float4[]"), vector, query, 1) * idf
        score = term_score if score is None else score + term_score
        match = vector.op("@@")(query)
        matches = match if matches is None else or_(matches, match)
    if score is None or matches is None:
        return None
    return cast(score, Double), matches  # a double keeps page tokens exact (ts_rank is float4)


class VectorIndex:
    """The chunk vectors of the store, in memory, for brute-force cosine ranking."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._version: tuple[int, int] | None = None
        self._row_ids = np.zeros(0, dtype=np.int64)
        self._matrix: Vectors = np.zeros((0, 0), dtype=np.float32)
        self._texts: OrderedDict[str, Vectors] = OrderedDict()
        self._last: tuple[str, Vectors] | None = None

    def _refresh(self, connection: Connection) -> None:
        # Chunks are only ever inserted (with new row IDs) or deleted, so their count and highest row ID change
        # whenever the vectors do; both come from an index, without reading the vectors.
        version_row = connection.execute(select(func.count(), func.coalesce(func.max(chunks.c.row_id), 0))).one()
        version = (int(version_row[0]), int(version_row[1]))
        with_vectors = chunks.c.embedding.is_not(None)
        with self._lock:
            if version == self._version:
                return
            rows = connection.execute(select(chunks.c.row_id, chunks.c.embedding).where(with_vectors)
                                      .order_by(chunks.c.row_id)).all()
            self._row_ids = np.fromiter((row.row_id for row in rows), dtype=np.int64, count=len(rows))
            self._matrix = (np.vstack([from_bytes(row.embedding) for row in rows]) if rows
                            else np.zeros((0, 0), dtype=np.float32))
            self._version = version

    def has_vectors(self, connection: Connection) -> bool:
        self._refresh(connection)
        return len(self._row_ids) > 0

    def search(self, connection: Connection, query: str, condition: ColumnElement[bool] | None,
               limit: int) -> list[Ranked]:
        """Call ``has_vectors`` first in the same transaction: it brings the vectors up to date."""
        with self._lock:
            row_ids, matrix = self._row_ids, self._matrix
        if len(row_ids) == 0:
            return []
        scores = matrix @ self._vector(query)
        if condition is not None:
            allowed = connection.execute(
                select(chunks.c.row_id).select_from(chunks.join(documents, documents.c.doc_id == chunks.c.doc_id))
                .where(condition, chunks.c.embedding.is_not(None))).scalars().all()
            scores = np.where(np.isin(row_ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed))),
                              scores, -np.inf)
        count = min(limit, int(np.isfinite(scores).sum()))
        if count == 0:
            return []
        top = np.argpartition(-scores, count - 1)[:count]
        ordered = sorted(top, key=lambda i: (-scores[i], row_ids[i]))
        return [Ranked(int(row_ids[i]), float(scores[i])) for i in ordered]

    def closeness(self, query: str, texts: Sequence[str]) -> list[float]:
        """The cosine of each of ``texts`` to ``query``. Meant for short texts that come back from query to query
        (pages' titles and descriptions): their vectors are kept, the last ``TEXT_VECTORS`` used."""
        if not texts:
            return []
        with self._lock:
            known = {text: self._texts[text] for text in texts if text in self._texts}
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        if missing:
            known.update(zip(missing, self.embedder.embed(missing), strict=True))
        with self._lock:
            for text, vector in known.items():
                self._texts[text] = vector
                self._texts.move_to_end(text)
            while len(self._texts) > TEXT_VECTORS:
                self._texts.popitem(last=False)
        return [float(score) for score in np.vstack([known[text] for text in texts]) @ self._vector(query)]

    def _vector(self, query: str) -> Vectors:
        """The query's vector, kept for the next call: an answer ranks by it, then weighs its pages by it."""
        with self._lock:
            if self._last is not None and self._last[0] == query:
                return self._last[1]
        vector: Vectors = self.embedder.embed([query])[0]
        with self._lock:
            self._last = (query, vector)
        return vector


def fuse(rankings: Sequence[Sequence[Ranked]], k: int = RRF_K) -> list[Ranked]:
    """Reciprocal rank fusion, scaled to [0, 1]: 1.0 for a chunk ranked first by every ranking."""
    if not rankings:
        return []
    totals: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            totals[item.row_id] = totals.get(item.row_id, 0.0) + 1.0 / (k + rank)
    best = len(rankings) / (k + 1)
    fused = [Ranked(row_id, total / best) for row_id, total in totals.items()]
    fused.sort(key=lambda item: (-item.score, item.row_id))
    return fused
