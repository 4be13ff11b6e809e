"""Relational schema of long-running operations."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Index, Integer, String, Table

from convener.store.schema import Json, metadata

operations = Table(
    "operations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("location", String(256), nullable=False),
    Column("operation_id", String(128), nullable=False),
    Column("owner", String(256), nullable=False),
    Column("create_time_us", BigInteger, nullable=False),
    Column("done", Boolean, nullable=False),
    Column("cancel_requested", Boolean, nullable=False),
    Column("body", Json, nullable=False),
    Index("ix_operations_id", "location", "operation_id", unique=True),
    # list_operations: a location's operations, newest first.
    Index("ix_operations_keyset", "location", "create_time_us", "operation_id"),
)
"""A google.longrunning.Operation, stored whole; ``done`` and the cancel flag are columns for the workers."""
