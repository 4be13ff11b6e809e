"""Stores what a reader yields: users first, then each conversation in one transaction.

Re-importing the same export lands on the same rows: an export's IDs are linked once to Convener's
(``chat_links``) and every write is an upsert, so nothing is duplicated. A message already stored as the
export gives it is not written again, and is counted as unchanged: the summary says what an import changed.
A conversation that cannot be read to the end (``MalformedConversation``) is rolled back whole and reported;
the import goes on.
Imported people become the same Convener user wherever their email matches, so one person's key sees
their history across Slack, Google Chat and Mattermost.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, text, update

from convener.api.protojson import Timestamp
from convener.chat import markdown
from convener.chat.ids import safe_id
from convener.chat.importing import reading
from convener.chat.models import AttachmentSource, ChatAttachmentMetadata, ForwardedMetadata, QuotedMessageMetadata
from convener.chat.records import (
    ChatExport,
    ImportedAttachment,
    ImportedConversation,
    ImportedMessage,
    ImportedQuote,
    ImportedReaction,
    ImportedUser,
    ImportProblem,
    MalformedConversation,
)
from convener.chat.tables import links, memberships, mentions, messages, spaces, users
from convener.store.database import Database
from convener.store.upsert import upsert

BATCH = 500
COPY_BATCH = 2000
"""PostgreSQL's batch: one ``COPY`` each, and each statement is a round trip that the server waits through."""
ROW_ID_BLOCK = 5000
"""PostgreSQL: message row IDs taken from the sequence in one statement, kept for the import's next batches."""
MENTIONS_HELD = 5000
"""PostgreSQL: mentions of inserted messages held back, at most, before they are copied in."""
_Row = tuple[Any, ...]
"""A message's values in ``_ROW_COLUMNS``' order."""
_ROW_COLUMNS = tuple(column.name for column in messages.c if column.name != "row_id")
"""The message columns an import writes: every one but the row ID, in the table's order."""
_MESSAGE_ID = _ROW_COLUMNS.index("message_id")
_CREATE_TIME = _ROW_COLUMNS.index("create_time_us")
_LISTED = _ROW_COLUMNS.index("listed")
_JSON_FROM = _ROW_COLUMNS.index("attachments")
assert _ROW_COLUMNS[_JSON_FROM:] == ("attachments", "reactions", "quote")  # what _record dumps
_FTS_INSERT_TRIGGER = "chat_messages_fts_insert"
"""SQLite's trigger (made by migration 0005) that indexes an inserted message for full-text search."""
MAX_KEPT_PROBLEMS = 1000


@dataclass(frozen=True)
class ImportProgress:
    conversations_done: int
    conversations_total: int | None
    messages: int
    """Messages read and stored (or found stored as they are) so far, over all conversations."""
    conversation: str
    """The conversation being written, as its export names it."""


@dataclass
class ImportSummary:
    source: str
    users: int = 0
    conversations: int = 0
    messages: int = 0
    """Messages of the conversations imported: ``added + updated + unchanged``."""
    added: int = 0
    """Messages that were not stored before."""
    updated: int = 0
    """Messages stored before that the export changed (edited text, new reactions, a rendering that changed)."""
    unchanged: int = 0
    """Messages stored before exactly as the export gives them: not written again."""
    failed_conversations: int = 0
    problem_count: int = 0
    problems: list[ImportProblem] = field(default_factory=list)
    """The first ``MAX_KEPT_PROBLEMS`` problems; ``problem_count`` counts them all."""

    def report(self, problem: ImportProblem) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_KEPT_PROBLEMS:
            self.problems.append(problem)


Progress = Callable[[ImportProgress], None]


