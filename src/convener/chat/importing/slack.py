"""Slack workspace exports (a folder, or the zip Slack hands out), read into the format-neutral records.

An export holds ``users.json``, one index per kind of conversation (``channels.json``, ``groups.json`` for
private channels, ``mpims.json`` for group DMs, ``dms.json``; older exports have only ``channels.json``) and
one folder per conversation of day files, ``<folder>/YYYY-MM-DD.json``, each a JSON array of messages.
Day files are read one at a time, in date order, so a conversation of any length takes the memory of its
busiest day.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlparse

from convener.api.errors import InvalidArgument
from convener.chat.emoji_names import unicode_emoji
from convener.chat.importing.archive import Archive, ClosingExport
from convener.chat.records import (
    ImportedAttachment,
    ImportedConversation,
    ImportedMessage,
    ImportedQuote,
    ImportedReaction,
    ImportedUser,
    ImportProblem,
    MalformedConversation,
    Report,
    SpaceType,
)

JsonObject = dict[str, Any]

_DAY_FILE = re.compile(r"(?P<folder>[^/]+)/[0-9]{4}-[0-9]{2}-[0-9]{2}\.json")
_TS = re.compile(r"(?P<seconds>[0-9]+)(?:\.(?P<fraction>[0-9]{1,6}))?")  # ASCII digits only

_INDEXES: tuple[tuple[str, SpaceType], ...] = (
    ("channels.json", "SPACE"),
    ("groups.json", "SPACE"),
    ("mpims.json", "GROUP_CHAT"),
    ("dms.json", "DIRECT_MESSAGE"),
)

_SYSTEM_SUBTYPES = frozenset({
    "channel_join", "channel_leave", "channel_topic", "channel_purpose", "channel_name", "channel_archive",
    "channel_unarchive", "channel_convert_to_private", "channel_convert_to_public",
    "channel_posting_permissions", "group_join", "group_leave", "group_topic", "group_purpose", "group_name",
    "group_archive", "group_unarchive", "pinned_item", "unpinned_item", "bot_add", "bot_remove",
    "bot_enable", "bot_disable", "app_conversation_join", "reminder_add", "reminder_delete",
})
_EVENT_SUBTYPES = frozenset({"message_changed", "message_replied"})
"""Edit notices: the export already holds the message itself, in its final form."""

_DELETED_FILE_MODES = frozenset({"tombstone", "hidden_by_limit"})
"""Files Slack no longer serves: they carry an ID and nothing else, no name to show."""

_MESSAGE_FIELD_TYPES: dict[str, type] = {
    "text": str, "user": str, "subtype": str, "thread_ts": str, "bot_id": str, "edited": dict,
    "reactions": list, "files": list, "attachments": list, "replies": list,
}

_DRIVE_HOSTS = frozenset({"docs.google.com", "drive.google.com"})
_DRIVE_ID = re.compile(r"/(?:d|folders)/(?P<id>[A-Za-z0-9_-]{10,})")


# ---------------------------------------------------------------------------------------------- values


def ts_micros(ts: str) -> int | None:
    """Microseconds since the epoch from a Slack ``ts`` ("1512085950.000216"), exactly: the decimal string
    is read as digits, never through a float, which would round the last microseconds."""
    match = _TS.fullmatch(ts)
    if match is None:
        return None
    fraction = (match["fraction"] or "").ljust(6, "0")
    return int(match["seconds"]) * 1_000_000 + int(fraction)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def _wrong_type(record: JsonObject, types: dict[str, type]) -> str | None:
    """The first field present with a type other than the format's, for a problem report."""
    for name, kind in types.items():
        if name in record and record[name] is not None and not isinstance(record[name], kind):
            return f"{name} is not of type {kind.__name__}"
    return None


def _load_json(archive: Archive, name: str) -> Any:
    with archive.open(name) as stream:
        return json.load(stream)


