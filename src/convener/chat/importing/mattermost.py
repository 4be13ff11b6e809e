"""Mattermost bulk exports (``mmctl export create``), a JSON Lines file or a zip holding one, read into the
format-neutral records.

Each line is one record, ``{"type": kind, kind: {...}}``, in the documented order: ``version`` first, then
``scheme``/``emoji``, ``team``, ``channel``, ``user`` (with its team and channel memberships), ``post``,
``direct_channel`` and ``direct_post``. Posts carry their replies and reactions inline and have no IDs: a
message's ID is made from what the bulk loader itself identifies a post by (see ``post_id``).

The file is read line by line, twice (users, then conversations), in constant memory but for the
directory of channels and memberships.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import zipfile
from collections.abc import Generator, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import IO, Any

from convener.api.errors import InvalidArgument
from convener.chat.emoji_names import unicode_emoji
from convener.chat.importing.archive import Archive, ClosingExport
from convener.chat.records import (
    ImportedAttachment,
    ImportedConversation,
    ImportedMessage,
    ImportedReaction,
    ImportedUser,
    ImportProblem,
    Report,
)

JsonObject = dict[str, Any]
Key = tuple[str, ...]
"""A conversation: ``("channel", team, name)`` or ``("direct", *sorted usernames)``."""

_KINDS = frozenset({
    "version", "scheme", "role", "emoji", "team", "channel", "user", "bot", "post", "direct_channel",
    "direct_post",
})
_POST_KINDS = frozenset({"post", "direct_channel", "direct_post"})
"""Kinds that come after every user: reading users stops at the first of them."""

_MESSAGE_FIELD_TYPES: dict[str, type] = {
    "user": str, "message": str, "type": str, "edit_at": int, "props": dict, "reactions": list,
    "replies": list, "attachments": list,
}


def post_id(create_at: int, user: str, message: str) -> str:
    """A post's external ID, the same on every import of the same export.

    The bulk loader identifies a post by its channel, message and creation time: so do we, within the
    conversation, with the author added and the message hashed to keep the ID short. A post edited
    between two exports is thus a new post, for Mattermost's own importer as for us. A counter of posts
    per millisecond and author would survive edits but needs memory for every post seen."""
    digest = hashlib.sha256(message.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{create_at}-{user}-{digest}"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ignore(problem: ImportProblem) -> None:
    """For the users pass: line problems are reported once, by the conversations pass."""


@dataclass(frozen=True)
class _Record:
    kind: str
    data: JsonObject
    position: str


class _Lookahead:
    """Records with one of lookahead: a run of posts ends at the first record of another conversation."""

    def __init__(self, records: Iterator[_Record]) -> None:
        self._records = records
        self._next: _Record | None = None

    def peek(self) -> _Record | None:
        if self._next is None:
            self._next = next(self._records, None)
        return self._next

    def pop(self) -> None:
        self.peek()
        self._next = None


@dataclass
class _Directory:
    """What the export says about its conversations before (and between) their posts."""

    channels: dict[Key, tuple[str | None, str]] = field(default_factory=dict)
    """Display name and position of each channel."""
    members: dict[Key, list[str]] = field(default_factory=dict)
    directs: dict[Key, str] = field(default_factory=dict)
    """Position of each direct channel."""
    custom_emoji: set[str] = field(default_factory=set)
    yielded: set[Key] = field(default_factory=set)

    def learn(self, record: _Record, report: Report) -> None:
        if record.kind == "emoji" and _text(record.data.get("name")):
            self.custom_emoji.add(record.data["name"])
        elif record.kind == "channel":
            self._channel(record, report)
        elif record.kind == "user":
            self._memberships(record.data)
        elif record.kind == "direct_channel":
            self._direct_channel(record, report)
        elif record.kind == "post":
            report(ImportProblem(record.position, "a post needs a team and a channel"))
        elif record.kind == "direct_post":
            report(ImportProblem(record.position, "a direct post needs its channel_members"))

    def _channel(self, record: _Record, report: Report) -> None:
        team, name = _text(record.data.get("team")), _text(record.data.get("name"))
        if team is None or name is None:
            report(ImportProblem(record.position, "a channel needs a team and a name"))
            return
        self.channels[("channel", team, name)] = (_text(record.data.get("display_name")) or name, record.position)

    def _memberships(self, user: JsonObject) -> None:
        """Channel members come from the users' records (a malformed one is reported by the users pass)."""
        username = _text(user.get("username"))
        teams = user.get("teams")
        if username is None or not isinstance(teams, list):
            return
        for team in teams:
            if not isinstance(team, dict) or not isinstance(team.get("channels"), list):
                continue
            for channel in team["channels"]:
                if isinstance(channel, dict) and _text(team.get("name")) and _text(channel.get("name")):
                    self.members.setdefault(("channel", team["name"], channel["name"]), []).append(username)

    def _direct_channel(self, record: _Record, report: Report) -> None:
        members = record.data.get("members")
        if members is None:  # newer exports list participants with their read state
            members = [p.get("username") for p in record.data.get("participants") or [] if isinstance(p, dict)]
        key = _direct_key(members)
        if key is None:
            report(ImportProblem(record.position, "a direct channel needs a list of member usernames"))
        else:
            self.directs.setdefault(key, record.position)

    def conversation(self, key: Key, position: str, messages: Iterator[ImportedMessage]) -> ImportedConversation:
        self.yielded.add(key)
        if key[0] == "channel":
            display_name, position = self.channels.get(key, (key[2], position))
            return ImportedConversation(
                external_id=f"{key[1]}/{key[2]}", space_type="SPACE", display_name=display_name,
                members=tuple(self.members.get(key, ())), messages=messages, position=position,
            )
        usernames = key[1:]
        # Mattermost's own rule: two members (or one, a note to self) make a DM, more a group message.
        return ImportedConversation(
            external_id="direct:" + ",".join(usernames),
            space_type="DIRECT_MESSAGE" if len(usernames) <= 2 else "GROUP_CHAT",
            display_name=None, members=usernames, messages=messages, position=self.directs.get(key, position),
        )

    def without_posts(self) -> Iterator[ImportedConversation]:
        """Conversations the export defines but no post of which was seen: still spaces with members."""
        for key, (_, position) in self.channels.items():
            if key not in self.yielded:
                yield self.conversation(key, position, iter(()))
        for key, position in self.directs.items():
            if key not in self.yielded:
                yield self.conversation(key, position, iter(()))


