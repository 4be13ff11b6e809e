"""``one_of``: a column among fixed values, rendered once with its statement (no expanding parameter)."""

from __future__ import annotations

from sqlalchemy import insert, select
from sqlalchemy.dialects import postgresql, sqlite

from convener.store.database import Database
from convener.store.expressions import one_of
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
