"""The documents of a knowledge source (a folder, a zip or tar archive, or one file), read safely.

Sources come from users and from the web (saved site mirrors, release tarballs), so every entry is treated
as hostile: a name that could climb out of the root, a link, a special file, an oversized or suspiciously
compressed member each become a ``SourceProblem`` for that entry, and the walk goes on. Only the limits of
the source as a whole stop it, with one last problem that says so. Nothing is extracted to disk and every
read is bounded, so memory holds one file at a time; a tar, which can only be read in order, is read
through once into a spool (memory, then a temporary file) and handed out sorted from there.
"""

from __future__ import annotations

import lzma
import os
import re
import stat
import tarfile
import tempfile
import unicodedata
import zipfile
import zlib
from collections.abc import Generator, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NamedTuple

from convener.api.errors import InvalidArgument

SUPPORTED_SUFFIXES: frozenset[str] = frozenset({
    ".md", ".markdown", ".mdx", ".html", ".htm", ".xhtml", ".rst", ".rest", ".txt", ".text",
})


@dataclass(frozen=True)
class SourceFile:
    """One document: its POSIX path relative to the source root (NFC), and its bytes as read."""

    path: str
    data: bytes


@dataclass(frozen=True)
class SourceProblem:
    """An entry that was not read, or the end of a walk that had to stop, in words fit for the user."""

    path: str
    reason: str
    stops: bool = False
    """The walk ended here (a limit of the whole source, a corrupt archive): files not seen were not read,
    so they must not count as removed."""


@dataclass(frozen=True)
class Limits:
    """How much one source may hold. Sizes are measured while reading: declared sizes can lie."""

    max_file_bytes: int = 20 * 1024 * 1024
    max_total_bytes: int = 2 * 1024**3
    max_files: int = 200_000
    max_ratio: int = 200


_Entry = SourceFile | SourceProblem

_CHUNK = 1024 * 1024
_RATIO_FLOOR = 1024 * 1024
"""Up to this size a member is read whatever its compression ratio: a few hundred KB of repetitive text
compresses more than 200 times and is harmless; bombs matter because they are large."""
_SPOOL_IN_MEMORY = 32 * 1024 * 1024
_DISPLAY_LENGTH = 200

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # bytes that were not UTF-8, smuggled through surrogateescape
_UNSHOWABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_DRIVE = re.compile(r"[A-Za-z]:")

_UNSAFE_PATH = "unsafe path in archive"
_NOT_UTF8_NAME = "file name is not valid UTF-8"
_LINK_OR_SPECIAL = "archive member is a link or special file"
_TAR_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError)


class _Stop(Exception):
    """The walk cannot go on; ``problem`` says why and is handed out last."""

    def __init__(self, problem: SourceProblem) -> None:
        super().__init__(problem.reason)
        self.problem = problem


def source_kind(path: Path) -> str:
    """``"folder"``, ``"zip"``, ``"tar"`` or ``"file"`` (one supported document).

    Archives are recognised by their content, not their suffix: downloads are often misnamed.
    Raises InvalidArgument when ``path`` is missing or none of these.
    """
    if path.is_dir():
        return "folder"
    if not path.exists():
        raise InvalidArgument(f"{path} does not exist")
    if not path.is_file():
        raise InvalidArgument(f"{path} is neither a folder nor a regular file")
    try:
        if zipfile.is_zipfile(path):
            return "zip"
        if _is_tar(path):
            return "tar"
    except OSError as error:
        raise InvalidArgument(f"{path} cannot be read ({_why(error)})") from None
    if _supported(path.name):
        return "file"
    raise InvalidArgument(
        f"{path.name} is not a folder, a zip or tar archive, or a document "
        f"({', '.join(sorted(SUPPORTED_SUFFIXES))})"
    )


def _is_tar(path: Path) -> bool:
    """``tarfile.is_tarfile``, which lets some errors of a damaged compressed file escape (Python 3.11)."""
    try:
        return tarfile.is_tarfile(path)
    except (EOFError, zlib.error, lzma.LZMAError):
        return False


def read_source(path: Path, limits: Limits = Limits()) -> Iterator[SourceFile | SourceProblem]:
    """Every supported file under `path`, sorted by relative path, one at a time (never all in memory).

    Raises InvalidArgument when first advanced if ``path`` is missing, unsupported, or an archive that
    cannot be opened at all. Any other trouble is a SourceProblem for its entry and the walk goes on;
    exceeding ``limits.max_files`` (files and problems both count) or ``limits.max_total_bytes`` ends
    the walk with one last SourceProblem.
    """
    kind = source_kind(path)
    if kind == "tar":
        yield from _sorted_through_spool(_tar_entries(path, limits), limits)
    elif kind == "zip":
        yield from _within_limits(_zip_entries(path, limits), limits)
    elif kind == "folder":
        yield from _within_limits(_folder_entries(path, limits), limits)
    else:
        yield from _within_limits(_file_entries(path, limits), limits)


