"""API keys: each maps a hashed bearer key to a principal and the services it may reach."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, String, Table

from convener.store.schema import Json, metadata

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("principal", String(256), nullable=False),
    Column("scopes", Json, nullable=False),
    Column("create_time_us", BigInteger, nullable=False),
)
