"""The migrations are numbered files whose number is their revision, in one line of descent.

``Database.migrate`` relies on it to recognise a store at the head without loading Alembic."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import text

from convener.store.database import MIGRATIONS, Database, newest_revision

FILES = sorted((MIGRATIONS / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def _assigned(source: str, name: str) -> str | None:
    match = re.search(rf'^{name} = (?:"([^"]*)"|None)', source, re.MULTILINE)
    assert match is not None, f"no {name} line"
    return match.group(1)


def test_each_file_is_its_number_and_revises_the_one_before() -> None:
    assert FILES, "no migrations found"
    previous = None
    for path in FILES:
        source = path.read_text()
        assert _assigned(source, "revision") == path.name.split("_", 1)[0], path.name
        assert _assigned(source, "down_revision") == previous, path.name
        previous = path.name.split("_", 1)[0]
    assert newest_revision() == previous
    assert len(list((MIGRATIONS / "versions").glob("*.py"))) == len(FILES), "a migration file is not numbered"


def test_a_new_store_has_no_revision_and_a_migrated_one_the_newest(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'new.db'}")
    try:
        assert database.revision() is None
        database.migrate()
        assert database.revision() == newest_revision()
        database.migrate()  # at the head: recognised without Alembic, changes nothing
        assert database.revision() == newest_revision()
    finally:
        database.dispose()


def test_a_store_behind_the_head_is_upgraded(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        first = FILES[0].name.split("_", 1)[0]
        database.migrate(first)
        assert database.revision() == first
        database.migrate()
        assert database.revision() == newest_revision()
        with database.engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
    finally:
        database.dispose()
