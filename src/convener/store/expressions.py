"""SQL expressions every store-backed module builds the same way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import BindParameter, ColumnElement, bindparam, literal


def one_of(column: ColumnElement[Any], values: Iterable[Any]) -> ColumnElement[bool]:
    """``column IN (...)`` a fixed set of values, each its own bound parameter.

    ``column.in_(values)`` binds the list as one expanding parameter, which SQLAlchemy renders into the SQL anew
    at every execution: on a statement built once and run for every turn or result, that rendering cost more than
    the rest of its execution on the client. These parameters are rendered once, with the statement."""
    return column.in_([literal(value, column.type) for value in values])


def among_parameters(column: ColumnElement[Any], name: str, count: int) -> ColumnElement[bool]:
    """``column IN (:name_0, ..., :name_<count - 1>)``: values that change with each execution, bound a parameter
    each (``numbered``), so that a statement built once per ``count`` is rendered once, where an expanding
    parameter is rendered anew at every execution. One parameter is an equality."""
    parameters: list[BindParameter[Any]] = [bindparam(f"{name}_{index}") for index in range(count)]
    return column == parameters[0] if count == 1 else column.in_(parameters)


def numbered(name: str, values: Iterable[Any]) -> dict[str, Any]:
    """The parameters of ``among_parameters(column, name, len(values))``: ``values`` by their place."""
    return {f"{name}_{index}": value for index, value in enumerate(values)}