class _Budget:
    """What a walk has handed out so far, against the limits of the source as a whole."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.entries = 0
        self.total_bytes = 0

    def overrun(self, entry: _Entry) -> SourceProblem | None:
        """The problem that ends the walk, if handing out ``entry`` would exceed a limit."""
        self.entries += 1
        if self.entries > self.limits.max_files:
            return SourceProblem(entry.path, f"source has more than {self.limits.max_files:,} files; stopped",
                                 stops=True)
        if isinstance(entry, SourceFile):
            self.total_bytes += len(entry.data)
            if self.total_bytes > self.limits.max_total_bytes:
                return SourceProblem(
                    entry.path, f"source exceeds {_size(self.limits.max_total_bytes)} in total; stopped", stops=True
                )
        return None


def _within_limits(entries: Generator[_Entry, None, None], limits: Limits) -> Iterator[_Entry]:
    budget = _Budget(limits)
    with closing(entries):
        for entry in entries:
            overrun = budget.overrun(entry)
            if overrun is not None:
                yield overrun
                return
            yield entry


def _sorted_through_spool(entries: Generator[_Entry, None, None], limits: Limits) -> Iterator[_Entry]:
    """A tar can only be read in order, and decompressing it again for each member would be quadratic:
    its documents are read through once into a spool and handed out sorted afterwards."""
    budget = _Budget(limits)
    index: list[tuple[str, int, SourceProblem | None, int, int]] = []
    last: SourceProblem | None = None
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY) as spool, closing(entries):
        try:
            for order, entry in enumerate(entries):
                last = budget.overrun(entry)
                if last is not None:
                    break
                if isinstance(entry, SourceFile):
                    index.append((entry.path, order, None, spool.tell(), len(entry.data)))
                    spool.write(entry.data)
                else:
                    index.append((entry.path, order, entry, 0, 0))
        except _Stop as stop:
            last = stop.problem
        index.sort(key=lambda item: (item[0], item[1]))
        for path, _, problem, offset, size in index:
            if problem is not None:
                yield problem
            else:
                spool.seek(offset)
                yield SourceFile(path, spool.read(size))
    if last is not None:
        yield last


# Folders and single files


class _Pending(NamedTuple):
    """A folder to list or a file to read: ``path`` relative to the root, ``real`` its resolved location."""

    path: str
    real: str
    folder: bool
    link: bool = False


def _folder_entries(root: Path, limits: Limits) -> Generator[_Entry, None, None]:
    """Depth first, siblings sorted as the paths they lead to (folder ``a`` sorts as ``a/``, after
    ``a-b.md``), so files come out in path order without listing the whole tree first."""
    real_root = os.path.realpath(root)
    seen_folders = {real_root}
    stack: list[_Pending | SourceProblem] = [_Pending("", real_root, True)]
    while stack:
        item = stack.pop()
        if isinstance(item, SourceProblem):
            yield item
        elif not item.folder:
            yield _read_file(item.path, item.real, limits)
        else:
            try:
                children = _children(item, real_root, seen_folders)
            except OSError as error:
                yield SourceProblem(item.path or ".", f"folder cannot be read ({_why(error)})")
                continue
            stack.extend(reversed(children))


def _children(folder: _Pending, real_root: str, seen_folders: set[str]) -> list[_Pending | SourceProblem]:
    """The folder's visible sub-folders and supported files, sorted. Links are followed only inside the
    root, and only to folders not already listed (a link loop would otherwise never end); real folders
    are always read."""
    keyed: list[tuple[str, _Pending | SourceProblem]] = []
    with os.scandir(folder.real) as listing:
        for entry in listing:
            if entry.name.startswith("."):
                continue
            is_folder = _is_folder(entry)
            if not is_folder and not _supported(entry.name):
                continue
            path = _join(folder.path, unicodedata.normalize("NFC", entry.name))
            keyed.append((path + "/" if is_folder else path, _child(entry, path, is_folder, real_root)))
    keyed.sort(key=lambda pair: pair[0])
    seen_folders.update(child.real for _, child in keyed if isinstance(child, _Pending) and not child.link)
    children: list[_Pending | SourceProblem] = []
    for _, child in keyed:
        if isinstance(child, _Pending) and child.folder and child.link:
            if child.real in seen_folders:
                child = SourceProblem(child.path, "link to a folder that is read elsewhere")
            else:
                seen_folders.add(child.real)
        children.append(child)
    return children


def _child(entry: os.DirEntry[str], path: str, is_folder: bool, real_root: str) -> _Pending | SourceProblem:
    reason = _name_problem(entry.name, "unsafe file name")
    if reason is not None:
        return SourceProblem(_display(path), reason)
    if not entry.is_symlink():
        return _Pending(path, entry.path, is_folder)
    real = os.path.realpath(entry.path)
    if not _inside(real, real_root):
        return SourceProblem(path, "link points outside the source")
    if not os.path.exists(real):
        return SourceProblem(path, "broken link")
    return _Pending(path, real, is_folder, link=True)


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _file_entries(path: Path, limits: Limits) -> Generator[_Entry, None, None]:
    name = unicodedata.normalize("NFC", path.name)
    reason = _name_problem(name, "unsafe file name")
    if reason is not None:
        yield SourceProblem(_display(name), reason)
    else:
        yield _read_file(name, os.path.realpath(path), limits)


def _read_file(path: str, real: str, limits: Limits) -> _Entry:
    """Checked to be a regular file before opening (opening a FIFO or device can block or have effects),
    opened without following a link swapped in since, and read no further than the limit."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        if not stat.S_ISREG(os.stat(real).st_mode):
            return SourceProblem(path, "not a regular file")
        with open(os.open(real, flags), "rb", buffering=0) as stream:
            if os.fstat(stream.fileno()).st_size > limits.max_file_bytes:
                return SourceProblem(path, _too_large(limits))
            data = _read_bounded(stream, limits.max_file_bytes + 1)
    except OSError as error:
        return SourceProblem(path, f"file cannot be read ({_why(error)})")
    if len(data) > limits.max_file_bytes:
        return SourceProblem(path, _too_large(limits))
    return SourceFile(path, data)


