"""Relational schema of the lease engine's jobs (``leases``)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table

from convener.store.schema import Json, metadata

jobs = Table(
    "jobs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("task", String(64), nullable=False),
    Column("queue", String(64), nullable=False),
    Column("operation", String(512), nullable=False),
    Column("payload", Json, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("worker", String(256), nullable=True),
    Column("lease_until_us", BigInteger, nullable=False),
    Column("since_us", BigInteger, nullable=False),
    # A worker's next job: the oldest whose lease is 0 (queued) or lapsed.
    Index("ix_jobs_claim", "lease_until_us", "id"),
    Index("ix_jobs_operation", "operation"),
)
"""An unfinished job: queued (no worker, lease 0), held (a worker and a lease in the future) or stalled (a lease in
the past). A finished job's row is deleted."""
