"""What belongs to the store itself, and so is never a source: its data folder, its database file, and (for a
PostgreSQL store) its server and database, however a URL spells them."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL, make_url

POSTGRES_PORT = 5432
LOOPBACK_NAMES = frozenset({"", "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


@dataclass(frozen=True)
class ServerDatabase:
    """A PostgreSQL database as the server sees it: which machine, which port, which database."""

    host: str
    """``local`` for this machine (loopback, a Unix socket, this machine's own names and addresses)."""
    port: int
    database: str


def host_identity(host: str | None) -> str:
    """``local`` when ``host`` is this machine, else the host lower-cased: ``localhost``, ``127.0.0.2``,
    ``[::1]``, a socket folder and this machine's own name all mean the same server."""
    name = (host or "").strip().strip("[]").lower().rstrip(".")
    if name in LOOPBACK_NAMES or name.startswith("/") or name == "@":
        return "local"
    try:
        if ipaddress.ip_address(name).is_loopback or name in _own_addresses():
            return "local"
        return str(ipaddress.ip_address(name))
    except ValueError:
        pass
    if name in (socket.gethostname().lower(), socket.getfqdn().lower()):
        return "local"
    return name


def _own_addresses() -> frozenset[str]:
    """This machine's addresses under its own name (from the hosts file or resolver); none if unknown."""
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None)
    except OSError:
        return frozenset()
    return frozenset(str(info[4][0]) for info in infos)


def server_database(url: URL) -> ServerDatabase:
    """Where a PostgreSQL URL connects, with libpq's defaults and its query-string overrides applied."""
    query = {key: value if isinstance(value, str) else value[0] for key, value in url.query.items() if value}
    host = query.get("host") or url.host
    port = query.get("port") or url.port or POSTGRES_PORT
    database = query.get("dbname") or url.database or query.get("user") or url.username or "postgres"
    try:
        number = int(port)
    except ValueError:
        number = -1
    return ServerDatabase(host_identity(host), number, database)


@dataclass(frozen=True)
class OwnStore:
    data_dir: Path
    database_file: Path | None
    """The SQLite file of the store, when the store is one."""
    server: ServerDatabase | None
    """The PostgreSQL database of the store, when the store is one."""

    @classmethod
    def of(cls, data_dir: Path, database_url: str) -> OwnStore:
        folder = data_dir.expanduser().resolve()
        url = make_url(database_url)
        backend = url.get_backend_name()
        if backend in ("sqlite", "duckdb"):
            file = Path(url.database).expanduser().resolve() if url.database and url.database != ":memory:" else None
            return cls(folder, file, None)
        if backend in ("postgresql", "postgres"):
            return cls(folder, None, server_database(url))
        return cls(folder, None, None)

    def is_database(self, path: Path) -> bool:
        """Whether a resolved ``path`` is the store's database file or its ``-wal``/``-shm``/``-journal``."""
        file = self.database_file
        return file is not None and path.parent == file.parent and (
            path.name == file.name or path.name.startswith(f"{file.name}-"))

    def in_data_dir(self, path: Path) -> bool:
        """Whether a resolved ``path`` is the data folder or lies in it. Convener keeps its own files there (the
        demo's database, spill files); the operator may name them, a remote caller never."""
        return path == self.data_dir or path.is_relative_to(self.data_dir)

    def lies_in(self, path: Path) -> bool:
        """Whether the store lies inside the folder ``path``: reading that folder for a remote caller could
        reach the store's files too."""
        return any(own is not None and own != path and own.is_relative_to(path)
                   for own in (self.data_dir, self.database_file))
