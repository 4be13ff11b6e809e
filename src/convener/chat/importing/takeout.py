"""Google Takeout's export of Google Chat, read as format-neutral records.

The layout, as real exports have it (``Takeout/`` and ``Google Chat/`` may or may not wrap it)::

    Google Chat/Users/User <numeric id>/user_info.json   {"user": {...}, "membership_info": [...]}
    Google Chat/Groups/<"DM id" | "Space id">/group_info.json   {"name"?: ..., "members": [...]}
    Google Chat/Groups/<...>/messages.json    {"messages": [{...}, ...]}
    Google Chat/Groups/<...>/<export_name>    the attached files, beside their messages

What the export does not make easy, and how this reader copes:

- Dates are prose in the exporting account's language ("Wednesday, January 5, 2022 at 10:15:32 AM UTC",
  "Mittwoch, 5. Januar 2022 um 10:15:32 UTC", newer exports with U+202F before AM/PM). ``TakeoutDates``
  reads English with a precompiled pattern and any other language with ``dateparser``, remembering the
  languages it has met so later dates skip the (slow) language detection.
- People are only names and emails: the email, lower-cased, is the user's ID. A creator without an email
  (a deleted account; apps) is known by name alone.
- Every message belongs to a topic (``topic_id``): the first message of a topic is the thread's root,
  the others are replies, whether or not the space shows threads.
- Edited messages may lack ``created_date`` (the original version under ``previous_message_versions``
  has it), and deleted ones keep only ``message_id``, ``topic_id`` and ``deleted_date``.
- ``messages.json`` can be large: it is streamed with ``ijson``, one message at a time.
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import ijson  # type: ignore[import-untyped, unused-ignore]

from convener.api.errors import InvalidArgument
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
    UserType,
)

JsonObject = dict[str, Any]

SOURCE = "google-chat"
CHAT_FOLDER = "Google Chat/"
GROUPS = "Groups/"
USERS = "Users/"
DM_PREFIX = "DM "
SPACE_PREFIX = "Space "


# --- dates ---------------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_ENGLISH_DATE = re.compile(
    r"(?:[a-z]+,? )?"  # the weekday, which says nothing the date does not
    r"(?:(?P<month>[a-z]+)\.? (?P<day>\d{1,2}),?|(?P<day_first>\d{1,2}) (?P<month_second>[a-z]+)\.?,?) "
    r"(?P<year>\d{4}),? (?:at )?"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?(?: ?(?P<half>[ap])\.?m\.?)? "
    r"(?:utc|gmt)(?P<offset>[+-]\d{1,2}(?::?\d{2})?)?",
    re.IGNORECASE,
)
# Takeout separates AM/PM with U+202F in newer exports; other locales use no-break spaces.
_SPACES = re.compile(r"[\s\u00a0\u2007\u2009\u202f]+")
_DATEPARSER_SETTINGS = {"TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": True}


class TakeoutDates:
    """Takeout's locale-formatted dates, to UTC microseconds; None when a string is not a full date.

    English, by far the most common, is matched by a precompiled pattern. Anything else goes to
    ``dateparser``, whose language detection costs milliseconds per call: the languages it detects are
    kept, and tried first (without detection) on later dates, since one export has one language.
    """

    def __init__(self) -> None:
        self._locale_parsers: dict[str, Any] = {}
        """A ``DateDataParser`` for each detected locale, in the order met."""
        self._detector: Any = None

    @property
    def detected_locales(self) -> tuple[str, ...]:
        return tuple(self._locale_parsers)

    def micros(self, text: str) -> int | None:
        normal = _SPACES.sub(" ", text).strip()
        when = _english_date(normal) or self._any_language_date(normal)
        return None if when is None else (when - _EPOCH) // timedelta(microseconds=1)

    def _any_language_date(self, text: str) -> datetime | None:
        for parser in self._locale_parsers.values():
            when = _full_date(parser.get_date_data(text), text)
            if when is not None:
                return when
        data = self._detecting_parser().get_date_data(text)
        when = _full_date(data, text)
        if when is not None and data.locale:
            self._remember(data.locale)
        return when

    def _detecting_parser(self) -> Any:
        if self._detector is None:
            # Imported on first use: English-only exports never pay for loading dateparser's languages.
            from dateparser.date import DateDataParser  # type: ignore[import-untyped, unused-ignore]

            self._detector = DateDataParser(settings=_DATEPARSER_SETTINGS)
        return self._detector

    def _remember(self, locale: str) -> None:
        from dateparser.date import DateDataParser

        self._locale_parsers[locale] = DateDataParser(locales=[locale], settings=_DATEPARSER_SETTINGS)


def _english_date(text: str) -> datetime | None:
    match = _ENGLISH_DATE.fullmatch(text)
    if match is None:
        return None
    month = _MONTHS.get((match["month"] or match["month_second"]).lower())
    hour = int(match["hour"])
    if month is None:
        return None  # a day-first date in another language ("5 janvier 2022 à ..." does not get here)
    if match["half"]:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if match["half"].lower() == "p" else 0)
    try:
        return datetime(
            int(match["year"]), month, int(match["day"] or match["day_first"]), hour, int(match["minute"]),
            int(match["second"] or 0), tzinfo=_utc_offset(match["offset"]),
        )
    except ValueError:  # February 30th and the like
        return None


def _utc_offset(offset: str | None) -> timezone:
    if not offset:
        return UTC
    sign = -1 if offset[0] == "-" else 1
    hours, _, minutes = offset[1:].partition(":")
    if not minutes and len(hours) > 2:  # "+0530"
        hours, minutes = hours[:-2], hours[-2:]
    return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes or 0)))


def _full_date(data: Any, text: str) -> datetime | None:
    """dateparser fills what a string lacks from today's date (and says so unreliably: "10:15:32" claims
    a year, month and day): only a date whose year is written out, and that names its day, counts."""
    if data.date_obj is None or not {"year", "month", "day"} <= set(data.parts or ()):
        return None
    when: datetime = data.date_obj
    if not re.search(rf"(?<!\d){when.year}(?!\d)", text):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


# --- small readers of JSON values ------------------------------------------------------------------------


def _string(obj: JsonObject, key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) and value else None


def _object(obj: JsonObject, key: str) -> JsonObject:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _objects(value: Any) -> list[JsonObject]:
    """The objects of a JSON array; anything else in it, or a non-array, is ignored."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _person_id(person: JsonObject) -> str | None:
    """A user's external ID: the email, lower-cased (Takeout is inconsistent about case); the name when
    there is no email (deleted accounts, apps)."""
    email = _string(person, "email")
    return email.lower() if email else _string(person, "name")


