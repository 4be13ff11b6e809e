"""Reading a knowledge source: folders, zips, tars and single files, sorted, with hostile entries reported."""

from __future__ import annotations

import io
import os
import struct
import tarfile
import unicodedata
import zipfile
from pathlib import Path

import pytest

from convener.api.errors import InvalidArgument
from convener.knowledge.sources import Limits, SourceFile, SourceProblem, read_source, source_kind

LINK_OR_SPECIAL = "archive member is a link or special file"
UNSAFE = "unsafe path in archive"


def write(root: Path, files: dict[str, bytes | str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def read(path: Path, limits: Limits | None = None) -> list[SourceFile | SourceProblem]:
    return list(read_source(path, limits or Limits()))


def files_of(entries: list[SourceFile | SourceProblem]) -> dict[str, bytes]:
    return {entry.path: entry.data for entry in entries if isinstance(entry, SourceFile)}


def problems_of(entries: list[SourceFile | SourceProblem]) -> list[tuple[str, str]]:
    return [(entry.path, entry.reason) for entry in entries if isinstance(entry, SourceProblem)]


def make_zip(path: Path, members: list[tuple[str, bytes]], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members:
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=compression)
    return path


def regular(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def special(name: str, kind: bytes, target: str = "") -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def make_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w") -> Path:
    with tarfile.open(path, mode) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


SITE = {
    "index.md": "# Home\n",
    "guide/install.md": "# Install\n",
    "guide/a-b.md": "dash sorts before slash\n",
    "guide/a/deeper.rst": "Deeper\n======\n",
    "api/Ref.HTML": "<h1>Ref</h1>",
    "notes.TXT": "notes",
    "assets/style.css": "body {}",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n",
    "README": "no suffix",
    ".hidden.md": "hidden file",
    ".git/HEAD.md": "hidden folder",
    "guide/.drafts/secret.md": "hidden nested folder",
    "bundle.zip": b"PK\x05\x06" + b"\x00" * 18,
}
SITE_FILES = ["api/Ref.HTML", "guide/a-b.md", "guide/a/deeper.rst", "guide/install.md", "index.md", "notes.TXT"]


# Folders and single files


def test_folder_yields_supported_visible_files_sorted_by_path(tmp_path: Path) -> None:
    root = write(tmp_path / "site", SITE)

    entries = read(root)

    assert [entry.path for entry in entries] == SITE_FILES
    assert all(isinstance(entry, SourceFile) for entry in entries)
    assert files_of(entries)["guide/install.md"] == b"# Install\n"
    assert source_kind(root) == "folder"


def test_reading_twice_gives_the_same_entries(tmp_path: Path) -> None:
    root = write(tmp_path / "site", SITE)

    assert read(root) == read(root)


def test_empty_folder_yields_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()

    assert read(tmp_path / "empty") == []


def test_single_file_is_named_by_its_file_name(tmp_path: Path) -> None:
    page = write(tmp_path, {"docs/getting-started.md": "# Start\n"}) / "docs" / "getting-started.md"

    assert source_kind(page) == "file"
    assert read(page) == [SourceFile("getting-started.md", b"# Start\n")]


def test_paths_are_normalised_to_nfc(tmp_path: Path) -> None:
    decomposed = unicodedata.normalize("NFD", "café.md")
    write(tmp_path / "site", {decomposed: "x"})

    assert [entry.path for entry in read(tmp_path / "site")] == [unicodedata.normalize("NFC", "café.md")]


def test_missing_and_unsupported_paths_are_invalid_arguments(tmp_path: Path) -> None:
    image = write(tmp_path, {"logo.png": b"\x89PNG\r\n\x1a\n"}) / "logo.png"

    for path in (tmp_path / "missing", image):
        with pytest.raises(InvalidArgument):
            source_kind(path)
        with pytest.raises(InvalidArgument):
            read(path)


def test_folder_links_are_followed_only_inside_the_root(tmp_path: Path) -> None:
    root = write(tmp_path / "site", {"real.md": "real", "sub/page.md": "page"})
    write(tmp_path / "outside", {"secret.md": "secret"})
    (root / "alias.md").symlink_to(root / "real.md")
    (root / "escape.md").symlink_to(tmp_path / "outside" / "secret.md")
    (root / "escape-dir").symlink_to(tmp_path / "outside")
    (root / "loop").symlink_to(root)
    (root / "broken.md").symlink_to(root / "nowhere.md")

    entries = read(root)

    assert files_of(entries) == {"alias.md": b"real", "real.md": b"real", "sub/page.md": b"page"}
    assert problems_of(entries) == [
        ("broken.md", "broken link"),
        ("escape-dir", "link points outside the source"),
        ("escape.md", "link points outside the source"),
        ("loop", "link to a folder that is read elsewhere"),
    ]
    assert b"secret" not in b"".join(files_of(entries).values())


def test_linked_folder_inside_the_root_is_read_once(tmp_path: Path) -> None:
    root = write(tmp_path / "site", {"v2/page.md": "page"})
    (root / "latest").symlink_to(root / "v2")

    entries = read(root)

    assert files_of(entries) == {"v2/page.md": b"page"}
    assert problems_of(entries) == [("latest", "link to a folder that is read elsewhere")]


def test_special_files_in_a_folder_are_problems(tmp_path: Path) -> None:
    root = write(tmp_path / "site", {"page.md": "page"})
    os.mkfifo(root / "pipe.md")

    assert read(root) == [SourceFile("page.md", b"page"), SourceProblem("pipe.md", "not a regular file")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    root = write(tmp_path / "site", {"locked.md": "x", "open.md": "y"})
    (root / "locked.md").chmod(0)

    assert read(root) == [
        SourceProblem("locked.md", "file cannot be read (permission denied)"),
        SourceFile("open.md", b"y"),
    ]


def test_file_that_cannot_be_opened_is_a_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write(tmp_path / "site", {"locked.md": "x", "open.md": "y"})
    real_open = os.open

    def refusing_open(path: str, flags: int, *args: int) -> int:
        if str(path).endswith("locked.md"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refusing_open)  # root (as in CI containers) can open any file

    assert read(root) == [
        SourceProblem("locked.md", "file cannot be read (permission denied)"),
        SourceFile("open.md", b"y"),
    ]


def test_file_above_the_size_limit_is_a_problem(tmp_path: Path) -> None:
    root = write(tmp_path / "site", {"big.md": b"x" * 2048, "small.md": b"y" * 10})

    entries = read(root, Limits(max_file_bytes=1024))

    assert entries == [SourceProblem("big.md", "file is larger than 1 KB"), SourceFile("small.md", b"y" * 10)]


def test_too_many_files_stops_the_walk_with_one_problem(tmp_path: Path) -> None:
    root = write(tmp_path / "site", {f"page{index}.md": "x" for index in range(5)})

    entries = read(root, Limits(max_files=3))

    assert [entry.path for entry in entries[:3]] == ["page0.md", "page1.md", "page2.md"]
    assert entries[3:] == [SourceProblem("page3.md", "source has more than 3 files; stopped", stops=True)]


def test_too_many_bytes_stops_the_walk_with_one_problem(tmp_path: Path) -> None:
    root = write(tmp_path / "site", {f"page{index}.md": "x" * 40 for index in range(5)})

    entries = read(root, Limits(max_total_bytes=100))

    assert len(files_of(entries)) == 2
    assert entries[-1] == SourceProblem("page2.md", "source exceeds 100 bytes in total; stopped", stops=True)


# Zip archives


def test_zip_yields_supported_files_sorted_keeping_the_top_folder(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "site.bin", [
        ("site/", b""),
        ("site/z.md", b"z"),
        ("site/guide/install.md", b"install"),
        ("site/guide/", b""),
        ("site/style.css", b"body {}"),
        ("site/.hidden.md", b"hidden"),
        ("__MACOSX/site/._z.md", b"resource fork"),
        ("site/inner.zip", make_zip(tmp_path / "inner.zip", [("nested.md", b"nested")]).read_bytes()),
        ("site/docs\\windows.md", b"backslashes are separators"),
    ])

    assert source_kind(archive) == "zip"
    assert read(archive) == [
        SourceFile("site/docs/windows.md", b"backslashes are separators"),
        SourceFile("site/guide/install.md", b"install"),
        SourceFile("site/z.md", b"z"),
    ]


@pytest.mark.parametrize("name", ["../evil.md", "/abs.md", "a/../../b.md", "C:/windows.md", "..\\back.md", "\\\\host\\share.md"])
def test_zip_member_with_unsafe_path_is_a_problem(tmp_path: Path, name: str) -> None:
    archive = make_zip(tmp_path / "site.zip", [(name, b"evil"), ("ok.md", b"ok")])

    entries = read(archive)

    assert files_of(entries) == {"ok.md": b"ok"}
    assert problems_of(entries) == [(name, UNSAFE)]


def test_zip_bomb_member_is_a_problem(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "bomb.zip", [("bomb.md", bytes(5 * 1024 * 1024)), ("ok.md", b"ok")])

    entries = read(archive)

    assert entries == [
        SourceProblem("bomb.md", "archive member is compressed more than 200 times (possible zip bomb)"),
        SourceFile("ok.md", b"ok"),
    ]


def test_zip_member_declared_too_large_is_refused_before_reading(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "big.zip", [("big.md", bytes(50 * 1024 * 1024))])

    assert read(archive, Limits(max_file_bytes=1024 * 1024)) == [
        SourceProblem("big.md", "file is larger than 1 MB")
    ]


def test_zip_member_read_is_bounded_by_the_size_limit(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "big.zip", [("big.md", b"x" * 5000)], compression=zipfile.ZIP_STORED)

    assert read(archive, Limits(max_file_bytes=1000)) == [SourceProblem("big.md", "file is larger than 1000 bytes")]


def test_zip_member_whose_header_understates_its_size_is_a_problem(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "liar.zip", [("liar.md", b"a" * 3_000_000), ("ok.md", b"ok")])
    data = bytearray(archive.read_bytes())
    entry = data.index(b"PK\x01\x02")  # the first central directory entry, liar.md's
    struct.pack_into("<I", data, entry + 24, 100)  # its uncompressed size
    archive.write_bytes(bytes(data))

    entries = read(archive)

    assert problems_of(entries) == [("liar.md", "archive member has a bad checksum")]
    assert files_of(entries) == {"ok.md": b"ok"}


def test_zip_member_with_bad_crc_is_a_problem(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "crc.zip", [("bad.md", b"hello world"), ("good.md", b"fine")], zipfile.ZIP_STORED)
    data = archive.read_bytes().replace(b"hello world", b"hello WORLD")
    archive.write_bytes(data)

    assert read(archive) == [
        SourceProblem("bad.md", "archive member has a bad checksum"),
        SourceFile("good.md", b"fine"),
    ]


def test_zip_duplicate_names_keep_the_first(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="Duplicate name"):
        archive = make_zip(tmp_path / "dup.zip", [("a.md", b"first"), ("a.md", b"second")])

    assert read(archive) == [SourceFile("a.md", b"first"), SourceProblem("a.md", "duplicate path in archive")]


def test_zip_symlink_member_is_a_problem(tmp_path: Path) -> None:
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as writer:
        link = zipfile.ZipInfo("passwd.md")
        link.external_attr = (0o120777 << 16)
        writer.writestr(link, "/etc/passwd")

    assert read(archive) == [SourceProblem("passwd.md", LINK_OR_SPECIAL)]


def test_encrypted_zip_member_is_a_problem(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "secret.zip", [("secret.md", b"ciphertext"), ("plain.md", b"plain")])
    data = bytearray(archive.read_bytes())
    data[6] |= 0x1  # the encryption flag, in secret.md's local header
    data[data.index(b"PK\x01\x02") + 8] |= 0x1  # and in its central directory entry
    archive.write_bytes(bytes(data))

    assert read(archive) == [SourceFile("plain.md", b"plain"), SourceProblem("secret.md", "archive member is encrypted")]


def test_corrupt_zip_is_an_invalid_argument(tmp_path: Path) -> None:
    good = make_zip(tmp_path / "good.zip", [("a.md", b"a" * 1000), ("b.md", b"b" * 1000)])
    data = good.read_bytes()
    broken_directory = tmp_path / "broken.zip"
    broken_directory.write_bytes(data.replace(b"PK\x01\x02", b"XX\x01\x02"))
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(data[: len(data) // 2])

    for path in (broken_directory, truncated):
        with pytest.raises(InvalidArgument):
            read(path)


def test_too_many_zip_members_stops_the_walk(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "many.zip", [(f"p{index}.md", b"x") for index in range(10)])

    entries = read(archive, Limits(max_files=4))

    assert len(entries) == 5
    assert entries[-1] == SourceProblem("p4.md", "source has more than 4 files; stopped", stops=True)


# Tar archives


@pytest.mark.parametrize(("name", "mode"), [
    ("site.tar", "w"), ("site.tar.gz", "w:gz"), ("site.tgz", "w:gz"), ("site.tar.bz2", "w:bz2"),
    ("site.tar.xz", "w:xz"), ("site.download", "w:gz"),
])
def test_tar_of_each_compression_yields_sorted_files(tmp_path: Path, name: str, mode: str) -> None:
    directory = tarfile.TarInfo("./site")
    directory.type = tarfile.DIRTYPE
    archive = make_tar(tmp_path / name, [
        (directory, None),
        regular("./site/z.md", b"z"),
        regular("./site/guide/install.md", b"install"),
        regular("./site/app.js", b"js"),
        regular("./site/.hidden.md", b"hidden"),
        regular("./site/a.rst", b"a"),
    ], mode)

    assert source_kind(archive) == "tar"
    assert read(archive) == [
        SourceFile("site/a.rst", b"a"),
        SourceFile("site/guide/install.md", b"install"),
        SourceFile("site/z.md", b"z"),
    ]


@pytest.mark.parametrize("name", ["../evil.md", "/abs.md", "a/../../b.md", "C:\\windows.md"])
def test_tar_member_with_unsafe_path_is_a_problem(tmp_path: Path, name: str) -> None:
    archive = make_tar(tmp_path / "site.tar", [regular(name, b"evil"), regular("ok.md", b"ok")])

    entries = read(archive)

    assert files_of(entries) == {"ok.md": b"ok"}
    assert problems_of(entries) == [(name, UNSAFE)]


def test_tar_links_and_special_files_are_problems(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "site.tar.gz", [
        regular("real.md", b"real"),
        special("symlink.md", tarfile.SYMTYPE, "/etc/passwd"),
        special("hardlink.md", tarfile.LNKTYPE, "real.md"),
        special("fifo.md", tarfile.FIFOTYPE),
        special("device.md", tarfile.CHRTYPE),
        special("ignored.css", tarfile.SYMTYPE, "/etc/passwd"),
    ], "w:gz")

    assert read(archive) == [
        SourceProblem("device.md", LINK_OR_SPECIAL),
        SourceProblem("fifo.md", LINK_OR_SPECIAL),
        SourceProblem("hardlink.md", LINK_OR_SPECIAL),
        SourceFile("real.md", b"real"),
        SourceProblem("symlink.md", LINK_OR_SPECIAL),
    ]


def test_tar_member_above_the_size_limit_is_a_problem(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "site.tar", [regular("big.md", b"x" * 2000), regular("small.md", b"y")])

    assert read(archive, Limits(max_file_bytes=1000)) == [
        SourceProblem("big.md", "file is larger than 1000 bytes"),
        SourceFile("small.md", b"y"),
    ]


def test_tar_bomb_stops_before_decompressing_it(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "bomb.tar.gz", [
        regular("a.md", b"first"),
        regular("fonts/zeros.woff", bytes(8 * 1024 * 1024)),
        regular("z.md", b"never reached"),
    ], "w:gz")

    entries = read(archive)

    assert entries[0] == SourceFile("a.md", b"first")
    assert entries[1:] == [SourceProblem(
        "fonts/zeros.woff", "archive expands more than 200 times (possible archive bomb); stopped", stops=True
    )]


def test_unreadable_compressed_tar_is_an_invalid_argument(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "site.tar.gz", [regular("a.md", b"a" * 5000)], "w:gz")
    archive.write_bytes(archive.read_bytes()[:15])  # the gzip header, cut short

    with pytest.raises(InvalidArgument):
        read(archive)


def test_truncated_tar_reports_a_problem_and_keeps_what_it_read(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "site.tar", [regular("a.md", b"a" * 600), regular("b.md", b"b" * 5000)])
    data = archive.read_bytes()
    archive.write_bytes(data[: 512 + 1024 + 512 + 1000])  # a.md whole, b.md cut short

    entries = read(archive)

    assert entries[0] == SourceFile("a.md", b"a" * 600)
    assert ("b.md", "archive member is corrupt or truncated") in problems_of(entries)
    assert all(isinstance(entry, SourceProblem) for entry in entries[1:])


def test_tar_problems_and_files_are_sorted_and_the_stop_comes_last(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "site.tar", [
        regular("c.md", b"c"), special("b.md", tarfile.SYMTYPE, "c.md"), regular("a.md", b"a"), regular("d.md", b"d"),
    ])

    assert read(archive, Limits(max_files=3)) == [
        SourceFile("a.md", b"a"),
        SourceProblem("b.md", LINK_OR_SPECIAL),
        SourceFile("c.md", b"c"),
        SourceProblem("d.md", "source has more than 3 files; stopped", stops=True),
    ]


def test_tar_with_non_utf8_name_is_a_problem(tmp_path: Path) -> None:
    archive = tmp_path / "names.tar"
    with tarfile.open(archive, "w", format=tarfile.GNU_FORMAT, encoding="latin-1") as writer:
        info, data = regular("caf\xe9.md", b"latin-1 name")
        writer.addfile(info, io.BytesIO(data))

    assert read(archive) == [SourceProblem("caf?.md", "file name is not valid UTF-8")]
