"""Analytics tables: registered SQL sources, data agents, and conversations with their messages.

Contexts and messages are stored as their proto3 JSON (``Json``: JSONB on PostgreSQL), because they are
read and written whole; what is filtered or ordered on has its own indexed column.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Integer, String, Table, Text

from convener.store.schema import Json, metadata

sql_sources = Table(
    "analytics_sql_sources",
    metadata,
    Column("name", String(63), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("location", Text, nullable=False),
    Column("description", Text, nullable=False),
    Column("create_time_us", BigInteger, nullable=False),
)
"""``location`` is kept as given (a database URL may carry a password); it is shown masked."""

data_agents = Table(
    "analytics_data_agents",
    metadata,
    Column("agent_id", String(63), primary_key=True),
    Column("display_name", Text, nullable=False),
    Column("description", Text, nullable=False),
    Column("labels", Json, nullable=True),
    Column("staging_context", Json, nullable=True),
    Column("published_context", Json, nullable=True),
    Column("last_published_context", Json, nullable=True),
    Column("creator", String(255), nullable=False),
    Column("create_time_us", BigInteger, nullable=False),
    Column("update_time_us", BigInteger, nullable=False),
)

conversations = Table(
    "analytics_conversations",
    metadata,
    Column("conversation_id", String(64), primary_key=True),
    Column("agent_id", String(63), ForeignKey("analytics_data_agents.agent_id", ondelete="CASCADE"),
           nullable=False),
    Column("principal", String(255), nullable=False),
    Column("create_time_us", BigInteger, nullable=False),
    Column("last_used_time_us", BigInteger, nullable=False),
    Index("ix_analytics_conversations_principal", "principal", "last_used_time_us", "conversation_id"),
)
"""A conversation belongs to the principal who started it: nobody else lists or continues it."""

messages = Table(
    "analytics_messages",
    metadata,
    Column("conversation_id", String(64), ForeignKey("analytics_conversations.conversation_id",
                                                     ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("message", Json, nullable=False),
)
"""``seq`` orders a conversation's messages; a whole turn is written in one transaction."""