def _direct_key(members: Any) -> Key | None:
    if not isinstance(members, list) or not members or not all(isinstance(m, str) and m for m in members):
        return None
    return ("direct", *sorted(set(members)))


def _post_key(record: _Record) -> Key | None:
    """The conversation a post record belongs to; None for other records and posts that name none."""
    if record.kind == "post":
        team, channel = _text(record.data.get("team")), _text(record.data.get("channel"))
        return ("channel", team, channel) if team is not None and channel is not None else None
    if record.kind == "direct_post":
        return _direct_key(record.data.get("channel_members"))
    return None


class MattermostExport(ClosingExport):
    """A Mattermost bulk export, streamed.

    Real exports list a channel's posts together, but nothing in the format requires it: each contiguous
    run of posts of one channel becomes one ``ImportedConversation``, so a channel whose posts interleave
    with another's is yielded once per run. The writer upserts spaces, members and messages by their
    external IDs, so the runs add up to the whole conversation. Channels and direct channels without any
    post are yielded last, with their members and no messages.
    """

    source = "mattermost"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._archive: Archive | None = None
        self._member = ""
        if path.is_file() and not zipfile.is_zipfile(path):
            self._name = path.name
            return
        self._archive = Archive(path)
        found = [name for name in self._archive.names() if name.endswith(".jsonl")]
        if len(found) != 1:
            self._archive.close()
            raise InvalidArgument(f"{path} should hold one .jsonl file, not {len(found)}")
        self._member = found[0]
        self._name = PurePosixPath(self._member).name

    def close(self) -> None:
        if self._archive is not None:
            self._archive.close()

    def conversation_count(self) -> int | None:
        return None  # known only after reading the whole file

    # ------------------------------------------------------------------------------------------ reading

    @contextmanager
    def _open(self) -> Iterator[IO[bytes]]:
        if self._archive is None:
            with self.path.open("rb") as stream:
                yield stream
        else:
            with self._archive.open(self._member) as stream:
                yield stream

    def _records(self, report: Report) -> Generator[_Record, None, None]:
        """Every well-formed record, in file order; the others are reported with their line."""
        with self._open() as stream:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                position = f"{self._name}:{number}"
                record = _parse(line, position)
                if isinstance(record, str):
                    report(ImportProblem(position, record))
                    continue
                if number == 1 and record.kind != "version":
                    report(ImportProblem(position, "the first line should be the version record"))
                yield record

    # ------------------------------------------------------------------------------------------ users

    def users(self, report: Report) -> Iterator[ImportedUser]:
        with closing(self._records(_ignore)) as records:
            for record in records:
                if record.kind in _POST_KINDS:
                    return
                if record.kind in ("user", "bot"):
                    user = _user(record.data, is_app=record.kind == "bot")
                    if user is None:
                        report(ImportProblem(record.position, f"a {record.kind} needs a username"))
                    else:
                        yield user

    # ------------------------------------------------------------------------------------------ conversations

    def conversations(self, report: Report) -> Iterator[ImportedConversation]:
        directory = _Directory()
        posts = _Posts(report, directory.custom_emoji)
        with closing(self._records(report)) as records:
            stream = _Lookahead(records)
            while (record := stream.peek()) is not None:
                key = _post_key(record)
                if key is None:
                    stream.pop()
                    directory.learn(record, report)
                    continue
                yield directory.conversation(key, record.position, posts.run(stream, key))
                _skip_run(stream, key)
        yield from directory.without_posts()


