"""SQL expressions every store-backed module builds the same way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, literal


def one_of(column: ColumnElement[Any], values: Iterable[Any]) -> ColumnElement[bool]:
    """``column IN (...)`` a fixed set of values, each its own bound parameter.

    ``column.in_(values)`` binds the list as one expanding parameter, which SQLAlchemy renders into the SQL anew
    at every execution: on a statement built once and run for every turn or result, that rendering cost more than
    the rest of its execution on the client. These parameters are rendered once, with the statement."""
    return column.in_([literal(value, column.type) for value in values])
