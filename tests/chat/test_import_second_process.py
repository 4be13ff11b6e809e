"""A large export read in a second process: the store ends exactly as a reading in one process leaves it."""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from convener.chat import markdown
from convener.chat.importing import open_export
from convener.chat.importing.reading import (
    Prepared,
    _Begun,
    _Done,
    _Ended,
    _Messages,
    _Received,
    converted,
    read_in_second_process,
)
from convener.chat.importing.writer import ChatImporter, ImportSummary
from convener.chat.records import ImportedConversation, ImportedMessage, ImportedUser, ImportProblem, Report
from convener.chat.tables import links, memberships, mentions, messages, spaces, users
from convener.config import Settings
from convener.services import Services
from tests.chat.conftest import RecordsExport
from tests.chat.test_slack_reader import BROKEN, DATA, SAMPLE, tiny_export


def imported(directory: Path, format_name: str, path: Path, second_process: bool) -> tuple[ImportSummary, Any]:
    """The summary of importing the export into a new SQLite store, and everything the store then holds."""
    services = Services.open(Settings(data_dir=directory))
    try:
        with open_export(format_name, path) as export:  # type: ignore[attr-defined]
            summary = ChatImporter(services.database, second_process=second_process).run(export)
        with services.database.reading() as connection:
            stored = {table.name: sorted(map(tuple, connection.execute(select(table))), key=repr)
                      for table in (users, links, spaces, memberships, messages, mentions)}
    finally:
        services.close()
    return summary, stored


EXPORTS = [
    ("slack", SAMPLE),
    ("slack", BROKEN),
    ("google-chat", DATA / "takeout"),
    ("google-chat", DATA / "takeout-broken"),
    ("mattermost", DATA / "mattermost" / "export.jsonl"),
    ("mattermost", DATA / "mattermost" / "broken.jsonl"),
]


@pytest.mark.parametrize(("format_name", "path"), EXPORTS, ids=[f"{f}-{p.name}" for f, p in EXPORTS])
def test_every_sample_export_is_stored_the_same_read_here_or_in_a_second_process(
        tmp_path: Path, format_name: str, path: Path) -> None:
    here_summary, here = imported(tmp_path / "here", format_name, path, second_process=False)
    there_summary, there = imported(tmp_path / "there", format_name, path, second_process=True)

    assert there == here
    assert there_summary == here_summary
    assert here["chat_messages"]  # something was imported


def test_names_made_during_the_import_are_in_texts_converted_before_them(tmp_path: Path) -> None:
    """The second process converts with the names known at the start: a bot made from an earlier message's
    sender, and a channel imported earlier in the run, change a later text, which the writer converts again."""
    export = tiny_export(tmp_path, {
        "alpha/2017-11-29.json": [{"type": "message", "ts": "1511913600.000100", "bot_id": "B999",
                                   "username": "deploybot", "text": "deployed"}],
        "beta/2017-11-30.json": [{"type": "message", "ts": "1512000000.000100", "user": "U1",
                                  "text": "thanks <@B999>, see <#C0ALPHA>"}],
    }, channels=[{"id": "C0ALPHA", "name": "alpha", "created": 1511913000, "members": []},
                 {"id": "C0BETA", "name": "beta", "created": 1511913000, "members": []}])

    _, here = imported(tmp_path / "here", "slack", export, second_process=False)
    _, there = imported(tmp_path / "there", "slack", export, second_process=True)

    assert there == here
    texts = [row for row in here["chat_messages"] if any("thanks" in str(value) for value in row)]
    assert len(texts) == 1 and "deploybot" in repr(texts[0]) and "#alpha" in repr(texts[0])


class Names:
    def __init__(self, users: dict[str, str]) -> None:
        self.users = users

    def user(self, ref: str) -> str | None:
        return self.users.get(ref)

    def channel(self, ref: str) -> str | None:
        return None


