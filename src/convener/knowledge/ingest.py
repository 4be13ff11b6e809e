"""Ingestion: a folder or archive of documentation made into documents and chunks, incrementally.

Each file is hashed (with the converter's version, so a better converter re-reads everything); a file
whose hash is stored already is skipped, a changed one replaces its document, and documents whose files
are gone are deleted unless asked to keep them. Every document is written in its own transaction, so an
interrupted ingest leaves whole documents only, and running it again picks up where it stopped. Files
that cannot be read or converted are reported by path; they never stop the ingest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Connection, delete, insert, select, update

from convener.api.errors import InvalidArgument
from convener.api.protojson import Timestamp
from convener.knowledge.chunking import byte_offsets, chunk_markdown
from convener.knowledge.converting import Unconvertible, convert
from convener.knowledge.embeddings import Embedder, to_bytes
from convener.knowledge.lexicon import bump_generation
from convener.knowledge.models import IngestProblem, IngestSummary
from convener.knowledge.names import (
    MAX_NAME_LENGTH,
    check_base_url,
    default_data_source,
    name_for,
    uri_for,
)
from convener.knowledge.sources import SourceFile, SourceProblem, read_source, source_kind
from convener.knowledge.tables import chunks, data_sources, documents
from convener.outside.limits import DATA_SOURCE_CHARACTERS
from convener.store.database import Database

CONVERTER_VERSION = "2"
"""Part of every content hash: bump it when conversion or chunking changes, and re-ingests redo all files."""
MAX_DATA_SOURCE_LENGTH = DATA_SOURCE_CHARACTERS
MAX_PROBLEMS_REPORTED = 1000

Progress = Callable[[IngestSummary], None]
StopRequested = Callable[[], bool]


@dataclass
class _Tally:
    data_source: str
    files_seen: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks_written: int = 0
    bytes_read: int = 0
    problems: list[IngestProblem] = field(default_factory=list)

    def problem(self, path: str, reason: str) -> None:
        if len(self.problems) < MAX_PROBLEMS_REPORTED:
            self.problems.append(IngestProblem(path=path, reason=reason))

    def summary(self) -> IngestSummary:
        return IngestSummary(
            data_source=self.data_source, files_seen=self.files_seen, added=self.added, updated=self.updated,
            unchanged=self.unchanged, removed=self.removed, chunks_written=self.chunks_written,
            bytes_read=self.bytes_read, problems=list(self.problems))


@dataclass(frozen=True)
class IngestPlan:
    location: Path
    base_url: str
    data_source: str
    keep_removed: bool = False

    @classmethod
    def make(cls, location: Path, base_url: str | None = None, data_source: str | None = None,
             keep_removed: bool = False) -> IngestPlan:
        """Resolve the defaults: the base URL is the location's ``file://`` URL, the data source its host."""
        resolved = local_path(location)
        try:
            source_kind(resolved)  # a missing path or an unreadable archive fails here, before anything is written
        except (ValueError, OSError) as error:
            raise InvalidArgument(f"{str(location)[:200]} cannot be read ({type(error).__name__})") from None
        base = check_base_url(base_url) if base_url else (resolved if resolved.is_dir() else resolved.parent).as_uri()
        source = (data_source if data_source is not None else default_data_source(base)).strip()
        if not source or len(source) > MAX_DATA_SOURCE_LENGTH or any(ord(c) < 32 for c in source):
            raise InvalidArgument(f"dataSource must be 1 to {MAX_DATA_SOURCE_LENGTH} printable characters")
        return cls(resolved, base, source, keep_removed)


def local_path(path: Path) -> Path:
    """``path`` absolute, with ``~`` expanded; INVALID_ARGUMENT for what no file system could hold (a NUL
    byte, an unknown ``~user``, a name too long), which would otherwise surface as an internal error."""
    try:
        return path.expanduser().resolve()
    except (ValueError, RuntimeError, OSError) as error:
        raise InvalidArgument(f"path {str(path)[:200]!r} is not usable ({type(error).__name__})") from None