def _json_array(archive: Archive, name: str, report: Report, consequence: str) -> list[Any]:
    """A top-level file's array; empty when the file is absent, or unreadable (then reported, saying what
    follows from it)."""
    if not archive.exists(name):
        return []
    try:
        records = _load_json(archive, name)
    except (ValueError, UnicodeDecodeError) as error:
        report(ImportProblem(name, f"not valid JSON ({error}): {consequence}"))
        return []
    if not isinstance(records, list):
        report(ImportProblem(name, f"not a JSON array: {consequence}"))
        return []
    return records


# ---------------------------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class _Channel:
    """A conversation of the export and the folder its day files are in."""

    external_id: str
    space_type: SpaceType
    display_name: str | None
    members: tuple[str, ...]
    create_time: int | None
    folder: str
    position: str


class _Link(NamedTuple):
    """What a Slack message link (``…/archives/C123/p1512085950000216?thread_ts=…``) points at."""

    channel: str | None = None
    ts: str | None = None
    thread_ts: str | None = None


class SlackExport(ClosingExport):
    """A Slack workspace export, read lazily: one day file in memory at a time.

    Users are read from ``users.json``. Bots that post without a ``user`` are named by their ``bot_id``;
    when ``users.json`` lists that bot as an app user (``profile.bot_id``), the message is attributed to
    that user instead. Legacy integrations have no such entry: finding them would mean reading every day
    file before the first conversation, so their ``bot_id`` stays the sender and the writer makes the user
    when it first meets it.
    """

    source = "slack"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._archive = Archive(path, markers=("users.json", *(index for index, _ in _INDEXES)))
        self._bot_users: dict[str, str] | None = None
        names = self._archive.names()
        if not any(name in names for name in ("users.json", *(index for index, _ in _INDEXES))) and not any(
                _DAY_FILE.fullmatch(name) for name in names):
            self._archive.close()
            raise InvalidArgument(f"{path} is not a Slack workspace export: it has no users.json, channels.json "
                                  "or per-day message files")

    def close(self) -> None:
        self._archive.close()

    # ------------------------------------------------------------------------------------------ users

    def users(self, report: Report) -> Iterator[ImportedUser]:
        yield from self._read_users(report)

    def _read_users(self, report: Report) -> list[ImportedUser]:
        """``users.json``'s users; also learns which user each bot posts as."""
        self._bot_users = {}
        records = _json_array(self._archive, "users.json", report, "no users imported")
        users: list[ImportedUser] = []
        for index, record in enumerate(records):
            user = _user(record) if isinstance(record, dict) else None
            if user is None:
                problem = "a user needs a string id" if isinstance(record, dict) else "not an object"
                report(ImportProblem(f"users.json[{index}]", problem))
                continue
            users.append(user)
            profile = record.get("profile")
            bot_id = profile.get("bot_id") if isinstance(profile, dict) else None
            if isinstance(bot_id, str):
                self._bot_users[bot_id] = user.external_id
        return users

    def _bot_user(self, bot_id: str) -> str:
        if self._bot_users is None:
            self._read_users(lambda problem: None)  # users() reported its problems already, or will
        assert self._bot_users is not None
        return self._bot_users.get(bot_id, bot_id)

    # ------------------------------------------------------------------------------------------ conversations

    def conversation_count(self) -> int | None:
        return len(self._plan(self._day_files(), lambda problem: None))

    def conversations(self, report: Report) -> Iterator[ImportedConversation]:
        days = self._day_files()
        for channel in self._plan(days, report):
            yield ImportedConversation(
                external_id=channel.external_id,
                space_type=channel.space_type,
                display_name=channel.display_name,
                members=channel.members,
                messages=self._messages(channel, days.get(channel.folder, []), report),
                create_time=channel.create_time,
                position=channel.position,
            )

    def _day_files(self) -> dict[str, list[str]]:
        """Each folder's day files; names sort as dates do."""
        days: dict[str, list[str]] = defaultdict(list)
        for name in self._archive.names():
            match = _DAY_FILE.fullmatch(name)
            if match:
                days[match["folder"]].append(name)
        return days

    def _plan(self, days: dict[str, list[str]], report: Report) -> list[_Channel]:
        """Every conversation: those the indexes list, then folders no index mentions (as spaces)."""
        channels: dict[str, _Channel] = {}
        for index, space_type in _INDEXES:
            for channel in self._index(index, space_type, report):
                channels.setdefault(channel.folder, channel)
        for folder in sorted(days.keys() - channels.keys()):
            channels[folder] = _Channel(folder, "SPACE", folder, (), None, folder, f"{folder}/")
        return list(channels.values())

    def _index(self, name: str, space_type: SpaceType, report: Report) -> Iterator[_Channel]:
        records = _json_array(self._archive, name, report, "its folders import as plain spaces")
        for index, record in enumerate(records):
            position = f"{name}[{index}]"
            channel = _channel(record, space_type, position)
            if channel is None:
                report(ImportProblem(position, "a conversation needs a string id (and a name unless a DM)"))
            else:
                yield channel

    # ------------------------------------------------------------------------------------------ messages

    def _messages(self, channel: _Channel, day_files: list[str], report: Report) -> Iterator[ImportedMessage]:
        for name in day_files:
            for position, micros, record in _day_records(self._archive, name, report):
                message = self._message(record, micros, channel, position, report)
                if message is not None:
                    yield message

    def _message(self, record: JsonObject, micros: int, channel: _Channel, position: str,
                 report: Report) -> ImportedMessage | None:
        wrong = _wrong_type(record, _MESSAGE_FIELD_TYPES)
        if wrong:
            report(ImportProblem(position, wrong))
            return None
        subtype = record.get("subtype")
        if subtype in _EVENT_SUBTYPES:
            return None
        if subtype == "message_deleted":
            return _deletion_notice(record, micros, position)
        ts: str = record["ts"]
        thread_id, is_reply = _thread(record, ts)
        edited = _edit_time(record)
        # A tombstone keeps a deleted thread root in place for its replies; Slack says only that it was
        # deleted, not when: the last edit, or else its creation, is the best bound we have.
        deleted = subtype == "tombstone" or record.get("hidden") is True
        return ImportedMessage(
            external_id=ts,
            create_time=micros,
            text="" if deleted else record.get("text") or "",
            text_format="slack",
            sender=self._sender(record),
            sender_profile=_bot_profile(record),
            thread_external_id=thread_id,
            threaded_reply=is_reply,
            last_update_time=edited,
            delete_time=(edited or micros) if deleted else None,
            system=subtype in _SYSTEM_SUBTYPES,
            attachments=() if deleted else _attachments(record.get("files") or [], position, report),
            reactions=() if deleted else _reactions(record.get("reactions") or [], position, report),
            quote=None if deleted else _quote(record, channel.external_id, thread_id if is_reply else None),
            position=position,
        )

    def _sender(self, record: JsonObject) -> str | None:
        user = _text(record.get("user"))
        if user is not None:
            return user
        bot_id = _text(record.get("bot_id"))
        return self._bot_user(bot_id) if bot_id is not None else None