@dataclass
class MessageCounts:
    """What writing messages did to the store."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0

    @property
    def total(self) -> int:
        return self.added + self.updated + self.unchanged


class _Directory:
    """Every chat user by ID, email and this source's external IDs: the users are few, the messages many."""

    def __init__(self, connection: Connection, source: str) -> None:
        self.source = source
        self.names: dict[str, str] = {}
        self.by_email: dict[str, str] = {}
        for row in connection.execute(select(users.c.user_id, users.c.display_name, users.c.email)):
            self.remember(row.user_id, row.display_name, row.email)
        self.by_external: dict[str, str] = dict(
            connection.execute(
                select(links.c.external_id, links.c.internal_id).where(links.c.source == source, links.c.kind == "user")
            ).all()
        )
        self._staged: list[tuple[str, str, str, str | None]] = []

    def remember(self, user_id: str, display_name: str, email: str | None) -> None:
        self.names[user_id] = display_name
        if email:
            self.by_email[email] = user_id

    def resolve(self, ref: str | None) -> str | None:
        """Our user ID for an external ID, an email, ``users/{id}`` or ``users/{email}``."""
        if not ref:
            return None
        if ref in self.by_external:
            return self.by_external[ref]
        bare = ref.removeprefix("users/")
        found = self.by_email.get(bare.lower())
        return found if found is not None else (bare if bare in self.names else None)

    def stage(self, external: str, user_id: str, display_name: str, email: str | None) -> None:
        """Known at once inside the current transaction; forgotten by ``rollback`` if it fails."""
        self._staged.append((external, user_id, display_name, email))
        self.by_external[external] = user_id
        self.remember(user_id, display_name, email)

    def commit(self) -> None:
        self._staged.clear()

    def rollback(self) -> None:
        for external, user_id, _, email in self._staged:
            self.by_external.pop(external, None)
            self.names.pop(user_id, None)
            if email:
                self.by_email.pop(email, None)
        self._staged.clear()


class _Spaces:
    """This source's conversations already linked (external ID → our space ID) and their names, read once
    per import: rendering asks a linked channel's name for every ``<#C…>``, quotes ask their space."""

    def __init__(self, connection: Connection, source: str) -> None:
        self.by_external: dict[str, str] = {}
        self.names: dict[str, str | None] = {}
        named = select(links.c.external_id, links.c.internal_id, spaces.c.display_name).select_from(
            links.outerjoin(spaces, spaces.c.space_id == links.c.internal_id)
        ).where(links.c.source == source, links.c.kind == "space")
        for external, space_id, display_name in connection.execute(named):
            self.by_external[external] = space_id
            self.names[external] = display_name
        self._undo: list[tuple[str, str | None, str | None]] = []  # (external, space ID, name) before

    def stage(self, external: str, space_id: str, display_name: str | None) -> None:
        """Known at once inside the current transaction; forgotten by ``rollback`` if it fails."""
        self._undo.append((external, self.by_external.get(external), self.names.get(external)))
        self.by_external[external] = space_id
        self.names[external] = display_name

    def commit(self) -> None:
        self._undo.clear()

    def rollback(self) -> None:
        for external, space_id, display_name in reversed(self._undo):
            if space_id is None:
                self.by_external.pop(external, None)
                self.names.pop(external, None)
            else:
                self.by_external[external] = space_id
                self.names[external] = display_name
        self._undo.clear()


class _Names:
    """What the Markdown renderer asks: display names of mentioned users and linked channels."""

    def __init__(self, directory: _Directory, channel: Callable[[str], str | None]) -> None:
        self.directory = directory
        self._channel = channel

    def user(self, ref: str) -> str | None:
        user_id = self.directory.resolve(ref)
        return self.directory.names.get(user_id) if user_id else None

    def channel(self, ref: str) -> str | None:
        return self._channel(ref)


class _RowIds:
    """PostgreSQL: message row IDs drawn from the column's sequence a block at a time (one statement), then
    handed out batch by batch. A value taken from a sequence is never handed out again, whether the
    transaction that took it commits or not, so IDs left over from one conversation serve the next; what is
    left at the end of the import is a gap in the row IDs, as after any rollback."""

    def __init__(self) -> None:
        self._free: list[int] = []

    def take(self, connection: Connection, count: int) -> list[int]:
        if len(self._free) < count:
            wanted = max(count - len(self._free), ROW_ID_BLOCK)
            # the sequence is looked up once, in the subquery (OFFSET 0 keeps it apart): as nextval's argument
            # it would be looked up again for every value, which costs the server five times the nextval
            self._free.extend(int(value) for value in connection.scalars(text(
                "SELECT nextval(s.seq) FROM (SELECT pg_get_serial_sequence('chat_messages', 'row_id')::regclass "
                "AS seq OFFSET 0) AS s CROSS JOIN generate_series(1, :n)"), {"n": wanted}))
        taken, self._free = self._free[:count], self._free[count:]
        return taken