def _user_type(person: JsonObject) -> UserType:
    return "APP" if (_string(person, "user_type") or "").lower() == "bot" else "HUMAN"


def _imported_user(person: JsonObject) -> ImportedUser | None:
    external_id = _person_id(person)
    if external_id is None:
        return None
    email = _string(person, "email")
    return ImportedUser(
        external_id=external_id,
        display_name=_string(person, "name") or external_id,
        email=email,
        user_type=_user_type(person),
        preferred_id=email.split("@")[0] if email else None,
    )


# --- the export's layout ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    """One ``Groups/`` folder: a space, a DM or a group DM."""

    folder: str
    path: str
    """The folder's path in the archive, ending in ``/``."""

    @property
    def kind(self) -> str:
        return self.folder.split(" ", 1)[0] if self.folder.startswith((DM_PREFIX, SPACE_PREFIX)) else ""

    @property
    def external_id(self) -> str:
        """The folder name without "DM "/"Space ": the ID that also begins the group's message IDs
        ("k6oxHQAAAAE" for "DM k6oxHQAAAAE", whose messages are "k6oxHQAAAAE/<topic>/<message>")."""
        return _group_id(self.folder)

    def position(self, file: str = "") -> str:
        return f"Groups/{self.folder}" + (f"/{file}" if file else "")


