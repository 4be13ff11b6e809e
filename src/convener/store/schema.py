"""Shared pieces of the relational schema: the metadata every table joins, and the JSON type."""

from __future__ import annotations

from sqlalchemy import JSON, Column, LargeBinary, MetaData, String, Table
from sqlalchemy.dialects.postgresql import JSONB

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

Json = JSON().with_variant(JSONB(), "postgresql")
"""Documents we store whole and never query inside: JSONB on PostgreSQL, JSON text on SQLite."""

installation = Table(
    "installation",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", LargeBinary, nullable=False),
)
"""Per-installation values shared by every server process on the same store (e.g. the token secret)."""
