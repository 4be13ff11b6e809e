"""The stores a benchmark runs on: a SQLite file in a temporary directory, and a private PostgreSQL schema."""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from convener.store.database import normalise_url

DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES)


def each_backend(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """(backend, database URL) for each chosen backend; the store is removed after its turn."""
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            yield "sqlite", f"sqlite:///{tmp}/bench.db"
    if args.backend in ("postgresql", "both"):
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        admin = create_engine(normalise_url(args.postgres_url))
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        options = {"options": f"-csearch_path={schema}"}  # as tests/conftest.py
        url = make_url(normalise_url(args.postgres_url)).update_query_dict(options)
        try:
            yield "postgresql", url.render_as_string(hide_password=False)
        finally:
            with admin.begin() as connection:
                connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()


def postgres_reachable(url: str) -> bool:
    """Whether the PostgreSQL server answers (benchmarks skip it, with a note, when it does not)."""
    engine = create_engine(normalise_url(url))
    try:
        with engine.connect():
            return True
    except OperationalError:
        return False
    finally:
        engine.dispose()


def median_ms(run: Callable[[], object], repeat: int) -> float:
    """The median wall time of ``repeat`` calls of ``run``, in milliseconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)
