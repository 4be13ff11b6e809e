"""A folder or a zip archive, read the same way: the files of an export, by relative path.

Exports arrive both ways (Slack and Google Takeout hand out zips; users unpack them). Members are
opened one at a time as binary streams, so nothing is read whole that a reader streams.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import IO, Self

from convener.api.errors import InvalidArgument


class Archive:
    """The files under ``path`` (a folder or a ``.zip``), as POSIX relative paths.

    ``markers`` are names (of files or folders) that sit at the export's root, such as Slack's
    ``users.json``: names are given relative to the folder holding the shallowest of them.
    """

    def __init__(self, path: Path, markers: tuple[str, ...] = ()) -> None:
        self.path = path
        if path.is_dir():
            self._zip: zipfile.ZipFile | None = None
            self._names = sorted(
                p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()
            )
        elif path.is_file() and zipfile.is_zipfile(path):
            self._zip = zipfile.ZipFile(path)
            self._names = sorted(i.filename for i in self._zip.infolist() if not i.is_dir())
        elif path.exists():
            raise InvalidArgument(f"{path} is neither a folder nor a zip archive")
        else:
            raise InvalidArgument(f"{path} does not exist")
        marked = self._marked_root(markers) if markers else None
        self._root = marked if marked is not None else self._common_root()
        self._present = set(self._names)

    def _marked_root(self, markers: tuple[str, ...]) -> str | None:
        found: list[tuple[str, ...]] = []
        for name in self._names:
            parts = PurePosixPath(name).parts
            found.extend(parts[:index] for index, part in enumerate(parts) if part in markers)
        if not found:
            return None
        shallowest = min(found, key=len)
        return "/".join(shallowest) + "/" if shallowest else ""

    def _common_root(self) -> str:
        """Zips often wrap everything in one top folder (``Takeout/``, ``My Workspace Slack export/``):
        names are given relative to the innermost folder that holds all files."""
        parts = [PurePosixPath(name).parts for name in self._names]
        root: list[str] = []
        while parts and all(len(p) > len(root) + 1 for p in parts):
            candidate = parts[0][len(root)]
            if any(p[len(root)] != candidate for p in parts):
                break
            root.append(candidate)
        return "/".join(root) + "/" if root else ""

    def names(self) -> list[str]:
        """Every file, relative to the export's root, sorted."""
        return [name[len(self._root):] for name in self._names]

    def exists(self, name: str) -> bool:
        return self._root + name in self._present

    @contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        full = self._root + name
        if self._zip is not None:
            with self._zip.open(full) as stream:
                yield stream
        else:
            with (self.path / full).open("rb") as stream:
                yield stream

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


class ClosingExport:
    """An export that keeps files open while it is read: close it, or use it in a ``with`` block."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