def _parse(line: bytes, position: str) -> _Record | str:
    """The record on a line, or what is wrong with it."""
    try:
        value = json.loads(line)
    except (ValueError, UnicodeDecodeError) as error:
        return f"not valid JSON: {error}"
    if not isinstance(value, dict):
        return "not a JSON object"
    kind = value.get("type")
    if not isinstance(kind, str):
        return "no record type"
    if kind not in _KINDS:
        return f"unknown record type {kind!r}"
    data = value if kind == "version" else value.get(kind)
    if not isinstance(data, dict):
        return f"a {kind} record needs a {kind!r} object"
    return _Record(kind, data, position)


def _skip_run(stream: _Lookahead, key: Key) -> None:
    """Past what the consumer left of a run (nothing, when it read every message)."""
    while (record := stream.peek()) is not None and _post_key(record) == key:
        stream.pop()


@dataclass(frozen=True)
class _Posts:
    """Turns post records into messages, reporting what is wrong with them."""

    report: Report
    custom_emoji: set[str]
    """Names of the export's own emoji: they stay names even where a Unicode emoji has the same one."""

    def run(self, stream: _Lookahead, key: Key) -> Iterator[ImportedMessage]:
        """The messages of the posts from here on that belong to ``key``'s conversation."""
        while (record := stream.peek()) is not None and _post_key(record) == key:
            stream.pop()
            yield from self.messages(record)

    def messages(self, record: _Record) -> Iterator[ImportedMessage]:
        """A post, then its replies, which thread under it."""
        root = self.message(record.data, record.position)
        if root is None:
            return
        replies = record.data.get("replies") or []
        if not replies:
            yield root
            return
        yield replace(root, thread_external_id=root.external_id)
        for index, reply in enumerate(replies):
            position = f"{record.position}.replies[{index}]"
            if not isinstance(reply, dict):
                self.report(ImportProblem(position, "not an object"))
                continue
            message = self.message(reply, position, thread=root.external_id)
            if message is not None:
                yield message

    def message(self, data: JsonObject, position: str, thread: str | None = None) -> ImportedMessage | None:
        problem = _message_problem(data)
        if problem:
            lost = " (its replies are skipped too)" if data.get("replies") else ""
            self.report(ImportProblem(position, problem + lost))
            return None
        create_at: int = data["create_at"]
        user: str = data["user"]
        text: str = data.get("message") or ""
        edit_at = _integer(data.get("edit_at"))
        return ImportedMessage(
            external_id=post_id(create_at, user, text),
            create_time=create_at * 1000,
            text=text,
            text_format="markdown",
            sender=user,
            thread_external_id=thread,
            threaded_reply=thread is not None,
            last_update_time=edit_at * 1000 if edit_at else None,
            system=(data.get("type") or "").startswith("system_"),
            attachments=_attachments(data.get("attachments") or [], position, self.report),
            reactions=self.reactions(data.get("reactions") or [], position),
            position=position,
        )

    def reactions(self, items: list[Any], position: str) -> tuple[ImportedReaction, ...]:
        """One reaction per emoji, with everyone who chose it (the export has one record per user and emoji)."""
        reactors: dict[str, list[str | None]] = {}
        for index, item in enumerate(items):
            name = _text(item.get("emoji_name")) if isinstance(item, dict) else None
            if name is None:
                self.report(ImportProblem(f"{position}.reactions[{index}]", "a reaction needs an emoji_name"))
                continue
            glyph = name if name in self.custom_emoji else unicode_emoji(name)
            reactors.setdefault(glyph, []).append(_text(item.get("user")))
        return tuple(
            ImportedReaction(emoji=glyph, count=len(users), reactors=tuple(u for u in users if u is not None))
            for glyph, users in reactors.items()
        )


def _message_problem(data: JsonObject) -> str | None:
    create_at = data.get("create_at")
    if create_at is None:
        return "no create_at"
    if _integer(create_at) is None:
        return "create_at is not an integer"
    if _text(data.get("user")) is None:
        return "no user"
    for name, kind in _MESSAGE_FIELD_TYPES.items():
        value = data.get(name)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            return f"{name} is not of type {kind.__name__}"
    return None


def _attachments(items: list[Any], position: str, report: Report) -> tuple[ImportedAttachment, ...]:
    attachments: list[ImportedAttachment] = []
    for index, item in enumerate(items):
        path = _text(item.get("path")) if isinstance(item, dict) else None
        if path is None:
            report(ImportProblem(f"{position}.attachments[{index}]", "an attachment needs a path"))
            continue
        filename = PurePosixPath(path).name or path
        mime_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        attachments.append(ImportedAttachment(filename=filename, mime_type=mime_type, external_id=path))
    return tuple(attachments)


def _user(data: JsonObject, is_app: bool) -> ImportedUser | None:
    username = _text(data.get("username"))
    if username is None:
        return None
    full_name = " ".join(part for part in (_text(data.get("first_name")), _text(data.get("last_name"))) if part)
    display_name = _text(data.get("display_name")) or full_name or _text(data.get("nickname")) or username
    return ImportedUser(
        external_id=username,
        display_name=display_name,
        email=_text(data.get("email")),
        user_type="APP" if is_app else "HUMAN",
        preferred_id=username,
    )
