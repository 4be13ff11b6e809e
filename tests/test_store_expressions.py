"""``one_of`` and ``among_parameters``: a column among fixed values, or among values bound at each execution,
rendered once with its statement (no expanding parameter)."""

from __future__ import annotations

from sqlalchemy import insert, select
from sqlalchemy.dialects import postgresql, sqlite

from convener.store.database import Database
from convener.store.expressions import among_parameters, numbered, one_of
from convener.store.schema import installation


def test_one_of_binds_each_value_once_and_selects_the_rows_among_them(database_url: str) -> None:
    statement = select(installation.c.key).where(one_of(installation.c.key, ("b", "c"))).order_by(installation.c.key)
    for dialect in (postgresql.dialect(), sqlite.dialect()):
        assert "POSTCOMPILE" not in str(statement.compile(dialect=dialect)), "rendered at every execution"
    database = Database(database_url)
    try:
        with database.transaction() as connection:
            connection.execute(insert(installation), [{"key": key, "value": b"x"} for key in "abcd"])
        with database.reading() as connection:
            assert connection.execute(statement).scalars().all() == ["b", "c"]
    finally:
        database.dispose()


def test_among_parameters_binds_a_parameter_per_value_and_numbered_fills_them(database_url: str) -> None:
    database = Database(database_url)
    try:
        with database.transaction() as connection:
            connection.execute(insert(installation), [{"key": key, "value": b"x"} for key in "abcd"])
        for values in (["c"], ["d", "a"], ["a", "b", "zz"]):
            statement = select(installation.c.key).where(
                among_parameters(installation.c.key, "key", len(values))).order_by(installation.c.key)
            assert "POSTCOMPILE" not in str(statement.compile(dialect=postgresql.dialect()))
            with database.reading() as connection:
                assert connection.execute(statement, numbered("key", values)).scalars().all() == \
                    sorted(set(values) & set("abcd"))
        assert numbered("pk", iter([7, 9])) == {"pk_0": 7, "pk_1": 9}
    finally:
        database.dispose()