# ---------------------------------------------------------------------------------------------- records


def _bot_profile(record: JsonObject) -> ImportedUser | None:
    """A bot or webhook posting without a user: its ``bot_profile`` or ``username`` names it, as an app."""
    bot_id = _text(record.get("bot_id"))
    if bot_id is None or _text(record.get("user")) is not None:
        return None
    profile = record.get("bot_profile")
    name = (_text(profile.get("name")) if isinstance(profile, dict) else None) or _text(record.get("username"))
    return ImportedUser(external_id=bot_id, display_name=name or bot_id, user_type="APP", preferred_id=name)


def _user(record: JsonObject) -> ImportedUser | None:
    user_id = _text(record.get("id"))
    if user_id is None:
        return None
    profile = record.get("profile")
    if not isinstance(profile, dict):
        profile = {}
    handle = _text(record.get("name"))
    display = (_text(profile.get("display_name")) or _text(profile.get("real_name"))
               or _text(record.get("real_name")) or handle or user_id)
    is_app = record.get("is_bot") is True or record.get("is_app_user") is True or user_id == "USLACKBOT"
    return ImportedUser(
        external_id=user_id,
        display_name=display,
        email=_text(profile.get("email")),
        user_type="APP" if is_app else "HUMAN",
        preferred_id=handle,
    )