class Ingestor:
    def __init__(self, database: Database, embedder: Embedder | None = None,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.database = database
        self.embedder = embedder
        self.on_change = on_change
        """Called after each commit that changed chunks (the search index of this process goes stale)."""

    def run(self, plan: IngestPlan, progress: Progress | None = None,
            stop_requested: StopRequested | None = None) -> IngestSummary:
        tally = _Tally(plan.data_source)
        now = Timestamp.now().to_micros()
        with self.database.transaction() as connection:
            self._claim_data_source(connection, plan, now)
            # A data source created or changed: the search index holds what it knows of data sources under the
            # generation, so it moves with them, as with chunks.
            bump_generation(connection)
            known = {row.source_path: (row.doc_id, row.content_hash) for row in connection.execute(
                select(documents.c.source_path, documents.c.doc_id, documents.c.content_hash)
                .where(documents.c.data_source == plan.data_source))}
        self.on_change()
        seen: set[str] = set()
        finished = True
        for entry in read_source(plan.location):
            if stop_requested is not None and stop_requested():
                finished = False
                break
            if isinstance(entry, SourceProblem):
                seen.add(entry.path)
                tally.problem(entry.path, entry.reason)
                if entry.stops:
                    finished = False
            else:
                seen.add(entry.path)
                self._ingest_file(plan, entry, known.get(entry.path), tally)
            if progress is not None:
                progress(tally.summary())
        if finished and not plan.keep_removed:
            tally.removed = self._remove_missing(plan, known, seen)
        return tally.summary()

    def _claim_data_source(self, connection: Connection, plan: IngestPlan, now: int) -> None:
        existing = connection.execute(select(data_sources).where(data_sources.c.name == plan.data_source)).first()
        model = self.embedder.model if self.embedder is not None else None
        if existing is None:
            connection.execute(insert(data_sources).values(
                name=plan.data_source, base_url=plan.base_url, location=str(plan.location),
                embedding_model=model, create_time_us=now, update_time_us=now))
            return
        if existing.base_url != plan.base_url:
            raise InvalidArgument(
                f'data source "{plan.data_source}" was ingested with base URL {existing.base_url}; use that URL, '
                "another data source name, or delete the data source first")
        connection.execute(update(data_sources).where(data_sources.c.name == plan.data_source).values(
            location=str(plan.location), embedding_model=model, update_time_us=now))

    def _ingest_file(self, plan: IngestPlan, entry: SourceFile, stored: tuple[int, str] | None,
                     tally: _Tally) -> None:
        tally.files_seen += 1
        tally.bytes_read += len(entry.data)
        # The converter's version and the embedding model are part of the hash: when either changes, every file
        # is converted, chunked and embedded again rather than skipped as unchanged.
        model = self.embedder.model if self.embedder is not None else ""
        digest = hashlib.sha256(f"{CONVERTER_VERSION}\0{model}\0".encode() + entry.data).hexdigest()
        if stored is not None and stored[1] == digest:
            tally.unchanged += 1
            return
        uri = uri_for(plan.base_url, entry.path)
        name = name_for(uri)
        if len(name) > MAX_NAME_LENGTH:
            tally.problem(entry.path, f"its document name would be longer than {MAX_NAME_LENGTH} characters")
            return
        try:
            converted = convert(entry.path, entry.data)
        except Unconvertible as error:
            tally.problem(entry.path, error.reason)
            return
        content = converted.markdown
        pieces = chunk_markdown(converted.title, content)
        spans = byte_offsets(content, pieces)
        vectors = (self.embedder.embed([f"{piece.heading}\n{piece.content}" for piece in pieces])
                   if self.embedder is not None and pieces else None)
        values = {
            "name": name, "uri": uri, "data_source": plan.data_source, "source_path": entry.path,
            "title": converted.title, "description": converted.description, "content": content,
            "content_hash": digest, "content_length_bytes": len(content.encode()),
            "update_time_us": Timestamp.now().to_micros(),
        }
        with self.database.transaction() as connection:
            owner = connection.execute(select(documents.c.doc_id, documents.c.data_source)
                                       .where(documents.c.name == name)).first()
            if owner is not None and owner.data_source != plan.data_source:
                tally.problem(entry.path, f"{name} belongs to data source {owner.data_source}")
                return
            if owner is None:
                doc_id = connection.execute(insert(documents).values(values).returning(documents.c.doc_id)).scalar_one()
            else:
                doc_id = owner.doc_id
                connection.execute(update(documents).where(documents.c.doc_id == doc_id).values(values))
                connection.execute(delete(chunks).where(chunks.c.doc_id == doc_id))
            if pieces:
                connection.execute(insert(chunks), [
                    {"doc_id": doc_id, "chunk_index": index, "heading": piece.heading, "content": piece.content,
                     "start_byte": span[0], "end_byte": span[1],
                     "embedding": to_bytes(vectors[index]) if vectors is not None else None}
                    for index, (piece, span) in enumerate(zip(pieces, spans, strict=True))])
            bump_generation(connection)
        self.on_change()
        if owner is None:
            tally.added += 1
        else:
            tally.updated += 1
        tally.chunks_written += len(pieces)

    def _remove_missing(self, plan: IngestPlan, known: dict[str, tuple[int, str]], seen: set[str]) -> int:
        gone = [doc_id for path, (doc_id, _) in known.items() if path not in seen]
        for start in range(0, len(gone), 500):
            with self.database.transaction() as connection:
                connection.execute(delete(documents).where(documents.c.doc_id.in_(gone[start:start + 500])))
                bump_generation(connection)
            self.on_change()
        return len(gone)

