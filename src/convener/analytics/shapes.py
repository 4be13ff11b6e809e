"""The engine-neutral values the analytics modules hand each other: what a data source holds (tables and
columns, with samples), and what a query returned. The wire models (``models.py``) are built from these.

Column types are normalised to the BigQuery names Google's ``Schema.fields[].type`` uses, so a DuckDB
``BIGINT``, a SQLite ``integer`` and a PostgreSQL ``int8`` all read ``INTEGER``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STRING = "STRING"
INTEGER = "INTEGER"
FLOAT = "FLOAT"
NUMERIC = "NUMERIC"
BOOLEAN = "BOOLEAN"
DATE = "DATE"
DATETIME = "DATETIME"
TIMESTAMP = "TIMESTAMP"
TIME = "TIME"
BYTES = "BYTES"
JSON = "JSON"
RECORD = "RECORD"

NUMBER_TYPES = frozenset({INTEGER, FLOAT, NUMERIC})
TIME_TYPES = frozenset({DATE, DATETIME, TIMESTAMP})


@dataclass(frozen=True)
class ColumnInfo:
    """One column of a table. ``samples`` are a few distinct non-null values, as text, for prompts and for
    the offline planner's matching of words in a question to values in the data."""

    name: str
    type: str
    description: str | None = None
    samples: tuple[str, ...] = ()
    synonyms: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableInfo:
    """One table or view, named as SQL on its source refers to it (``cars``, or ``schema.table``)."""

    name: str
    columns: tuple[ColumnInfo, ...]
    description: str | None = None
    row_count: int | None = None
    synonyms: tuple[str, ...] = ()

    def column(self, name: str) -> ColumnInfo | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)


@dataclass(frozen=True)
class ResultColumn:
    name: str
    type: str


@dataclass
class QueryResult:
    """Rows as Python values (``int``, ``float``, ``Decimal``, ``str``, ``bool``, ``date``, ``datetime``,
    ``None``…), at most the row cap and the byte cap; ``truncated`` says whether the query had more, and
    ``cut_at_bytes`` names the byte cap when that is what cut it."""

    columns: tuple[ResultColumn, ...]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    truncated: bool = False
    cut_at_bytes: int | None = None
