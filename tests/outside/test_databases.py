"""Database URLs and paths at the gate: the store in every spelling, files held to the roots."""

from __future__ import annotations

from pathlib import Path

import pytest

from convener.api.errors import InvalidArgument, PermissionDenied
from convener.outside.databases import check_database_url
from convener.outside.own import OwnStore, host_identity
from convener.outside.paths import Roots, check_local_path, check_path

STORE = "postgresql+psycopg://convener:secret@127.0.0.1:5432/convener"


@pytest.fixture
def own(tmp_path: Path) -> OwnStore:
    return OwnStore.of(tmp_path / "data", STORE)


@pytest.mark.parametrize("url", [
    STORE,
    "postgresql://convener@localhost/convener",
    "postgres://other-user@127.0.0.1:5432/convener",
    "postgresql+psycopg2://[::1]:5432/convener",
    "postgresql://127.0.0.2/convener",
    "postgresql:///convener",
    "postgresql://elsewhere.invalid/postgres?host=/var/run/postgresql&dbname=convener",
    "postgresql://127.0.0.1/postgres?dbname=convener&port=5432",
])
def test_the_store_s_postgresql_database_in_any_spelling_is_refused(own: OwnStore, url: str) -> None:
    with pytest.raises(PermissionDenied, match="own store"):
        check_database_url(url, None, own)


@pytest.mark.parametrize("url", [
    "postgresql://convener@127.0.0.1:5432/analytics",
    "postgresql://convener@127.0.0.1:5433/convener",
    "postgresql://reader@db.example.test/convener",
])
def test_other_postgresql_databases_pass(own: OwnStore, url: str) -> None:
    assert check_database_url(url, None, own).backend == "postgresql"


def test_loopback_spellings_are_one_host() -> None:
    assert {host_identity(h) for h in ("", "localhost", "127.0.0.1", "127.1.2.3", "[::1]", "::1", "/tmp")} == {"local"}
    assert host_identity("db.example.test") == "db.example.test"


def test_file_urls_resolve_to_their_file_and_are_held_to_the_roots(tmp_path: Path) -> None:
    roots = Roots.of([tmp_path / "roots"], "CONVENER_ANALYTICS_ROOTS", "convener data add-source")
    (tmp_path / "roots").mkdir()
    store = tmp_path / "convener.db"
    store.write_bytes(b"")
    own = OwnStore.of(tmp_path / "data", f"sqlite:///{store}")
    inside = tmp_path / "roots" / "shop.sqlite"
    checked = check_database_url(f"sqlite:///{tmp_path}/roots/../roots/shop.sqlite", roots, own)
    assert checked.url.database == str(inside)
    link = tmp_path / "roots" / "link.sqlite"
    link.symlink_to(store)
    for url in (f"sqlite:///{link}", f"sqlite:///{store}", f"duckdb:///{link}"):
        with pytest.raises(PermissionDenied, match="own store"):
            check_database_url(url, roots, own)
        with pytest.raises(PermissionDenied, match="own store"):
            check_database_url(url, None, own)  # the operator's CLI, too
    outside = tmp_path / "other.sqlite"
    with pytest.raises(PermissionDenied, match="CONVENER_ANALYTICS_ROOTS"):
        check_database_url(f"sqlite:///{outside}", roots, own)
    assert check_database_url(f"sqlite:///{outside}", None, own).url.database == str(outside)


def test_paths_resolve_links_before_the_roots_check(tmp_path: Path) -> None:
    roots = Roots.of([tmp_path / "roots"], "CONVENER_KNOWLEDGE_ROOTS", "convener knowledge ingest")
    (tmp_path / "roots").mkdir()
    (tmp_path / "secret").mkdir()
    (tmp_path / "roots" / "door").symlink_to(tmp_path / "secret")
    own = OwnStore.of(tmp_path / "data", f"sqlite:///{tmp_path / 'data' / 'convener.db'}")
    with pytest.raises(PermissionDenied, match="CONVENER_KNOWLEDGE_ROOTS"):
        check_path(tmp_path / "roots" / "door", roots, own)
    with pytest.raises(PermissionDenied, match="CONVENER_KNOWLEDGE_ROOTS"):
        check_path(f"{tmp_path}/roots/../secret", roots, own)
    with pytest.raises(PermissionDenied, match="CONVENER_KNOWLEDGE_ROOTS"):
        check_path(tmp_path / "rootsx", roots, own)  # a sibling sharing a prefix is not inside
    assert check_path(tmp_path / "roots" / "a.md", roots, own) == tmp_path / "roots" / "a.md"
    assert check_local_path(tmp_path / "data" / "demo.duckdb", own), "the operator may name the data folder's files"
    with pytest.raises(PermissionDenied, match="own store"):
        check_local_path(tmp_path / "data" / "convener.db-wal", own)
    for bad in ("", "a\0b", "x" * 5000):
        with pytest.raises(InvalidArgument):
            check_path(bad, roots, own)