# Zip archives


def _zip_entries(path: Path, limits: Limits) -> Generator[_Entry, None, None]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as error:
        raise InvalidArgument(f"{path.name} is not a readable zip archive ({error})") from None
    with archive:
        listed = sorted(_zip_listing(archive.infolist()), key=lambda item: (item[0], item[1]))
        previous = None
        for member_path, _, member in listed:
            if isinstance(member, SourceProblem):
                yield member
            elif member_path == previous:
                yield SourceProblem(member_path, "duplicate path in archive")
            else:
                previous = member_path
                yield _read_zip_member(archive, member, member_path, limits)


def _zip_listing(members: list[zipfile.ZipInfo]) -> Iterator[tuple[str, int, zipfile.ZipInfo | SourceProblem]]:
    for order, member in enumerate(members):
        if member.is_dir() or stat.S_ISDIR(member.external_attr >> 16):
            continue
        located = _member_path(member.filename)
        if isinstance(located, SourceProblem):
            yield located.path, order, located
        elif located is not None:
            yield located, order, member


def _read_zip_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, path: str, limits: Limits) -> _Entry:
    """The header's sizes are checked first (cheap), then enforced while reading: the decompressor can
    consume no more than the compressed size, so output beyond ``max_ratio`` times that is a bomb."""
    if member.flag_bits & 0x1:
        return SourceProblem(path, "archive member is encrypted")
    if stat.S_IFMT(member.external_attr >> 16) not in (0, stat.S_IFREG):
        return SourceProblem(path, _LINK_OR_SPECIAL)
    ratio_cap = max(limits.max_ratio * member.compress_size, _RATIO_FLOOR)
    if member.file_size > limits.max_file_bytes:
        return SourceProblem(path, _too_large(limits))
    if member.file_size > ratio_cap:
        return SourceProblem(path, _too_compressed(limits))
    try:
        with archive.open(member) as stream:
            data = _read_bounded(stream, min(limits.max_file_bytes, ratio_cap) + 1)
    except zipfile.BadZipFile as error:
        corrupt = "has a bad checksum" if "CRC" in str(error) else "is corrupt or truncated"
        return SourceProblem(path, f"archive member {corrupt}")
    except NotImplementedError:
        return SourceProblem(path, "archive member uses an unsupported compression method")
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError):
        return SourceProblem(path, "archive member is corrupt or truncated")
    if len(data) > ratio_cap:
        return SourceProblem(path, _too_compressed(limits))
    if len(data) > limits.max_file_bytes:
        return SourceProblem(path, _too_large(limits))
    return SourceFile(path, data)


# Tar archives