def _channel(record: Any, space_type: SpaceType, position: str) -> _Channel | None:
    if not isinstance(record, dict):
        return None
    channel_id, name = _text(record.get("id")), _text(record.get("name"))
    if channel_id is None or (name is None and space_type != "DIRECT_MESSAGE"):
        return None
    created = record.get("created")
    return _Channel(
        external_id=channel_id,
        space_type=space_type,
        # Group DMs' names are generated ("mpdm-alice--bob-1"), not chosen: like DMs, they have none.
        display_name=name if space_type == "SPACE" else None,
        members=_strings(record.get("members")),
        create_time=created * 1_000_000 if isinstance(created, int) and not isinstance(created, bool) else None,
        # Slack names a DM's folder by its ID: a DM has no name.
        folder=channel_id if space_type == "DIRECT_MESSAGE" else name or channel_id,
        position=position,
    )


def _day_records(archive: Archive, name: str, report: Report) -> list[tuple[str, int, JsonObject]]:
    """One day's well-formed messages in ``ts`` order, each with its position and time; the others are
    reported. A file that is not JSON at all (a truncated download) fails its whole conversation."""
    try:
        records = _load_json(archive, name)
    except (ValueError, UnicodeDecodeError) as error:
        raise MalformedConversation(ImportProblem(name, f"not valid JSON: {error}")) from error
    if not isinstance(records, list):
        report(ImportProblem(name, "not a JSON array of messages"))
        return []
    found: list[tuple[str, int, JsonObject]] = []
    for index, record in enumerate(records):
        position = f"{name}[{index}]"
        problem = _record_problem(record)
        if problem:
            report(ImportProblem(position, problem))
        else:
            found.append((position, ts_micros(record["ts"]) or 0, record))
    found.sort(key=lambda item: item[1])  # stable: equal times keep the file's order
    return found


def _record_problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return "not an object"
    ts = record.get("ts")
    if ts is None:
        return "no ts"
    if not isinstance(ts, str):
        return "ts is not a string"
    if ts_micros(ts) is None:
        return f"bad ts {ts!r}"
    return None


def _deletion_notice(record: JsonObject, micros: int, position: str) -> ImportedMessage | None:
    """A ``message_deleted`` notice names the deleted message by ``deleted_ts``: it becomes that message,
    deleted at the notice's time (the writer's upsert then marks the original deleted, if present)."""
    deleted_ts = _text(record.get("deleted_ts"))
    created = ts_micros(deleted_ts) if deleted_ts else None
    if deleted_ts is None or created is None:
        return None
    return ImportedMessage(external_id=deleted_ts, create_time=created, text="", text_format="slack",
                           delete_time=micros, position=position)


def _thread(record: JsonObject, ts: str) -> tuple[str | None, bool]:
    """The thread's ID (its root's ts) and whether this is a reply; a root without replies is no thread."""
    thread_ts = _text(record.get("thread_ts"))
    if thread_ts is not None and thread_ts != ts:
        return thread_ts, True
    reply_count = record.get("reply_count")
    has_replies = (isinstance(reply_count, int) and reply_count > 0) or bool(record.get("replies"))
    return (ts, False) if thread_ts == ts and has_replies else (None, False)


def _edit_time(record: JsonObject) -> int | None:
    edited = record.get("edited")
    ts = edited.get("ts") if isinstance(edited, dict) else None
    return ts_micros(ts) if isinstance(ts, str) else None


def _reactions(items: list[Any], position: str, report: Report) -> tuple[ImportedReaction, ...]:
    reactions: list[ImportedReaction] = []
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            report(ImportProblem(f"{position}.reactions[{index}]", "a reaction needs a name"))
            continue
        users = _strings(item.get("users"))
        count = item.get("count")
        # Slack lists at most a sample of the users of a popular reaction; count is the total.
        total = count if isinstance(count, int) and not isinstance(count, bool) else len(users)
        reactions.append(ImportedReaction(emoji=unicode_emoji(name), count=max(total, len(users)),
                                          reactors=users))
    return tuple(reactions)


