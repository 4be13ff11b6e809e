"""Chat tables: users, spaces, memberships, messages and mentions, plus how external IDs map to ours.

Messages are read newest first per space (and per thread) by keyset on ``(create_time_us, row_id)``,
restricted to ``listed`` ones (not system, not deleted, not private), so those indexes lead with the
space, then ``listed``. Full-text search lives beside the table and is made by the migration, not by
this metadata, because it differs by engine: an FTS5 index over ``search_text`` on SQLite, a stored
``tsvector`` column with a GIN index on PostgreSQL (see ``FULL_TEXT_OBJECTS``).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, ForeignKey, Index, Integer, String, Table, Text, text

from convener.store.schema import Json, metadata

users = Table(
    "chat_users",
    metadata,
    Column("user_id", String(128), primary_key=True),
    Column("display_name", String(512), nullable=False),
    Column("email", String(320), nullable=True, unique=True),
    Column("user_type", String(8), nullable=False),
)
"""``email`` is lowercased; ``users/{email}`` names the user that has it."""

links = Table(
    "chat_links",
    metadata,
    Column("source", String(32), primary_key=True),
    Column("kind", String(8), primary_key=True),
    Column("external_id", String(512), primary_key=True),
    Column("internal_id", String(128), nullable=False),
)
"""An export's user and conversation IDs (``kind`` user or space) → ours: re-imports land on the same rows."""

spaces = Table(
    "chat_spaces",
    metadata,
    Column("space_id", String(128), primary_key=True),
    Column("display_name", String(512), nullable=True),
    Column("space_type", String(16), nullable=False),
    Column("create_time_us", BigInteger, nullable=True),
    Column("last_active_time_us", BigInteger, nullable=False),
)

memberships = Table(
    "chat_memberships",
    metadata,
    Column("space_id", String(128), ForeignKey("chat_spaces.space_id", ondelete="CASCADE"), primary_key=True),
    Column("user_id", String(128), ForeignKey("chat_users.user_id", ondelete="CASCADE"), primary_key=True),
    Column("role", String(16), nullable=False),
    Column("create_time_us", BigInteger, nullable=True),
    Index("ix_chat_memberships_user", "user_id", "space_id"),
)

messages = Table(
    "chat_messages",
    metadata,
    Column("row_id", Integer, primary_key=True, autoincrement=True),
    Column("space_id", String(128), ForeignKey("chat_spaces.space_id", ondelete="CASCADE"), nullable=False),
    Column("message_id", String(128), nullable=False),
    Column("thread_id", String(128), nullable=True),
    Column("threaded_reply", Boolean, nullable=False),
    Column("sender_id", String(128), nullable=True),
    Column("create_time_us", BigInteger, nullable=False),
    Column("last_update_time_us", BigInteger, nullable=True),
    Column("delete_time_us", BigInteger, nullable=True),
    Column("private_viewer_id", String(128), nullable=True),
    Column("system", Boolean, nullable=False),
    Column("listed", Boolean, nullable=False),
    Column("has_link", Boolean, nullable=False),
    Column("body", Text, nullable=False),  # Markdown, as plaintextBody shows it
    Column("search_text", Text, nullable=False),
    Column("attachments", Json, nullable=True),
    Column("reactions", Json, nullable=True),
    Column("quote", Json, nullable=True),
    Index("ix_chat_messages_id", "space_id", "message_id", unique=True),
    Index("ix_chat_messages_listing", "space_id", "listed", "create_time_us", "row_id"),
    # Threaded messages only: every query of it names a thread (migration 0015).
    Index("ix_chat_messages_thread", "space_id", "thread_id", "listed", "create_time_us", "row_id",
          postgresql_where=text("thread_id IS NOT NULL"), sqlite_where=text("thread_id IS NOT NULL")),
    Index("ix_chat_messages_sender", "sender_id", "create_time_us"),
    Index("ix_chat_messages_time", "create_time_us", "row_id"),
)

mentions = Table(
    "chat_mentions",
    metadata,
    Column("message_row_id", Integer, ForeignKey("chat_messages.row_id", ondelete="CASCADE"), primary_key=True),
    Column("user_id", String(128), primary_key=True),
    Index("ix_chat_mentions_user", "user_id", "message_row_id"),
)

FULL_TEXT_OBJECTS = frozenset({"chat_messages_fts", "search_vector", "ix_chat_messages_search_vector"})
"""Engine-specific full-text objects the migration makes and this metadata leaves out (FTS5's own
shadow tables are named ``chat_messages_fts_*``)."""
