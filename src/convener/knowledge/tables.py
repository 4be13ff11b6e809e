"""Knowledge tables: data sources, documents (whole Markdown) and their chunks.

Chunks are what search ranks. Full-text search over them is made by the migration, because it differs
by engine: an FTS5 index over ``heading`` and ``content`` on SQLite (Porter stemming, BM25 ranking), a
stored weighted ``tsvector`` with a GIN index on PostgreSQL (see ``FULL_TEXT_OBJECTS``).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Integer, LargeBinary, String, Table, Text

from convener.store.schema import metadata

data_sources = Table(
    "knowledge_data_sources",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("base_url", Text, nullable=False),
    Column("location", Text, nullable=False),
    Column("embedding_model", String(128), nullable=True),
    Column("create_time_us", BigInteger, nullable=False),
    Column("update_time_us", BigInteger, nullable=False),
)
"""``location`` is the folder or archive last ingested; ``embedding_model`` names the model whose vectors
the source's chunks carry (none: lexical search only)."""

documents = Table(
    "knowledge_documents",
    metadata,
    Column("doc_id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(500), nullable=False, unique=True),
    Column("uri", Text, nullable=False),
    Column("data_source", String(255), ForeignKey("knowledge_data_sources.name", ondelete="CASCADE"),
           nullable=False),
    Column("source_path", Text, nullable=False),
    Column("title", Text, nullable=False),
    Column("description", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("content_length_bytes", BigInteger, nullable=False),
    Column("update_time_us", BigInteger, nullable=False),
    Index("ix_knowledge_documents_source", "data_source", "source_path"),
    Index("ix_knowledge_documents_update_time", "update_time_us"),
)
"""``content_hash`` is of the source file's bytes: an unchanged file is skipped on re-ingest."""

chunks = Table(
    "knowledge_chunks",
    metadata,
    Column("row_id", Integer, primary_key=True, autoincrement=True),
    Column("doc_id", Integer, ForeignKey("knowledge_documents.doc_id", ondelete="CASCADE"), nullable=False),
    Column("chunk_index", Integer, nullable=False),
    Column("heading", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("start_byte", Integer, nullable=False),
    Column("end_byte", Integer, nullable=False),
    Column("embedding", LargeBinary, nullable=True),
    Index("ix_knowledge_chunks_document", "doc_id", "chunk_index", unique=True),
)
"""``heading`` is the document title and section path (``Title › Install › Linux``); ``content`` is the
exact slice ``[start_byte, end_byte)`` of the document's UTF-8 content; ``embedding`` float32 little-endian."""

FULL_TEXT_OBJECTS = frozenset({"knowledge_chunks_fts", "knowledge_chunks_fts_instances", "search_vector",
                               "ix_knowledge_chunks_search_vector"})

search_generation = Table(
    "knowledge_search_generation",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("generation", BigInteger, nullable=False),
)
"""One row (``id`` 1) whose ``generation`` goes up in every transaction that changes chunks, so that an
in-memory search index (``lexicon``) can tell cheaply whether the chunks changed since it was built."""
