"""The import writer: idempotent re-imports, one person across exports, whole conversations or nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from convener.chat.ids import safe_id
from convener.chat.importing.writer import BATCH, COPY_BATCH, ChatImporter, ImportProgress, _attachments
from convener.chat.models import ChatAttachmentMetadata
from convener.chat.records import (
    ImportedAttachment,
    ImportedConversation,
    ImportedMessage,
    ImportedUser,
    ImportProblem,
    MalformedConversation,
)
from convener.chat.tables import links, memberships, mentions, messages, spaces, users
from convener.services import Services
from tests.chat.conftest import RecordsExport, at, micros, workspace


def counts(services: Services) -> dict[str, int]:
    with services.database.reading() as connection:
        return {table.name: int(connection.scalar(select(func.count()).select_from(table)))
                for table in (users, links, spaces, memberships, messages, mentions)}


def test_importing_twice_changes_nothing(services: Services) -> None:
    first = ChatImporter(services.database).run(workspace())
    before = counts(services)

    second = ChatImporter(services.database).run(workspace())

    assert counts(services) == before
    assert (first.users, first.conversations, first.messages) == (second.users, second.conversations, second.messages)
    assert before["chat_messages"] == first.messages and first.problem_count == 0
    assert before["chat_users"] == 4 and before["chat_spaces"] == 4


def test_people_are_one_user_across_exports_by_email(services: Services) -> None:
    ChatImporter(services.database).run(workspace())
    other = RecordsExport(
        [ImportedUser("mm-ana", "ana.l", "ANA@example.com"), ImportedUser("mm-dee", "Dee", "dee@example.com")],
        [ImportedConversation("town-square", "SPACE", "Town Square", ("mm-ana", "mm-dee"), iter([
            ImportedMessage("p1", micros(at(1)), "hello from @ana.l", "markdown", "mm-ana"),
        ]))],
        source="mattermost",
    )

    ChatImporter(services.database).run(other)

    with services.database.reading() as connection:
        assert connection.scalar(select(func.count()).select_from(users)) == 5
        sender = connection.scalar(select(messages.c.sender_id).where(messages.c.message_id == "p1"))
        spaces_of_ana = set(connection.scalars(select(memberships.c.space_id).where(memberships.c.user_id == "ana")))
    assert sender == "ana"
    assert len(spaces_of_ana) == 4


def _breaks_midway() -> Iterator[ImportedMessage]:
    yield ImportedMessage("ok-1", micros(at(1)), "first", "slack", "U-ANA")
    yield ImportedMessage("ok-2", micros(at(2)), "second", "slack", "U-NEW-PERSON")
    raise MalformedConversation(ImportProblem("broken/2026-03-02.json", "not valid JSON at line 3"))


def test_a_conversation_that_breaks_midway_leaves_nothing_behind(services: Services) -> None:
    export = RecordsExport(
        [ImportedUser("U-ANA", "Ana Lima", "ana@example.com", preferred_id="ana")],
        [
            ImportedConversation("C-BROKEN", "SPACE", "broken", ("U-ANA", "U-GHOST"), _breaks_midway()),
            ImportedConversation("C-FINE", "SPACE", "fine", ("U-ANA",), iter([
                ImportedMessage("f1", micros(at(3)), "fine words", "slack", "U-ANA")])),
        ],
    )
    seen: list[ImportProgress] = []

    summary = ChatImporter(services.database).run(export, seen.append)

    assert summary.conversations == 1 and summary.failed_conversations == 1 and summary.messages == 1
    assert [str(problem) for problem in summary.problems] == ["broken/2026-03-02.json: not valid JSON at line 3"]
    with services.database.reading() as connection:
        assert set(connection.scalars(select(spaces.c.display_name))) == {"fine"}
        assert set(connection.scalars(select(users.c.user_id))) == {"ana"}
        assert connection.scalar(select(func.count()).select_from(messages)) == 1
    assert seen[-1].conversations_done == 2 and seen[-1].conversations_total == 2

    # The people first met in the broken conversation are met again, cleanly, when it is fixed.
    fixed = RecordsExport(export.people, [ImportedConversation("C-BROKEN", "SPACE", "broken", ("U-ANA", "U-GHOST"),
                                                               iter(list(_first_two())))])
    ChatImporter(services.database).run(fixed)
    with services.database.reading() as connection:
        assert set(connection.scalars(select(users.c.user_id))) == {"ana", "U-GHOST", "U-NEW-PERSON"}


def _first_two() -> Iterator[ImportedMessage]:
    yield ImportedMessage("ok-1", micros(at(1)), "first", "slack", "U-ANA")
    yield ImportedMessage("ok-2", micros(at(2)), "second", "slack", "U-NEW-PERSON")


def test_ids_an_export_spells_unsafely_become_stable_safe_ids(services: Services) -> None:
    export = RecordsExport([], [ImportedConversation("Space AAAA/xyz", "SPACE", "odd", (), iter([
        ImportedMessage("TOPIC/MSG 1", micros(at(1)), "x", "chat", "someone@example.com",
                        thread_external_id="TOPIC"),
    ]))])

    ChatImporter(services.database).run(export)
    ChatImporter(services.database).run(RecordsExport([], [ImportedConversation("Space AAAA/xyz", "SPACE", "odd", (), iter([
        ImportedMessage("TOPIC/MSG 1", micros(at(1)), "x", "chat", "someone@example.com", thread_external_id="TOPIC"),
    ]))]))

    with services.database.reading() as connection:
        row = connection.execute(select(messages.c.space_id, messages.c.message_id, messages.c.sender_id)).one()
        assert connection.scalar(select(users.c.email).where(users.c.user_id == row.sender_id)) == "someone@example.com"
    assert row.space_id.startswith("Space-AAAA-xyz-") and row.message_id.startswith("TOPIC-MSG-1-")
    assert row.sender_id == "someone"


def test_a_conversation_written_again_without_name_or_time_keeps_them(services: Services) -> None:
    first = ImportedConversation("town", "SPACE", "Town Square", (), iter(()), micros(at(0)))
    again = ImportedConversation("town", "SPACE", None, (), iter([
        ImportedMessage("p9", micros(at(9)), "later run of posts", "markdown")]))

    ChatImporter(services.database).run(RecordsExport([], [first, again]))

    with services.database.reading() as connection:
        row = connection.execute(select(spaces)).one()
    assert (row.display_name, row.create_time_us, row.last_active_time_us) == ("Town Square", micros(at(0)),
                                                                               micros(at(9)))


def test_imported_messages_are_indexed_for_search_and_the_store_keeps_its_triggers(services: Services) -> None:
    """A first import inserts messages in bulk (and, on SQLite, indexes them for search in one statement
    around the insert trigger): every message is found by its words, and the schema is as it was."""
    def schema() -> list[tuple[str, str]]:
        if services.database.dialect != "sqlite":
            return []
        with services.database.reading() as connection:
            return [(str(name), str(sql)) for name, sql in connection.exec_driver_sql(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")]

    before = schema()
    summary = ChatImporter(services.database).run(workspace())
    assert schema() == before

    with services.database.reading() as connection:
        if services.database.dialect == "sqlite":
            indexed = connection.exec_driver_sql(
                "SELECT count(*) FROM chat_messages JOIN chat_messages_fts "
                "ON chat_messages_fts.rowid = chat_messages.row_id "
                "WHERE chat_messages_fts MATCH '\"' || replace(chat_messages.search_text, '\"', '') || '\"' "
                "AND chat_messages.search_text != ''").scalar()
        else:
            indexed = connection.exec_driver_sql(
                "SELECT count(*) FROM chat_messages WHERE search_vector @@ plainto_tsquery('simple', search_text) "
                "AND search_text != ''").scalar()
        searchable = connection.scalar(select(func.count()).select_from(messages).where(messages.c.search_text != ""))
    assert summary.added == summary.messages > 0
    assert indexed == searchable


def batch_of(services: Services) -> int:
    """How many messages the writer writes at a time on this engine."""
    return COPY_BATCH if services.database.dialect == "postgresql" else BATCH


def test_a_first_import_that_gives_a_message_twice_in_different_batches_stores_it_once_as_given_last(
        services: Services) -> None:
    """A new conversation's batches are not checked against the store, but a message given again (an export
    may repeat one, edited) is found among those this import wrote: updated, not inserted twice."""
    batch = batch_of(services)
    def message(number: int, text: str) -> ImportedMessage:
        return ImportedMessage(f"m{number}", micros(at(0)) + number, text, "slack", "someone@example.com")

    given = [message(number, f"message {number}") for number in range(batch + 10)]
    given.append(message(3, "message 3, edited"))
    summary = ChatImporter(services.database).run(RecordsExport([], [
        ImportedConversation("C1", "SPACE", "general", (), iter(given))]))

    with services.database.reading() as connection:
        stored = connection.execute(select(messages.c.body).where(messages.c.message_id == "m3")).scalars().all()
        total = connection.scalar(select(func.count()).select_from(messages))
    assert (summary.added, summary.updated, summary.unchanged) == (batch + 10, 1, 0)
    assert stored == ["message 3, edited"] and total == batch + 10


def _mentioning(conversation: str, count: int, start: int) -> list[ImportedMessage]:
    """Messages of which every other one mentions Ana, every third Bo."""
    return [ImportedMessage(f"{conversation}-{number}", micros(at(0)) + start + number,
                            "hi" + (" <@U-ANA>" if number % 2 == 0 else "") + (" <@U-BO>" if number % 3 == 0 else ""),
                            "slack", "U-ANA") for number in range(count)]


def _stored_mentions(services: Services) -> set[tuple[str, str]]:
    with services.database.reading() as connection:
        return {(message_id, user_id) for message_id, user_id in connection.execute(
            select(messages.c.message_id, mentions.c.user_id).join(
                mentions, mentions.c.message_row_id == messages.c.row_id))}


@pytest.mark.parametrize("held", [7, None])
def test_mentions_of_a_first_import_are_stored_with_their_messages_over_batches_and_conversations(
        services: Services, monkeypatch: pytest.MonkeyPatch, held: int | None) -> None:
    """Mentions are written with the messages that make them, however many batches and conversations (on
    PostgreSQL they are held and copied in later, in the same transaction: here a few at a time, or all at
    the conversation's end); a message given again later with other mentions keeps those, one given again
    as it was is unchanged; a conversation that breaks keeps none."""
    if held is not None:
        monkeypatch.setattr("convener.chat.importing.writer.MENTIONS_HELD", held)
    people = [ImportedUser("U-ANA", "Ana Lima", "ana@example.com", preferred_id="ana"),
              ImportedUser("U-BO", "Bo Ek", "bo@example.com", preferred_id="bo")]
    batch = batch_of(services)
    long = _mentioning("long", batch + 30, 0)
    edited = ImportedMessage("long-4", micros(at(0)) + 10_000, "now only <@U-BO>", "slack", "U-ANA")

    def broken() -> Iterator[ImportedMessage]:
        yield from _mentioning("broken", 20, 20_000)
        raise MalformedConversation(ImportProblem("broken/2026-03-02.json", "not valid JSON at line 3"))

    summary = ChatImporter(services.database).run(RecordsExport(people, [
        ImportedConversation("C-LONG", "SPACE", "long", ("U-ANA", "U-BO"), iter([*long, edited, long[6]])),
        ImportedConversation("C-BROKEN", "SPACE", "broken", ("U-ANA",), broken()),
        ImportedConversation("C-SHORT", "SPACE", "short", ("U-ANA",), iter(_mentioning("short", 12, 30_000))),
    ]))

    expected = {(message.external_id, user) for message in [*long, *_mentioning("short", 12, 30_000)]
                for user, tag in (("ana", "<@U-ANA>"), ("bo", "<@U-BO>")) if tag in message.text}
    expected = expected - {("long-4", "ana")} | {("long-4", "bo")}
    assert summary.failed_conversations == 1 and (summary.added, summary.updated, summary.unchanged) == (batch + 42, 1, 1)
    assert _stored_mentions(services) == expected
    # a second import finds every message, mentions included, as it stored them
    again = ChatImporter(services.database).run(RecordsExport(people, [
        ImportedConversation("C-LONG", "SPACE", "long", ("U-ANA", "U-BO"), iter([*long[:4], edited, *long[5:]]))]))
    assert (again.added, again.updated, again.unchanged) == (0, 0, batch + 30)
    assert _stored_mentions(services) == expected


def test_attachments_are_written_as_their_model_writes_them() -> None:
    """The writer builds attachment metadata directly (per message, without the model's validation): the
    same JSON as ``ChatAttachmentMetadata.to_json``, and a source the model does not know is refused."""
    given = [
        ImportedAttachment("report.pdf", "application/pdf", "UPLOADED_CONTENT", None, "F1"),
        ImportedAttachment("Design doc", "application/vnd.google-apps.document", "DRIVE_FILE", "1AbC", None),
        ImportedAttachment("sheet", "text/csv", "DRIVE_FILE", None, "F/3"),
        ImportedAttachment("", "application/octet-stream", "UPLOADED_CONTENT", "ignored", "F4"),
    ]
    expected = [
        ChatAttachmentMetadata(
            attachment_id=f"spaces/S/messages/M/attachments/{safe_id(item.external_id or str(index))}",
            filename=item.filename, mime_type=item.mime_type, source=item.source,
            drive_file_id=item.drive_file_id if item.source == "DRIVE_FILE" else None,
        ).to_json()
        for index, item in enumerate(given)
    ]
    written = _attachments("S", "M", given)
    assert written == expected
    assert [list(entry) for entry in written] == [list(entry) for entry in expected]  # the keys' order too
    with pytest.raises(ValueError):
        _attachments("S", "M", [ImportedAttachment("x", source="ELSEWHERE")])  # type: ignore[arg-type]