class ChatImporter:
    def __init__(self, database: Database, second_process: bool | None = None) -> None:
        self.database = database
        self.second_process = second_process
        """Whether an export is read in a second process (``reading``): None lets its size decide."""

    def run(self, export: ChatExport, progress: Progress | None = None) -> ImportSummary:
        summary = ImportSummary(export.source)
        with self.database.reading() as connection:
            directory = _Directory(connection, export.source)
            known_spaces = _Spaces(connection, export.source)
        total = export.conversation_count()
        row_ids = _RowIds()
        written_to: set[str] = set()  # a reader may yield one conversation in several parts (Mattermost)
        try:
            self._import_users(export, directory, summary)
            with contextlib.ExitStack() as stack:
                if reading.read_in_second_process(export, self.second_process):
                    # converting there with the names known now: the writer checks them (reading.converted)
                    names = _Names(directory, dict(known_spaces.names).get)
                    conversations = stack.enter_context(reading.read_elsewhere(export, names, summary.report))
                else:
                    conversations = reading.read_here(export, summary.report)
                # One thread inserts each batch of new messages while this one converts the next: the
                # database's side of an insert (SQLite's steps, PostgreSQL's COPY) runs without the GIL.
                inserter = stack.enter_context(
                    ThreadPoolExecutor(max_workers=1, thread_name_prefix="chat-import-insert"))
                self._import_conversations(conversations, progress, summary, directory, known_spaces, total,
                                           written_to, inserter, row_ids)
        finally:
            # The import's commits left SQLite's write-ahead log to grow (its pages are copied once, here,
            # not after each conversation).
            self.database.checkpoint()
        return summary

    def _import_conversations(self, conversations: Iterator[reading.PreparedConversation],
                              progress: Progress | None, summary: ImportSummary, directory: _Directory,
                              known_spaces: _Spaces, total: int | None, written_to: set[str],
                              inserter: ThreadPoolExecutor, row_ids: _RowIds) -> None:
        source = summary.source
        for conversation, prepared in conversations:
            label = conversation.display_name or conversation.external_id

            def tick(count: int, label: str = label) -> None:
                self._tick(progress, summary, total, label, count)

            try:
                with self.database.transaction(checkpoint=False) as connection:
                    written = _ConversationWriter(connection, source, directory, known_spaces,
                                                  inserter, row_ids).write(conversation, prepared, tick)
            except MalformedConversation as error:
                directory.rollback()
                known_spaces.rollback()
                summary.failed_conversations += 1
                summary.report(error.problem)
                continue
            directory.commit()
            known_spaces.commit()
            written_to.add(conversation.external_id)
            summary.conversations = len(written_to)
            summary.messages += written.total
            summary.added += written.added
            summary.updated += written.updated
            summary.unchanged += written.unchanged
            if progress is not None:
                progress(ImportProgress(summary.conversations + summary.failed_conversations, total,
                                        summary.messages, label))

    @staticmethod
    def _tick(progress: Progress | None, summary: ImportSummary, total: int | None, label: str, count: int) -> None:
        if progress is not None:
            done = summary.conversations + summary.failed_conversations
            progress(ImportProgress(done, total, summary.messages + count, label))

    def _import_users(self, export: ChatExport, directory: _Directory, summary: ImportSummary) -> None:
        stream = iter(export.users(summary.report))
        while batch := list(itertools.islice(stream, BATCH)):
            with self.database.transaction(checkpoint=False) as connection:
                for user in batch:
                    _write_user(connection, export.source, directory, user)
            directory.commit()
            summary.users += len(batch)


def _write_user(connection: Connection, source: str, directory: _Directory, user: ImportedUser) -> str:
    email = user.email.strip().lower() if user.email and user.email.strip() else None
    user_id = directory.by_external.get(user.external_id) or (directory.by_email.get(email) if email else None)
    if user_id is not None:
        values: dict[str, Any] = {"display_name": user.display_name[:512] or user_id, "user_type": user.user_type}
        if email and email not in directory.by_email:
            values["email"] = email
        connection.execute(update(users).where(users.c.user_id == user_id).values(**values))
        directory.remember(user_id, values["display_name"], values.get("email"))
    else:
        user_id = _free_id(connection, users.c.user_id, safe_id(user.preferred_id or user.external_id))
        connection.execute(insert(users).values(user_id=user_id, display_name=user.display_name[:512] or user_id,
                                                email=email, user_type=user.user_type))
    if directory.by_external.get(user.external_id) != user_id:
        connection.execute(upsert(connection.dialect.name, links, ["source", "kind", "external_id"], ["internal_id"]),
                           [{"source": source, "kind": "user", "external_id": user.external_id[:512],
                             "internal_id": user_id}])
    directory.stage(user.external_id, user_id, user.display_name[:512] or user_id, email)
    return user_id