def _group_id(name: str) -> str:
    for prefix in (DM_PREFIX, SPACE_PREFIX, "spaces/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _chat_root(names: list[str]) -> str:
    """Where ``Groups/`` and ``Users/`` are: under ``Google Chat/`` when the archive holds that folder (a
    whole Takeout also holds other products, whose folders may be called ``Groups`` too), else at the
    root (the archive strips a common top folder, so an export of Google Chat alone starts there)."""
    roots = {
        name[: at + len(CHAT_FOLDER)]
        for name in names
        if (at := name.find(CHAT_FOLDER)) == 0 or (at > 0 and name[at - 1] == "/")
    }
    return min(roots, key=len, default="")


def _find_groups(names: list[str], root: str) -> list[_Group]:
    folders: dict[str, _Group] = {}
    for name in names:
        if name.startswith(root + GROUPS):
            parts = name[len(root + GROUPS):].split("/")
            if len(parts) == 2:
                folder = parts[0]
                folders.setdefault(folder, _Group(folder, f"{root}{GROUPS}{folder}/"))
    return [folders[folder] for folder in sorted(folders)]


def _find_user_infos(names: list[str], root: str) -> list[str]:
    return [
        name for name in names
        if name.startswith(root + USERS) and name.endswith("/user_info.json")
        and name[len(root + USERS):].count("/") == 1
    ]


class _UserBook:
    """Users met anywhere, one per external ID; the first real name met wins over a bare email."""

    def __init__(self) -> None:
        self._users: dict[str, ImportedUser] = {}

    def add(self, user: ImportedUser | None) -> None:
        if user is None:
            return
        known = self._users.get(user.external_id)
        if known is None or (known.display_name == known.external_id and user.display_name != user.external_id):
            self._users[user.external_id] = user

    def add_email(self, email: str) -> None:
        self.add(_imported_user({"email": email}))

    def __iter__(self) -> Iterator[ImportedUser]:
        return iter(self._users.values())


# --- the export ----------------------------------------------------------------------------------------------


class TakeoutExport(ClosingExport):
    """A Google Takeout export of Google Chat, from a folder or a zip (``Takeout/`` or not)."""

    source = SOURCE

    def __init__(self, path: Path) -> None:
        self.path = path
        self._archive = Archive(path, markers=("Groups", "Users"))
        names = self._archive.names()
        root = _chat_root(names)
        self._groups = _find_groups(names, root)
        self._user_infos = _find_user_infos(names, root)
        self._dates = TakeoutDates()
        if not self._groups and not self._user_infos:
            self._archive.close()
            raise InvalidArgument(f"{path} is not a Google Takeout export of Google Chat: it has no "
                                  "Google Chat/Groups/ or Users/ folder")

    def close(self) -> None:
        self._archive.close()

    def conversation_count(self) -> int:
        return len(self._groups)

    # -- users

    def users(self, report: Report) -> Iterator[ImportedUser]:
        """Everyone the export names: the ``user_info.json`` owners, group members, message creators and
        reactors. Problems of groups and messages are left to ``conversations``, which meets them too."""
        book = _UserBook()
        for name in self._user_infos:
            book.add(_imported_user(_object(self._load_json(name, report), "user")))
        for group in self._groups:
            for member in _objects(self._group_info(group, report=None).get("members")):
                book.add(_imported_user(member))
        for group in self._groups:
            for message in self._scan_messages(group):
                book.add(_imported_user(_object(message, "creator")))
                for reaction in _objects(message.get("reactions")):
                    for email in _reactor_emails(reaction):
                        book.add_email(email)
        yield from book

    def _membership_group_names(self) -> dict[str, str]:
        """A space's name is in its ``group_info.json``, and again in its members' ``membership_info``: the
        fallback when the former is missing. (``users`` has reported any unreadable user_info.json.)"""
        names: dict[str, str] = {}
        for info_name in self._user_infos:
            for membership in _objects(self._load_json(info_name, None).get("membership_info")):
                group_id, group_name = _string(membership, "group_id"), _string(membership, "group_name")
                if group_id and group_name:
                    names[_group_id(group_id)] = group_name
        return names

    # -- conversations

    def conversations(self, report: Report) -> Iterator[ImportedConversation]:
        group_names = self._membership_group_names()
        for group in self._groups:
            yield self._conversation(group, group_names, report)

    def _conversation(self, group: _Group, group_names: dict[str, str], report: Report) -> ImportedConversation:
        info = self._group_info(group, report)
        members = _unique(_person_id(member) for member in _objects(info.get("members")))
        if not info:
            # No group_info.json (or an unreadable one): whoever wrote in the group was in it.
            members = _unique(_person_id(_object(message, "creator")) for message in self._scan_messages(group))
        space_type = _space_type(group, info, len(members))
        display_name = None
        if space_type == "SPACE":
            display_name = _string(info, "name") or group_names.get(group.external_id) or group.folder
        return ImportedConversation(
            external_id=group.external_id,
            space_type=space_type,
            display_name=display_name,
            members=tuple(members),
            messages=self._messages(group, report),
            position=group.position(),
        )

    def _group_info(self, group: _Group, report: Report | None) -> JsonObject:
        name = group.path + "group_info.json"
        if not self._archive.exists(name):
            return {}
        return self._load_json(name, report, group.position("group_info.json"))

    def _messages(self, group: _Group, report: Report) -> Iterator[ImportedMessage]:
        reader = _MessageReader(group, self._dates, report)
        index = -1
        try:
            for index, raw in enumerate(self._stream_messages(group)):
                message = reader.read(raw, index)
                if message is not None:
                    yield message
        except (ijson.JSONError, UnicodeDecodeError) as error:
            raise MalformedConversation(
                ImportProblem(
                    group.position("messages.json") + f"[{index + 1}]",
                    "the file is not valid JSON from here on, so the conversation cannot be read: "
                    + (str(error).splitlines() or ["?"])[0],
                )
            ) from error

    def _stream_messages(self, group: _Group) -> Iterator[Any]:
        """The items of ``messages``, one at a time: the file is never held whole."""
        name = group.path + "messages.json"
        if not self._archive.exists(name):
            return
        with self._archive.open(name) as stream:
            yield from ijson.items(stream, "messages.item")

    def _scan_messages(self, group: _Group) -> Iterator[JsonObject]:
        """The readable message objects, for a look at who wrote and reacted; a broken file ends the look
        quietly, ``_messages`` reports it."""
        try:
            for raw in self._stream_messages(group):
                if isinstance(raw, dict):
                    yield raw
        except (ijson.JSONError, UnicodeDecodeError):
            return

    def _load_json(self, name: str, report: Report | None, position: str | None = None) -> JsonObject:
        """A small JSON object file (user or group info), or {} with a problem when it cannot be read."""
        try:
            with self._archive.open(name) as stream:
                value = json.load(stream)
        except (ValueError, UnicodeDecodeError) as error:
            if report is not None:
                report(ImportProblem(position or name, f"not valid JSON: {error}"))
            return {}
        if not isinstance(value, dict):
            if report is not None:
                report(ImportProblem(position or name, "not a JSON object"))
            return {}
        return value


def _unique(ids: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(external_id for external_id in ids if external_id))


def _space_type(group: _Group, info: JsonObject, member_count: int) -> SpaceType:
    """A "Space" folder is a space; a "DM" folder is a direct message between two people, or an unnamed
    group conversation with more."""
    if group.kind == "Space" or (not group.kind and _string(info, "name")):
        return "SPACE"
    return "GROUP_CHAT" if member_count > 2 else "DIRECT_MESSAGE"


def _reactor_emails(reaction: JsonObject) -> list[str]:
    emails = reaction.get("reactor_emails")
    return [email.lower() for email in emails if isinstance(email, str) and email] if isinstance(emails, list) else []


# --- messages --------------------------------------------------------------------------------------------------


class _SkipMessage(Exception):
    """A message that cannot be imported: reported at its position, and left out."""


class _MessageReader:
    """Turns one group's message objects into records, in file order (which is the order topics begin in)."""

    def __init__(self, group: _Group, dates: TakeoutDates, report: Report) -> None:
        self._group = group
        self._dates = dates
        self._report = report
        self._topics: set[str] = set()
        """Topics whose root has been read: any later message of theirs is a reply."""

    def read(self, raw: Any, index: int) -> ImportedMessage | None:
        position = self._group.position("messages.json") + f"[{index}]"
        if not isinstance(raw, dict):
            self._report(ImportProblem(position, f"a message must be a JSON object, not {type(raw).__name__}"))
            return None
        try:
            return self._message(raw, index, position)
        except _SkipMessage as skip:
            self._report(ImportProblem(position, str(skip)))
            return None

    def _message(self, raw: JsonObject, index: int, position: str) -> ImportedMessage:
        topic = _string(raw, "topic_id")
        # Decided first: a root skipped for a bad date still began its topic, whose later messages are replies.
        threaded_reply = self._is_reply(topic)
        create_time = self._create_time(raw)
        deleted = raw.get("message_state") == "DELETED" or "deleted_date" in raw
        return ImportedMessage(
            external_id=_string(raw, "message_id") or _derived_id(topic, index),
            create_time=create_time,
            text=_string(raw, "text") or "",
            text_format="chat",
            sender=_person_id(_object(raw, "creator")),
            thread_external_id=topic,
            threaded_reply=threaded_reply,
            last_update_time=self._optional_date(raw, "updated_date"),
            delete_time=(self._optional_date(raw, "deleted_date") or create_time) if deleted else None,
            attachments=_uploaded_files(raw) + _drive_files(raw),
            reactions=self._reactions(raw, position),
            quote=self._quote(raw),
            position=position,
        )

    def _is_reply(self, topic: str | None) -> bool:
        """In Google Chat every message has a thread (its topic); the topic's first message is the root."""
        if topic is None:
            return False
        if topic in self._topics:
            return True
        self._topics.add(topic)
        return False

    def _create_time(self, raw: JsonObject) -> int:
        """``created_date``; an edited message may have it only on its first version, and a deleted one
        only has ``deleted_date``."""
        first_versions = [v for v in _objects(raw.get("previous_message_versions")) if _string(v, "created_date")]
        for source, key in [(raw, "created_date"), *((v, "created_date") for v in first_versions),
                            (raw, "updated_date"), (raw, "deleted_date")]:
            micros = self._optional_date(source, key)
            if micros is not None:
                return micros
        raise _SkipMessage("the message has no date")

    def _optional_date(self, obj: JsonObject, key: str) -> int | None:
        text = _string(obj, key)
        if text is None:
            return None
        micros = self._dates.micros(text)
        if micros is None:
            raise _SkipMessage(f"{key} {text!r} is not a date this reader understands")
        return micros

    def _reactions(self, raw: JsonObject, position: str) -> tuple[ImportedReaction, ...]:
        reactions = []
        for reaction in _objects(raw.get("reactions")):
            emoji = _emoji(_object(reaction, "emoji"))
            reactors = tuple(_unique(_reactor_emails(reaction)))
            if emoji is None:
                # One odd reaction is no reason to lose the message: it is left out, and said.
                self._report(ImportProblem(position, "a reaction without an emoji was left out"))
            elif reactors:
                reactions.append(ImportedReaction(emoji=emoji, count=len(reactors), reactors=reactors))
        return tuple(reactions)

    def _quote(self, raw: JsonObject) -> ImportedQuote | None:
        quoted = raw.get("quoted_message_metadata")
        if not isinstance(quoted, dict):
            return None
        message_id = _string(quoted, "message_id")
        forwarded = _object(quoted, "forwarded_metadata")
        source_group = _string(forwarded, "space") or _message_group(message_id)
        from_elsewhere = source_group is not None and _group_id(source_group) != self._group.external_id
        is_forward = quoted.get("quote_type") == "FORWARD" or bool(forwarded) or from_elsewhere
        last_update = _string(quoted, "last_update_time") or _string(quoted, "updated_date")
        return ImportedQuote(
            quote_type="FORWARD" if is_forward else "REPLY",
            message_external_id=message_id,
            conversation_external_id=_group_id(source_group) if source_group and from_elsewhere else None,
            conversation_display_name=_string(forwarded, "space_display_name"),
            text=_string(quoted, "text") or "",
            sender_display_name=_string(_object(quoted, "creator"), "name"),
            # A quote's snapshot time is a nicety: an unreadable one does not cost the message.
            last_update_time=self._dates.micros(last_update) if last_update else None,
            attachments=_uploaded_files(quoted),
        )


def _message_group(message_id: str | None) -> str | None:
    """A message ID is "<group id>/<topic id>/<message id>": a quoted one from another group was forwarded
    from there."""
    parts = message_id.split("/") if message_id else []
    return parts[0] if len(parts) == 3 else None


def _derived_id(topic: str | None, index: int) -> str:
    """Older exports carry no ``message_id``: the position in the file stands in, stable for that file."""
    return f"{topic or 'message'}/{index}"


def _emoji(emoji: JsonObject) -> str | None:
    """The Unicode emoji, or a custom emoji's name without its colons (":shipit:" → "shipit")."""
    unicode = _string(emoji, "unicode")
    if unicode:
        return unicode
    custom = _object(emoji, "custom_emoji")
    name = _string(custom, "emoji_name") or _string(custom, "short_code") or _string(custom, "name") or ""
    return name.strip(":") or None


def _uploaded_files(obj: JsonObject) -> tuple[ImportedAttachment, ...]:
    """``attached_files``: uploaded files, stored beside ``messages.json`` under their ``export_name``."""
    attachments = []
    for file in _objects(obj.get("attached_files")):
        export_name = _string(file, "export_name")
        filename = _string(file, "original_name") or export_name
        if filename:
            attachments.append(
                ImportedAttachment(filename=filename, mime_type=_mime_type(filename), external_id=export_name)
            )
    return tuple(attachments)


def _drive_files(raw: JsonObject) -> tuple[ImportedAttachment, ...]:
    """Drive files a message links: ``drive_metadata`` in its annotations (where real exports put it), or
    on the message itself; each file once."""
    found = [_object(annotation, "drive_metadata") for annotation in _objects(raw.get("annotations"))]
    on_message = raw.get("drive_metadata")
    found += _objects(on_message if isinstance(on_message, list) else [on_message])
    attachments: dict[str, ImportedAttachment] = {}
    for drive in found:
        file_id = _string(drive, "id")
        if file_id and file_id not in attachments:
            title = _string(drive, "title") or file_id
            attachments[file_id] = ImportedAttachment(
                filename=title, mime_type=_mime_type(title), source="DRIVE_FILE", drive_file_id=file_id,
                external_id=f"drive:{file_id}",
            )
    return tuple(attachments.values())


def _mime_type(filename: str) -> str:
    return mimetypes.guess_type(filename, strict=False)[0] or "application/octet-stream"