def _tar_entries(path: Path, limits: Limits) -> Generator[_Entry, None, None]:
    """Members in archive order, streamed: a compressed tar is decompressed once, front to back.

    A member's header says how far the stream must be decompressed to pass it, so a bomb (a gigabyte of
    zeros in a member we would skip anyway) is refused before any of it is decompressed.
    """
    expansion_cap = max(limits.max_ratio * path.stat().st_size, _RATIO_FLOOR)
    with _open_tar(path) as archive:
        seen: set[str] = set()
        while True:
            try:
                member = archive.next()
            except _TAR_ERRORS:
                raise _Stop(SourceProblem(_display(path.name), "archive is corrupt or truncated; stopped",
                                          stops=True)) from None
            if member is None:
                return
            archive.members.clear()  # type: ignore[attr-defined]  # a stream needs no index of what it passed
            if member.offset_data + member.size > expansion_cap:
                raise _Stop(SourceProblem(
                    _display(member.name),
                    f"archive expands more than {limits.max_ratio} times (possible archive bomb); stopped",
                    stops=True,
                ))
            entry = _tar_member(archive, member, seen, limits)
            if entry is not None:
                yield entry


def _open_tar(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(path, mode="r|*", encoding="utf-8", errors="surrogateescape")
    except _TAR_ERRORS as error:
        raise InvalidArgument(f"{path.name} is not a readable tar archive ({error})") from None


def _tar_member(archive: tarfile.TarFile, member: tarfile.TarInfo, seen: set[str], limits: Limits) -> _Entry | None:
    if member.isdir():
        return None
    located = _member_path(member.name)
    if located is None or isinstance(located, SourceProblem):
        return located
    if not member.isreg():
        return SourceProblem(located, _LINK_OR_SPECIAL)
    if located in seen:
        return SourceProblem(located, "duplicate path in archive")
    seen.add(located)
    if member.size > limits.max_file_bytes:
        return SourceProblem(located, _too_large(limits))
    try:
        stream = archive.extractfile(member)
        if stream is None:
            return SourceProblem(located, _LINK_OR_SPECIAL)
        with stream:
            data = _read_bounded(stream, limits.max_file_bytes + 1)
    except _TAR_ERRORS:
        return SourceProblem(located, "archive member is corrupt or truncated")
    if len(data) > limits.max_file_bytes:
        return SourceProblem(located, _too_large(limits))
    return SourceFile(located, data)


# Names, sizes, reasons


def _member_path(name: str) -> str | SourceProblem | None:
    """The member's normalised relative path; a problem when its name could land outside the root
    (absolute, drive letter, ``..``, with backslashes read as separators as Windows tools write them);
    None for members skipped silently (hidden, unsupported, or naming nothing)."""
    parts = name.replace("\\", "/").split("/")
    if (parts[0] == "" and len(parts) > 1) or ".." in parts or _DRIVE.match(parts[0]) or _CONTROL.search(name):
        return SourceProblem(_display(name), _UNSAFE_PATH)
    if _SURROGATE.search(name):
        return SourceProblem(_display(name), _NOT_UTF8_NAME)
    kept = [part for part in parts if part not in ("", ".")]
    if not kept or any(part.startswith(".") for part in kept) or not _supported(kept[-1]):
        return None
    return "/".join(unicodedata.normalize("NFC", part) for part in kept)


def _name_problem(name: str, unsafe: str) -> str | None:
    if _SURROGATE.search(name):
        return _NOT_UTF8_NAME
    if _CONTROL.search(name):
        return unsafe
    return None


def _supported(name: str) -> bool:
    dot = name.rfind(".")
    return dot > 0 and name[dot:].lower() in SUPPORTED_SUFFIXES


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _inside(real: str, real_root: str) -> bool:
    return os.path.commonpath([real, real_root]) == real_root


def _display(name: str) -> str:
    """A name fit to show: control characters and undecodable bytes as ``?``, and not endless."""
    shown = _UNSHOWABLE.sub("?", name)
    return shown if len(shown) <= _DISPLAY_LENGTH else shown[: _DISPLAY_LENGTH - 1] + "…"


def _read_bounded(stream: IO[bytes], limit: int) -> bytes:
    """At most ``limit`` bytes, in chunks: a lying header cannot make this read (or allocate) more."""
    chunks = []
    left = limit
    while left > 0:
        chunk = stream.read(min(left, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _size(count: int) -> str:
    for unit, name in ((1024**3, "GB"), (1024**2, "MB"), (1024, "KB")):
        if count >= unit:
            value = count / unit
            return f"{value:.0f} {name}" if value == int(value) else f"{value:.1f} {name}"
    return f"{count} bytes"


def _too_large(limits: Limits) -> str:
    return f"file is larger than {_size(limits.max_file_bytes)}"


def _too_compressed(limits: Limits) -> str:
    return f"archive member is compressed more than {limits.max_ratio} times (possible zip bomb)"


def _why(error: OSError) -> str:
    if isinstance(error, PermissionError):
        return "permission denied"
    return (error.strerror or type(error).__name__).lower()