def _free_id(connection: Connection, column: Any, wanted: str) -> str:
    """``wanted``, or ``wanted-2``, ``wanted-3``… whichever is not yet taken in ``column``."""
    for attempt in itertools.count(1):
        candidate = wanted if attempt == 1 else f"{wanted[:120]}-{attempt}"
        if connection.scalar(select(func.count()).where(column == candidate)) == 0:
            return candidate
    raise AssertionError("unreachable")


class _ConversationWriter:
    """Writes one conversation inside the caller's transaction.

    Batches of new messages are inserted by ``inserter``'s thread while this one builds the next batch;
    one batch at a time is in flight. Everything else this writer does on the connection goes through
    ``connection``, which first waits for that insert to end: the connection is only ever used by one
    thread at a time, and in the order the statements were issued.

    On PostgreSQL a batch costs one statement, its ``COPY``: row IDs come from ``row_ids`` (a block of the
    sequence at a time), and the mentions of inserted messages are held (``_held_mentions``) and copied
    in once for the conversation, or when ``MENTIONS_HELD`` of them wait, or before anything reads or
    replaces stored mentions: all inside the conversation's transaction, so they commit or roll back with
    their messages."""

    def __init__(self, connection: Connection, source: str, directory: _Directory, known_spaces: _Spaces,
                 inserter: ThreadPoolExecutor, row_ids: _RowIds) -> None:
        self._connection = connection
        self._inserter = inserter
        self._inserting: Future[None] | None = None
        self._row_ids = row_ids
        self._held_mentions: list[tuple[int, str]] = []
        self.source = source
        self.directory = directory
        self.spaces = known_spaces
        self.dialect = connection.dialect.name
        self.names = _Names(directory, self._channel_name)

    @property
    def connection(self) -> Connection:
        """The transaction's connection, once the batch being inserted (if any) is in."""
        self._wait_for_insert()
        return self._connection

    def _wait_for_insert(self) -> None:
        """Wait for the batch being inserted; raise what its insert raised."""
        if self._inserting is not None:
            inserting, self._inserting = self._inserting, None
            inserting.result()

    def write(self, conversation: ImportedConversation, prepared: Iterator[reading.Prepared],
              tick: Callable[[int], None]) -> MessageCounts:
        """``prepared``: the conversation's messages (not ``conversation.messages``, which is not read)."""
        try:
            written = self._write(conversation, prepared, tick)
        except BaseException:
            # the transaction is rolled back next: not while an insert is still using the connection
            if self._inserting is not None:
                self._inserting.exception()
                self._inserting = None
            raise
        self._copy_held_mentions()
        return written

    def _write(self, conversation: ImportedConversation, prepared: Iterator[reading.Prepared],
               tick: Callable[[int], None]) -> MessageCounts:
        space_id = self._space_id(conversation.external_id)
        if self.dialect == "postgresql":
            # Two imports writing one conversation at once take turns: what a batch finds stored is then
            # what is stored, and its new messages can be inserted without an upsert (SQLite's write lock
            # does the same there). The commit does not wait for the log to reach the disk: a crash can
            # lose only the last conversations committed, whole (never a part of one), and importing the
            # export again writes them.
            self.connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key)), "
                                         "set_config('synchronous_commit', 'off', true)"),
                                    {"key": f"convener.chat.import:{space_id}"})
        member_ids = [self._user(ref) for ref in conversation.members]
        self._write_space(space_id, conversation)
        if conversation.display_name:  # what a <#C…> to it reads from now on (the stored name is kept otherwise)
            self.spaces.stage(conversation.external_id[:512], space_id, conversation.display_name[:512])
        if member_ids:
            self.connection.execute(
                upsert(self.dialect, memberships, ["space_id", "user_id"], []),
                [{"space_id": space_id, "user_id": user_id, "role": "member", "create_time_us": None}
                 for user_id in dict.fromkeys(member_ids)],
            )
        written = MessageCounts()
        last_active = 0
        # A conversation none of whose messages is stored yet (a first import) can only find stored the
        # messages this transaction wrote: their IDs are kept, and a batch with none of them need not ask the
        # store what it holds (a query of ~500 IDs per batch otherwise)
        written_ids: set[str] | None = None if self._has_messages(space_id) else set()
        size = COPY_BATCH if self.dialect == "postgresql" else BATCH
        while batch := list(itertools.islice(prepared, size)):
            rows, mentioned = zip(*(self._message_row(space_id, item) for item in batch), strict=True)
            self._write_messages(space_id, list(rows), list(mentioned), written, written_ids)
            last_active = max([last_active, *(row[_CREATE_TIME] for row in rows if row[_LISTED])])
            tick(written.total)
        if last_active:
            self.connection.execute(
                update(spaces).where(spaces.c.space_id == space_id, spaces.c.last_active_time_us < last_active)
                .values(last_active_time_us=last_active)
            )
        return written

    # ------------------------------------------------------------------ spaces and users

    def _space_id(self, external: str) -> str:
        """Our space ID for a conversation of this export, linked on first sight (also when only quoted)."""
        found = self.spaces.by_external.get(external[:512])
        if found is not None:
            return found
        wanted = safe_id(external)
        space_id = wanted
        for attempt in itertools.count(2):
            taken = self.connection.scalar(select(func.count()).select_from(links).where(
                links.c.kind == "space", links.c.internal_id == space_id))
            taken = taken or self.connection.scalar(select(func.count()).where(spaces.c.space_id == space_id))
            if not taken:
                break
            space_id = f"{wanted[:120]}-{attempt}"
        self.connection.execute(insert(links).values(source=self.source, kind="space", external_id=external[:512],
                                                     internal_id=space_id))
        self.spaces.stage(external[:512], space_id, None)  # no space row yet: no name
        return space_id

    def _write_space(self, space_id: str, conversation: ImportedConversation) -> None:
        """Create the space, or update what this export says of it: a reader that does not know a
        conversation's name or creation time (say, one run of a Mattermost channel's posts) erases neither."""
        display_name = conversation.display_name[:512] if conversation.display_name else None
        self.connection.execute(
            upsert(self.dialect, spaces, ["space_id"], ["space_type"]),
            [{"space_id": space_id, "display_name": display_name, "space_type": conversation.space_type,
              "create_time_us": conversation.create_time, "last_active_time_us": conversation.create_time or 0}],
        )
        known = {"display_name": display_name, "create_time_us": conversation.create_time}
        if any(value is not None for value in known.values()):
            self.connection.execute(update(spaces).where(spaces.c.space_id == space_id).values(
                **{column: value for column, value in known.items() if value is not None}))

    def _user(self, ref: str, profile: ImportedUser | None = None) -> str:
        """Our user ID for a reference. An unknown one (a bot, a deactivated account) becomes a user: as
        ``profile`` describes it, else named by the reference itself."""
        found = self.directory.resolve(ref)
        if found is not None:
            return found
        if profile is not None:
            return _write_user(self.connection, self.source, self.directory, replace(profile, external_id=ref))
        bare = ref.removeprefix("users/")
        email = bare.lower() if "@" in bare else None
        display = bare.split("@")[0] if email else bare
        return _write_user(self.connection, self.source, self.directory,
                           ImportedUser(external_id=ref, display_name=display, email=email,
                                        preferred_id=display))

    def _channel_name(self, external: str) -> str | None:
        return self.spaces.names.get(external)

    # ------------------------------------------------------------------ messages

    def _message_row(self, space_id: str, prepared: reading.Prepared) -> tuple[_Row, list[str]]:
        """The message's row, its values in ``_ROW_COLUMNS``' order (a tuple, not a dict: this runs per
        message), and the users it mentions."""
        message = prepared.message
        message_id = safe_id(message.external_id)
        private_viewer = self._user(message.private_viewer) if message.private_viewer else None
        listed = not message.system and message.delete_time is None and private_viewer is None
        text = reading.converted(prepared, self.names)
        row = (
            space_id,
            message_id,
            safe_id(message.thread_external_id) if message.thread_external_id else None,
            message.threaded_reply,
            self._user(message.sender, message.sender_profile) if message.sender else None,
            message.create_time,
            message.last_update_time,
            message.delete_time,
            private_viewer,
            message.system,
            listed,
            text.has_link,
            text.markdown,
            text.plain_text,
            _attachments(space_id, message_id, message.attachments) or None if message.attachments else None,
            self._reactions(message.reactions) or None if message.reactions else None,
            self._quote(space_id, message) if message.quote else None,
        )
        if not text.mentions:
            return row, []
        mentioned = [user_id for ref in text.mentions
                     if (user_id := self.directory.resolve(ref)) is not None]
        return row, list(dict.fromkeys(mentioned))

    def _has_messages(self, space_id: str) -> bool:
        return self.connection.scalar(select(messages.c.row_id).where(messages.c.space_id == space_id).limit(1)) \
            is not None

    def _write_messages(self, space_id: str, rows: list[_Row], mentioned: list[list[str]],
                        counts: MessageCounts, written_ids: set[str] | None) -> None:
        """Upsert the rows that are new or differ from what is stored (with their mentions); count each.
        ``written_ids``: when the conversation had no message stored before this transaction, the IDs of
        those it wrote since (updated here); None otherwise."""
        message_ids = [row[_MESSAGE_ID] for row in rows]
        if written_ids is not None and written_ids.isdisjoint(message_ids):
            stored: dict[str, tuple[_Row, list[str]]] = {}
        else:
            stored = self._stored(space_id, message_ids)
        if written_ids is not None:
            written_ids.update(message_ids)
        if not stored:
            # Nothing of the batch is stored (a first import): all of it is new.
            counts.added += len(rows)
            if len(set(message_ids)) == len(rows):  # each once: plain bulk inserts, no upsert to plan per row
                self._insert_new(rows, mentioned)
            else:
                self._upsert(rows, mentioned)
            return
        changed_rows: list[_Row] = []
        changed_mentions: list[list[str]] = []
        for row, users_mentioned in zip(rows, mentioned, strict=True):
            before = stored.get(row[_MESSAGE_ID])
            if before is not None and _same(before, row, users_mentioned):
                counts.unchanged += 1
                continue
            if before is None:
                counts.added += 1
            else:
                counts.updated += 1
            changed_rows.append(row)
            changed_mentions.append(users_mentioned)
        if not changed_rows:
            return
        fresh = [index for index, row in enumerate(changed_rows) if row[_MESSAGE_ID] not in stored]
        if len(fresh) == len(changed_rows) and len({row[_MESSAGE_ID] for row in changed_rows}) == len(changed_rows):
            # All new, each once: plain bulk inserts, no upsert to plan per row.
            self._insert_new(changed_rows, changed_mentions)
            return
        self._upsert(changed_rows, changed_mentions)

    def _insert_new(self, rows: list[_Row], mentioned: list[list[str]]) -> None:
        """Insert messages not stored yet, and their mentions, in bulk through the driver: row IDs are taken
        beforehand (SQLite: after the largest, under the transaction's write lock; PostgreSQL: from the
        column's sequence), so nothing needs to come back. PostgreSQL copies the rows (``COPY``); its search
        vector is computed by the server as for any insert, SQLite's index by its triggers."""
        self._wait_for_insert()  # one batch in flight
        self._inserting = self._inserter.submit(self._insert_now, rows, mentioned)

    def _insert_now(self, rows: list[_Row], mentioned: list[list[str]]) -> None:
        """``_insert_new``'s work, on the inserter's thread: the connection is this thread's alone meanwhile."""
        connection = self._connection
        row_ids = self._new_row_ids(len(rows))
        columns = ["row_id", *_ROW_COLUMNS]
        records = [_record(row_id, row) for row_id, row in zip(row_ids, rows, strict=True)]
        pairs = [(row_id, user_id) for row_id, users_mentioned in zip(row_ids, mentioned, strict=True)
                 for user_id in users_mentioned]
        if self.dialect == "postgresql":
            with self._driver_cursor() as cursor:
                with cursor.copy(f"COPY chat_messages ({', '.join(columns)}) FROM STDIN") as copy:
                    for record in records:
                        copy.write_row(record)
            self._held_mentions.extend(pairs)
            if len(self._held_mentions) >= MENTIONS_HELD:
                self._copy_mentions_now()
            return
        marks = ", ".join("?" for _ in columns)
        with self._search_index_in_bulk(row_ids[0], row_ids[-1]):
            connection.exec_driver_sql(f"INSERT INTO chat_messages ({', '.join(columns)}) VALUES ({marks})",
                                       records)
        if pairs:
            connection.exec_driver_sql("INSERT INTO chat_mentions (message_row_id, user_id) VALUES (?, ?)", pairs)

    @contextmanager
    def _search_index_in_bulk(self, first: int, last: int) -> Iterator[None]:
        """SQLite: index the rows ``first``..``last`` inserted inside the block for full-text search with
        one statement, not row by row through the insert trigger (FTS5 takes about 15 times as long so).
        The trigger is dropped and made again as it was, inside this transaction: no other writer can see
        it missing (the transaction holds SQLite's write lock), and a failure rolls all of it back."""
        trigger = self._connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (_FTS_INSERT_TRIGGER,)).scalar()
        if trigger is None:  # not the schema this was written for: let the store do as it does
            yield
            return
        self._connection.exec_driver_sql(f"DROP TRIGGER {_FTS_INSERT_TRIGGER}")
        yield
        self._connection.exec_driver_sql(
            "INSERT INTO chat_messages_fts (rowid, search_text) "
            "SELECT row_id, search_text FROM chat_messages WHERE row_id BETWEEN ? AND ?", (first, last))
        self._connection.exec_driver_sql(str(trigger))

    def _driver_cursor(self) -> Any:
        """A psycopg cursor on the transaction's connection."""
        return self._connection.connection.driver_connection.cursor()  # type: ignore[union-attr]

    def _copy_held_mentions(self) -> None:
        """Copy in the mentions held back, once no insert is in flight."""
        self._wait_for_insert()
        self._copy_mentions_now()

    def _copy_mentions_now(self) -> None:
        if not self._held_mentions:
            return
        pairs, self._held_mentions = self._held_mentions, []
        with self._driver_cursor() as cursor:
            with cursor.copy("COPY chat_mentions (message_row_id, user_id) FROM STDIN") as copy:
                for pair in pairs:
                    copy.write_row(pair)

    def _new_row_ids(self, count: int) -> list[int]:
        if self.dialect == "postgresql":
            return self._row_ids.take(self._connection, count)
        largest = int(self._connection.scalar(select(func.coalesce(func.max(messages.c.row_id), 0))) or 0)
        return list(range(largest + 1, largest + 1 + count))

    def _upsert(self, changed_rows: list[_Row], changed_mentions: list[list[str]]) -> None:
        """Write rows of which some are stored already (a re-import that changed them), with their mentions."""
        self._copy_held_mentions()  # the mentions replaced below may be among them
        columns = [name for name in _ROW_COLUMNS if name not in ("space_id", "message_id")]
        # The row IDs come back from the upsert itself, in the rows' order: a second SELECT by message ID
        # is at the planner's mercy while a fresh table's statistics still say it is empty.
        statement = upsert(self.dialect, messages, ["space_id", "message_id"], columns).returning(
            messages.c.message_id, messages.c.row_id)
        values = [dict(zip(_ROW_COLUMNS, row, strict=True)) for row in changed_rows]
        row_ids = {row.message_id: row.row_id for row in self.connection.execute(statement, values)}
        ids = [row_ids[row[_MESSAGE_ID]] for row in changed_rows]
        self.connection.execute(delete(mentions).where(mentions.c.message_row_id.in_(ids)))
        pairs = [{"message_row_id": row_id, "user_id": user_id}
                 for row_id, users_mentioned in zip(ids, changed_mentions, strict=True) for user_id in users_mentioned]
        if pairs:
            self.connection.execute(upsert(self.dialect, mentions, ["message_row_id", "user_id"], []), pairs)

    def _stored(self, space_id: str, message_ids: list[str]) -> dict[str, tuple[_Row, list[str]]]:
        """The stored rows among ``message_ids`` (values in ``_ROW_COLUMNS``' order) with their mentioned
        users (sorted), by message ID."""
        self._copy_held_mentions()  # the mentions read below may be among them
        columns = [messages.c[name] for name in _ROW_COLUMNS]
        found = self.connection.execute(
            select(messages.c.row_id, *columns)
            .where(messages.c.space_id == space_id, messages.c.message_id.in_(message_ids))
        ).all()
        if not found:
            return {}
        mentioned: dict[int, list[str]] = {}
        for row_id, user_id in self.connection.execute(
            select(mentions.c.message_row_id, mentions.c.user_id)
            .where(mentions.c.message_row_id.in_([row.row_id for row in found]))
        ):
            mentioned.setdefault(row_id, []).append(user_id)
        return {row.message_id: (tuple(row)[1:], sorted(mentioned.get(row.row_id, []))) for row in found}

    def _reactions(self, reactions: Iterable[ImportedReaction]) -> list[dict[str, Any]]:
        """One entry per emoji (an export may list one emoji twice, e.g. per skin tone collapsed)."""
        merged: dict[str, dict[str, Any]] = {}
        for reaction in reactions:
            entry = merged.setdefault(reaction.emoji, {"emoji": reaction.emoji, "count": 0, "reactors": []})
            entry["count"] += max(reaction.count, len(reaction.reactors))
            entry["reactors"].extend(self._user(ref) for ref in reaction.reactors)
        return [entry for entry in merged.values() if entry["count"] > 0]

    def _quote(self, space_id: str, message: ImportedMessage) -> dict[str, Any]:
        quote: ImportedQuote = message.quote  # type: ignore[assignment]
        source_space = self._space_id(quote.conversation_external_id) if quote.conversation_external_id else space_id
        forward = quote.quote_type == "FORWARD"
        quoted_id = safe_id(quote.message_external_id) if quote.message_external_id else None
        body = (markdown.to_markdown(quote.text, message.text_format, self.names) if forward
                else markdown.plain_text(quote.text, message.text_format, self.names))
        metadata = QuotedMessageMetadata(
            message_id=f"spaces/{source_space}/messages/{quoted_id}" if quoted_id else None,
            last_update_time=Timestamp.from_micros(quote.last_update_time) if quote.last_update_time else None,
            quote_type=quote.quote_type,
            plaintext_body=body,
            sender=quote.sender_display_name,
            attachments=[ChatAttachmentMetadata.model_validate(item) for item in
                         _attachments(source_space, quoted_id or "quoted", quote.attachments)] if forward else None,
            forwarded_metadata=ForwardedMetadata(
                conversation_id=f"spaces/{source_space}",
                conversation_display_name=quote.conversation_display_name or self._channel_name(
                    quote.conversation_external_id or ""),
            ) if forward else None,
        )
        return metadata.to_json()