def _attachments(files: list[Any], position: str, report: Report) -> tuple[ImportedAttachment, ...]:
    attachments: list[ImportedAttachment] = []
    for index, item in enumerate(files):
        if not isinstance(item, dict):
            report(ImportProblem(f"{position}.files[{index}]", "not an object"))
        elif item.get("mode") not in _DELETED_FILE_MODES:
            attachment = _attachment(item)
            if attachment is None:
                report(ImportProblem(f"{position}.files[{index}]", "a file needs an id or a name"))
            else:
                attachments.append(attachment)
    return tuple(attachments)


def _attachment(item: JsonObject) -> ImportedAttachment | None:
    file_id = _text(item.get("id"))
    filename = _text(item.get("name")) or _text(item.get("title")) or file_id
    if filename is None:
        return None
    mime_type = _text(item.get("mimetype")) or "application/octet-stream"
    if item.get("mode") == "external" or item.get("is_external") is True:
        url = _text(item.get("url_private")) or _text(item.get("external_url")) or ""
        if urlparse(url).hostname in _DRIVE_HOSTS:
            return ImportedAttachment(filename, mime_type, "DRIVE_FILE", _drive_file_id(url), file_id)
    return ImportedAttachment(filename, mime_type, "UPLOADED_CONTENT", None, file_id)


def _drive_file_id(url: str) -> str | None:
    """The file ID of a Drive or Docs link: ``…/d/<id>/edit``, ``…/folders/<id>`` or ``open?id=<id>``."""
    parsed = urlparse(url)
    match = _DRIVE_ID.search(parsed.path)
    if match:
        return match["id"]
    ids = parse_qs(parsed.query).get("id")
    return ids[0] if ids else None


# ---------------------------------------------------------------------------------------------- quotes


def _quote(record: JsonObject, here: str, thread: str | None) -> ImportedQuote | None:
    """A shared or unfurled message: a REPLY when it is in this conversation and in the same thread (or
    both in the main timeline), else a FORWARD from its conversation. ``thread`` is the quoting message's
    thread when it is a reply, None in the main timeline."""
    for item in record.get("attachments") or []:
        if isinstance(item, dict) and (item.get("is_share") is True or item.get("is_msg_unfurl") is True):
            return _quoted(item, here, thread)
    return None


def _quoted(item: JsonObject, here: str, thread: str | None) -> ImportedQuote:
    link = _message_link(_text(item.get("from_url")) or "")
    channel = _text(item.get("channel_id")) or link.channel
    ts = _text(item.get("ts")) or link.ts
    thread_ts = _text(item.get("thread_ts")) or link.thread_ts
    text = _text(item.get("text")) or ""
    sender = _text(item.get("author_name")) or _text(item.get("author_subname"))
    if channel == here and _in_thread(thread, ts, thread_ts):
        return ImportedQuote("REPLY", message_external_id=ts, text=text, sender_display_name=sender)
    return ImportedQuote("FORWARD", message_external_id=ts, conversation_external_id=channel,
                         conversation_display_name=_text(item.get("channel_name")), text=text,
                         sender_display_name=sender)


def _in_thread(thread: str | None, ts: str | None, thread_ts: str | None) -> bool:
    """Whether the quoted message (``ts``, ``thread_ts``) is where the quoting one is: in ``thread``, or,
    when that is None, in the main timeline (a top-level message or a thread's root)."""
    if thread is None:
        return thread_ts in (None, ts)
    return thread in (thread_ts, ts)


def _message_link(url: str) -> _Link:
    parsed = urlparse(url)
    parts = [part for part in parsed.path.split("/") if part]
    if len(parts) < 3 or parts[-3] != "archives" or not re.fullmatch(r"p[0-9]{7,}", parts[-1]):
        return _Link()
    digits = parts[-1][1:]
    thread_ts = parse_qs(parsed.query).get("thread_ts")
    return _Link(parts[-2], f"{digits[:-6]}.{digits[-6:]}", thread_ts[0] if thread_ts else None)
