"""A database URL a caller names as a data source.

A file-backed URL (``sqlite:///…``, ``duckdb:///…``) is a path in other words: it is resolved to its file and
held to the same roots as a plain path, so a URL cannot reach what the path is refused. A server URL may name
any server except the store's own database, however it is spelt (``localhost`` or ``127.0.0.1``, the port
written or left to its default, the database in the path or in ``?dbname=``). Parameters that make the
driver read local files (client certificates, password and service files) are refused: they are paths too.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from convener.api.errors import InvalidArgument, PermissionDenied
from convener.outside.limits import GATE_DATABASE_URL
from convener.outside.own import OwnStore, server_database
from convener.outside.paths import Roots, check_local_path, check_path

MAX_URL = GATE_DATABASE_URL

FILE_BACKENDS = frozenset({"sqlite", "duckdb"})
SERVER_BACKENDS = frozenset({"postgresql", "mysql", "mariadb"})
FILE_PARAMETERS = frozenset({
    "sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcrldir", "passfile", "service", "servicefile",
    "ssl_ca", "ssl_cert", "ssl_key", "ssl_capath", "read_default_file", "local_infile",
})  # fmt: skip
"""Query parameters (libpq's, MySQL drivers') that name files on the server or let the server read them."""


@dataclass(frozen=True)
class DatabaseUrl:
    """A checked database URL: ``url`` as the engine should open it (a file URL with its real path)."""

    url: URL
    backend: str

    def render(self) -> str:
        return self.url.render_as_string(hide_password=False)


def parse(text: str, field: str) -> URL:
    if len(text) > MAX_URL:
        raise InvalidArgument(f"{field} is longer than {MAX_URL} characters")
    try:
        url = make_url(text.strip())
    except (ArgumentError, ValueError):
        raise InvalidArgument(f"{field} is not a database URL (like postgresql://host/db or sqlite:///file)") from None
    if url.drivername.split("+")[0] == "postgres":  # libpq's spelling; SQLAlchemy knows it as postgresql
        url = url.set(drivername="postgresql" + url.drivername[len("postgres"):])
    return url


def check_database_url(text: str, roots: Roots | None, own: OwnStore, field: str = "location") -> DatabaseUrl:
    """The URL a caller named, checked: a supported backend, not the store, files inside ``roots`` (any file
    but the store's when ``roots`` is None: the operator's own command on the server)."""
    url = parse(text, field)
    backend = url.get_backend_name()
    if backend in FILE_BACKENDS:
        if url.query:
            raise InvalidArgument(f"{field}: a {backend} URL takes no query parameters; name the file only")
        if not url.database or url.database == ":memory:" or url.database.startswith("file:"):
            raise InvalidArgument(f"{field}: the {backend} URL must name a database file")
        path = (check_local_path(url.database, own, field) if roots is None
                else check_path(url.database, roots, own, field))
        return DatabaseUrl(url.set(database=str(path)), backend)
    if backend not in SERVER_BACKENDS:
        known = ", ".join(sorted(FILE_BACKENDS | SERVER_BACKENDS))
        raise InvalidArgument(f"{field}: database URLs of kind {backend!r} are not supported (supported: {known})")
    named = sorted(FILE_PARAMETERS.intersection(key.lower() for key in url.query))
    if named:
        raise InvalidArgument(f"{field}: the URL parameter {named[0]!r} names a file on the server, which a data "
                              "source may not")
    if backend == "postgresql" and own.server is not None and server_database(url) == own.server:
        raise PermissionDenied(f"{field} names this server's own store, which is never a source; name another "
                               "database")
    return DatabaseUrl(url, backend)
