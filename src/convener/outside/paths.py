"""A file or folder a caller names: where it really is, and whether the server may read it.

The path is made absolute with ``~`` expanded and every symbolic link resolved *before* it is compared with
the roots, so a link inside a root cannot lead out of it. The store's database file is never a source,
whatever the roots say; for a remote caller neither is anything in the data folder, nor a folder holding it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from convener.api.errors import InvalidArgument, PermissionDenied
from convener.outside.limits import GATE_PATH
from convener.outside.own import OwnStore

MAX_PATH = GATE_PATH


@dataclass(frozen=True)
class Roots:
    """Folders a service's callers may name files in, and the setting that lists them."""

    folders: tuple[Path, ...]
    setting: str
    local_command: str
    """The command an operator runs on the server to read a path outside the roots."""

    @classmethod
    def of(cls, folders: Sequence[Path], setting: str, local_command: str) -> Roots:
        return cls(tuple(Path(folder).expanduser().resolve() for folder in folders), setting, local_command)

    def contain(self, path: Path) -> bool:
        return any(within(path, folder) for folder in self.folders)


def within(path: Path, folder: Path) -> bool:
    """Whether resolved ``path`` is ``folder`` or lies below it (whole parts: ``/a/bc`` is not in ``/a/b``)."""
    return path == folder or path.is_relative_to(folder)


def real_path(value: str | os.PathLike[str], field: str = "path") -> Path:
    """``value`` absolute, ``~`` expanded and links resolved; INVALID_ARGUMENT for what no file system could
    hold (a NUL byte, an unknown ``~user``, an endless name, a link loop)."""
    text = os.fspath(value)
    if not text.strip():
        raise InvalidArgument(f"{field} is required")
    if len(text) > MAX_PATH:
        raise InvalidArgument(f"{field} is longer than {MAX_PATH} characters")
    try:
        return Path(text).expanduser().resolve()
    except (ValueError, RuntimeError, OSError) as error:
        raise InvalidArgument(f"{field} {text[:200]!r} is not usable ({type(error).__name__})") from None


def not_the_store(path: Path, own: OwnStore, shown: str, field: str, *, remote: bool) -> None:
    """PERMISSION_DENIED when ``path`` is the store's database file; for a ``remote`` caller also anything in
    the data folder, and any folder that holds the data folder or the database."""
    if own.is_database(path) or (remote and (own.in_data_dir(path) or own.lies_in(path))):
        raise PermissionDenied(f"{field} {shown[:200]!r} is (or holds) this server's own store, which is never a "
                               "source; name another file or folder")


def check_path(value: str | os.PathLike[str], roots: Roots, own: OwnStore, field: str = "path") -> Path:
    """The real path of ``value``, which a remote caller may read: inside ``roots`` and not the store."""
    path = real_path(value, field)
    shown = os.fspath(value)
    not_the_store(path, own, shown, field, remote=True)
    if not roots.contain(path):
        raise PermissionDenied(f"{field} {shown[:200]!r} is outside the folders the server may read; the operator "
                               f"can add its folder to {roots.setting} or run `{roots.local_command}` on the server")
    return path


def check_local_path(value: str | os.PathLike[str], own: OwnStore, field: str = "path") -> Path:
    """The real path of ``value`` for the operator's own commands on the server: any path but the store."""
    path = real_path(value, field)
    not_the_store(path, own, os.fspath(value), field, remote=False)
    return path