def _same(stored: tuple[_Row, list[str]], row: _Row, mentioned: list[str]) -> bool:
    """Whether writing ``row`` and its mentions would leave the stored message as it is."""
    columns, stored_mentions = stored
    return columns == row and stored_mentions == sorted(mentioned)


def _attachments(space_id: str, message_id: str, attachments: Iterable[ImportedAttachment]) -> list[dict[str, Any]]:
    """Each attachment's ``ChatAttachmentMetadata`` in its JSON form, written directly: the same keys in the
    same order as the model's ``to_json`` (a test compares them), without validating per attachment what the
    reader's records already type."""
    out: list[dict[str, Any]] = []
    for index, item in enumerate(attachments):
        source = AttachmentSource(item.source)  # as the model would: a source it does not know is an error
        entry: dict[str, Any] = {
            "attachmentId": f"spaces/{space_id}/messages/{message_id}/attachments/"
                            f"{safe_id(item.external_id or str(index))}",
        }
        if item.filename is not None:
            entry["filename"] = item.filename
        if item.mime_type is not None:
            entry["mimeType"] = item.mime_type
        entry["source"] = source.value
        if source is AttachmentSource.DRIVE_FILE and item.drive_file_id is not None:
            entry["driveFileId"] = item.drive_file_id
        out.append(entry)
    return out



def _record(row_id: int, row: _Row) -> tuple[Any, ...]:
    """A message row as the driver takes it, row ID first: its JSON columns (the last three) dumped, as
    SQLAlchemy's JSON type would."""
    return (row_id, *row[:_JSON_FROM], _json(row[_JSON_FROM]), _json(row[_JSON_FROM + 1]), _json(row[_JSON_FROM + 2]))


def _json(value: Any) -> str:
    # most messages have no attachments, reactions or quote: skip the encoder for them
    return "null" if value is None else json.dumps(value)
