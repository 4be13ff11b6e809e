"""INSERT … ON CONFLICT DO UPDATE for both engines: what makes a re-import land on the same rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert


def upsert(dialect: str, table: Table, keys: Sequence[str], update: Sequence[str]) -> Insert:
    """An insert of ``table`` that, on a row with the same ``keys``, updates the ``update`` columns
    instead (or leaves the row alone when ``update`` is empty). Execute it with a list of rows."""
    statement: Any = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)
    if not update:
        return statement.on_conflict_do_nothing(index_elements=list(keys))  # type: ignore[no-any-return]
    return statement.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=list(keys), set_={column: statement.excluded[column] for column in update}
    )