def test_a_conversion_is_taken_only_if_every_name_it_asked_for_reads_the_same() -> None:
    message = ImportedMessage("1", 0, "hi <@U1>", "slack", "U2")
    earlier = markdown.Converted("hi @someone", "hi @someone", ("U1",), False)
    asked = ((False, "U1", "someone"),)

    assert converted(Prepared(message, earlier, asked), Names({"U1": "someone"})) is earlier
    assert converted(Prepared(message, earlier, asked), Names({"U1": "Ana"})).markdown == "hi @Ana"
    assert converted(Prepared(message), Names({"U1": "Ana"})).markdown == "hi @Ana"


def test_records_in_memory_and_small_exports_are_read_here(tmp_path: Path) -> None:
    assert not read_in_second_process(RecordsExport([], []), True)
    with open_export("slack", SAMPLE) as export:  # type: ignore[attr-defined]
        assert not read_in_second_process(export, None)  # a few kilobytes: not worth a process
        assert read_in_second_process(export, True)


def sent(*items: Any) -> io.BytesIO:
    stream = io.BytesIO()
    for item in items:
        pickle.dump(item, stream)
    stream.seek(0)
    return stream


class Finished:
    """A second process that has ended with ``code``."""

    def __init__(self, code: int) -> None:
        self.code = code

    def wait(self) -> int:
        return self.code


def conversation(name: str) -> ImportedConversation:
    return ImportedConversation(name, "SPACE", name, ())


def message(external_id: str) -> Prepared:
    return Prepared(ImportedMessage(external_id, 0, "text", "slack"))


def received(stream: io.BytesIO, code: int = 0, report: Report | None = None) -> Iterator[Any]:
    return _Received(stream, Finished(code), report or (lambda problem: None)).conversations()  # type: ignore[arg-type]


def test_a_conversation_left_early_has_the_rest_of_its_messages_skipped() -> None:
    problem = ImportProblem("b.json", "not a message")
    problems: list[ImportProblem] = []
    stream = sent(_Begun(conversation("a")), _Messages([message("1"), message("2")]), _Messages([message("3")]),
                  _Ended(), problem, _Begun(conversation("b")), _Messages([message("4")]), _Ended(), _Done())

    conversations = received(stream, report=problems.append)
    first, first_messages = next(conversations)
    assert next(first_messages).message.external_id == "1"  # and the writer leaves it there
    second, second_messages = next(conversations)

    assert (first.external_id, second.external_id) == ("a", "b")
    assert [item.message.external_id for item in second_messages] == ["4"]
    assert problems == [problem]
    assert next(conversations, None) is None


def test_a_second_process_that_ends_without_finishing_fails_the_import_clearly() -> None:
    stream = sent(_Begun(conversation("a")), _Messages([message("1")]))

    conversations = received(stream, code=-9)
    _, first_messages = next(conversations)
    assert next(first_messages).message.external_id == "1"
    with pytest.raises(RuntimeError, match=r"reading process ended without finishing \(exit code -9\)"):
        next(first_messages)


class FailingExport:
    """A reader whose conversations fail after the first: importable by the second process."""

    source = "failing"

    def __init__(self, path: Path) -> None:
        self.path = path

    def users(self, report: Report) -> Iterator[ImportedUser]:
        return iter(())

    def conversations(self, report: Report) -> Iterator[ImportedConversation]:
        yield ImportedConversation("first", "SPACE", "first", (), iter([ImportedMessage("1", 0, "hi", "slack")]))
        raise ValueError(f"cannot read past the first conversation of {self.path.name}")

    def conversation_count(self) -> int | None:
        return None

    def close(self) -> None:
        pass


def test_what_the_reader_raises_in_the_second_process_is_raised_by_the_import(tmp_path: Path) -> None:
    export = tmp_path / "export.bin"
    export.write_bytes(b"")
    services = Services.open(Settings(data_dir=tmp_path / "data"))
    try:
        for second_process in (False, True):
            with pytest.raises(ValueError, match="cannot read past the first conversation of export.bin"):
                ChatImporter(services.database, second_process=second_process).run(FailingExport(export))
            with services.database.reading() as connection:  # the first conversation was whole: it stays
                assert len(connection.execute(select(messages.c.message_id)).all()) == 1
    finally:
        services.close()


def test_the_second_process_runs_from_any_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert os.getcwd() == str(tmp_path)
    _, there = imported(tmp_path / "there", "slack", SAMPLE, second_process=True)
    assert there["chat_messages"]
