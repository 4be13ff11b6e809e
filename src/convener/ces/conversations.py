"""Recorded conversations: a header and a row per turn, listed newest first by keyset, filtered by AIP-160."""

from __future__ import annotations

import functools
import hashlib
import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, overload

from sqlalchemy import (
    BigInteger,
    Column,
    ColumnElement,
    Connection,
    Row,
    Select,
    SmallInteger,
    String,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.sql import visitors
from sqlalchemy.sql.elements import BinaryExpression, BindParameter, BooleanClauseList
from sqlalchemy.sql.util import ClauseAdapter

from convener.api.errors import AlreadyExists, InvalidArgument, NotFound
from convener.api.filtering import FieldType, FilterField, compile_filter
from convener.api.paging import JsonScalar, PageTokens, resolve_page_size, split_page
from convener.api.protojson import Timestamp, same_json
from convener.api.stored import StoredBody
from convener.auth.caller import Caller
from convener.ces import conversation_bodies
from convener.ces.apps import AppService
from convener.ces.models import INPUT_TYPE_BITS, ChannelType, Conversation, InputType, Message, Source, Turn
from convener.ces.names import AppName, ConversationName
from convener.ces.recording import settle, settle_appended
from convener.ces.requests import (
    DeleteConversationRequest,
    GetConversationRequest,
    ListConversationsRequest,
    ListConversationsResponse,
)
from convener.ces.tables import apps
from convener.ces.tables import conversation_turns
from convener.ces.tables import conversations as table
from convener.outside.limits import LIST_SCAN_ROWS
from convener.store.database import AnyRow, Database
from convener.store.upsert import upsert

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
FIRST_WINDOW_PAGES = 48
WINDOW_GROWTH = 8
"""On SQLite a filter on unindexed fields is first applied to a window of 48 pages' worth of rows, then to
windows 8 times as large, up to the scan budget (see ``ConversationService.list``)."""

c = table.c
# The lookups every recorded turn runs, built once: building and keying a statement costs more CPU than SQLite
# takes to run it.
_BY_NAME = and_(c.app_pk == bindparam("app_pk"), c.conversation_id == bindparam("conversation_id"))
_STORED = select(c.id, c.start_time_us, c.body).where(_BY_NAME)
_INSERT = insert(table).returning(c.id, c.conversation_id)
"""New conversations' header rows, returning the ID and conversation ID of each. Executed with a list of rows,
SQLAlchemy inserts them in one statement ("insertmanyvalues")."""
_INSERTS_IF_ABSENT = {dialect: upsert(dialect, table, ["app_pk", "conversation_id"], []).returning(
    c.id, c.conversation_id) for dialect in ("sqlite", "postgresql")}
"""The same, each unless a conversation of its name exists (then left as it is, and returned by none)."""


def _names(enum: type[Enum]) -> tuple[str, ...]:
    return tuple(member.value for member in enum)


FILTER_FIELDS = {
    "startTime": FilterField(c.start_time_us, FieldType.TIMESTAMP, sub_micros=c.start_time_nanos),
    "endTime": FilterField(c.end_time_us, FieldType.TIMESTAMP, sub_micros=c.end_time_nanos),
    "turnCount": FilterField(c.turn_count, FieldType.INTEGER),
    "source": FilterField(c.source, FieldType.ENUM, enum_values=_names(Source)),
    "channelType": FilterField(c.channel_type, FieldType.ENUM, enum_values=_names(ChannelType)),
    "inputTypes": FilterField(c.input_types, FieldType.ENUM, enum_values=_names(InputType), repeated_bits=INPUT_TYPE_BITS),
    "entryAgent": FilterField(c.entry_agent, FieldType.STRING),
    "deployment": FilterField(c.deployment, FieldType.STRING),
    "appVersion": FilterField(c.app_version, FieldType.STRING),
    "languageCode": FilterField(c.language_code, FieldType.STRING),
}


def requested_sources(request: ListConversationsRequest) -> list[Source]:
    """``sources`` wins; else the deprecated ``source``; else every source (an empty list)."""
    chosen = [s for s in request.sources or () if s is not Source.SOURCE_UNSPECIFIED]
    if not chosen and request.source not in (None, Source.SOURCE_UNSPECIFIED):
        chosen = [request.source]
    return sorted(set(chosen))


def _columns(conversation: Conversation) -> dict[str, Any]:
    """The indexed copies of a settled conversation's filterable fields."""
    assert conversation.start_time is not None and conversation.source is not None
    mask = 0
    for kind in conversation.input_types or ():
        mask |= INPUT_TYPE_BITS[kind.value]
    return {
        "start_time_us": conversation.start_time.to_micros(),
        "start_time_nanos": conversation.start_time.nanos % 1000,
        "end_time_us": conversation.end_time.to_micros() if conversation.end_time else None,
        "end_time_nanos": conversation.end_time.nanos % 1000 if conversation.end_time else None,
        "turn_count": conversation.turn_count or 0,
        "source": conversation.source.value,
        "input_types": mask,
        "channel_type": (conversation.channel_type or ChannelType.CHANNEL_TYPE_UNSPECIFIED).value,
        "entry_agent": conversation.entry_agent or "",
        "deployment": conversation.deployment or "",
        "app_version": conversation.app_version or "",
        "language_code": conversation.language_code or "",
    }


_HEADER_COLUMNS = ("start_time_us", "start_time_nanos", "end_time_us", "end_time_nanos", "turn_count", "source",
                   "input_types", "channel_type", "entry_agent", "deployment", "app_version", "language_code")
# The columns ``_columns`` sets are all of these; were one added there, this fails at import.
assert tuple(_columns(Conversation(start_time=Timestamp(0), source=Source.LIVE))) == _HEADER_COLUMNS
_APPENDED_COLUMNS = ("end_time_us", "end_time_nanos", "turn_count", "input_types", "channel_type")
"""The header columns an appended turn changes (``settle_appended`` updates the end time, turn count, input
types and channel type; every other field of the header is the stored one's). None is in an index."""
_APPENDED = update(table).where(c.id == bindparam("b_pk")).values(
    {name: bindparam(f"b_{name}") for name in ("body", *_APPENDED_COLUMNS)})
"""The header's update when a turn is appended, built once: building an UPDATE and keying it for the statement
cache cost more than SQLite takes to run it, on every turn but the first (which inserts), so turn n cost more
than turn 1. It sets only the columns a turn changes: on SQLite an UPDATE that names an indexed column rewrites
that index's entry even when the value is the same, three index entries (and their pages in the write-ahead
log) on every turn but the first."""


def content_id(conversation: Conversation, app: AppName) -> str:
    """A stable ID for a conversation imported without a name, so that re-importing it is a no-op.

    Taken from the settled recording, so output-only fields a client claimed do not change it.
    """
    settled = settle(conversation, app.conversation("unnamed"), received=Timestamp(0)).to_json()
    settled.pop("name")
    canonical = json.dumps(settled, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Stored:
    """What happened when a conversation was offered to the store."""

    conversation: Conversation
    created: bool


@dataclass(frozen=True)
class Appended:
    """A turn to record as its conversation's next (``ConversationService.append``)."""

    name: ConversationName
    turn: Turn
    end_time: Timestamp | None
    """The conversation's new end, when known."""
    start: Conversation
    """The conversation (without turns) to begin when there is none."""
    seen_absent: bool = False
    """The caller's reading found no such conversation."""

    def begun(self) -> Conversation:
        """The conversation this turn begins, when there is none."""
        return self.start.model_copy(update={"turns": [self.turn], "end_time": self.end_time})


@dataclass(frozen=True)
class _ListShape:
    """What a list statement depends on besides its bound values: built once per shape (see ``_list_shape``)."""

    page: Select[Any]
    """The page: ``:app``, ``:limit``, and ``:after_*`` / ``:bound_*`` positions when resumed / bounded."""
    scanned: bool
    """The filter reads a column no index orders by the keyset, so each call examines a bounded window."""
    boundary: Select[Any] | None
    """The position ``:skip`` rows into the listed order (from ``:after_*``): where a bounded scan stops."""
    windowed: Select[Any] | None
    """The page taken from the first ``:budget`` rows of the listed order, as one streamed statement: the
    filter stops being applied once the page is full (PostgreSQL streams a LIMIT subquery in order; SQLite
    materializes and sorts it, so there the window is bounded by ``boundary`` instead)."""


_POSITION = (c.start_time_us, c.start_time_nanos, c.conversation_id)
_ORDER = tuple(column.desc() for column in _POSITION)
_INDEXED = frozenset({*_POSITION, c.source, c.app_pk})
"""Columns the keyset indexes (ix_ces_conv_keyset, ix_ces_conv_source_keyset) walk in order: a filter on
these alone seeks; one on any other column is applied to each row walked, so it is given a scan budget."""


def _beyond(prefix: str, *, inclusive: bool) -> ColumnElement[bool]:
    """Rows after the position ``:{prefix}_us, _nanos, _id`` in the order (startTime desc, name desc), or
    (``inclusive``) the rows up to and including it."""
    micros, nanos, cid = (bindparam(f"{prefix}_us", type_=BigInteger), bindparam(f"{prefix}_nanos", type_=SmallInteger),
                          bindparam(f"{prefix}_id", type_=String))
    if inclusive:  # at or before the position: the end of a bounded window
        return and_(
            c.start_time_us >= micros,
            or_(
                c.start_time_us > micros,
                and_(c.start_time_us == micros,
                     or_(c.start_time_nanos > nanos, and_(c.start_time_nanos == nanos, c.conversation_id >= cid))),
            ),
        )
    # The redundant upper bound lets both engines seek the index to the position; the OR alone
    # is applied as a row filter after walking every skipped row.
    return and_(
        c.start_time_us <= micros,
        or_(
            c.start_time_us < micros,
            and_(c.start_time_us == micros,
                 or_(c.start_time_nanos < nanos, and_(c.start_time_nanos == nanos, c.conversation_id < cid))),
        ),
    )


def _reads_only(condition: ColumnElement[Any], indexed: frozenset[Column[Any]]) -> bool:
    return all(not isinstance(element, Column) or element in indexed for element in visitors.iterate(condition))


def _seeks(condition: ColumnElement[bool]) -> bool:
    """Whether an index walks the filter's matches in the listed order: a filter on the keyset's own columns, or
    one that ANDs ``deployment = "…"`` with those (ix_ces_conv_deployment_keyset). Anything else (an OR, a
    deployment prefix or inequality, another field) is applied to each row walked, within the scan budget."""
    if _reads_only(condition, _INDEXED):
        return True
    conjuncts = list(condition.clauses) if isinstance(condition, BooleanClauseList) and condition.operator is operator.and_ \
        else [condition]
    by_deployment = [part for part in conjuncts if isinstance(part, BinaryExpression) and part.operator is operator.eq
                     and part.left is c.deployment and isinstance(part.right, BindParameter)]
    return bool(by_deployment) and all(_reads_only(part, _INDEXED) for part in conjuncts if part not in by_deployment)


_APP_PK = select(apps.c.id).where(apps.c.name == bindparam("app")).scalar_subquery()


@functools.lru_cache(maxsize=512)
def _list_shape(filter_text: str, sources: tuple[str, ...], resumed: bool, bounded: bool) -> _ListShape:
    """The statements of a list call, by shape. Compiling the filter and building the statements cost
    more than running them on a page, and all of it is pure, so each shape is built once per process.
    ``bounded`` asks for the page statement limited to a scanned window (when the caller found its end)."""
    condition = compile_filter(filter_text, FILTER_FIELDS)
    scope = [c.app_pk == _APP_PK]
    if sources:
        scope.append(c.source.in_(sources))
    if resumed:
        scope.append(_beyond("after", inclusive=False))
    page = select(c.id, c.start_time_us, c.start_time_nanos, c.conversation_id, _BODY).where(*scope)
    if condition is not None:
        page = page.where(condition)
    if bounded:
        page = page.where(_beyond("bound", inclusive=True))
    page = page.order_by(*_ORDER).limit(bindparam("limit"))
    scanned = condition is not None and not _seeks(condition)
    boundary = windowed = None
    if scanned:
        assert condition is not None
        boundary = select(*_POSITION).where(*scope).order_by(*_ORDER).limit(1).offset(bindparam("skip"))
        # The raw body column inside: its text form is made only for the rows of the page.
        window = select(table).where(*scope).order_by(*_ORDER).limit(bindparam("budget")).subquery("scanned")
        windowed = (
            select(window.c.id, window.c.start_time_us, window.c.start_time_nanos, window.c.conversation_id,
                   _body_text(window.c.body))
            .where(ClauseAdapter(window).traverse(condition))
            .order_by(*(window.c[column.name].desc() for column in _POSITION))
            .limit(bindparam("limit"))
        )
    return _ListShape(page, scanned, boundary, windowed)


def _body_text(body: ColumnElement[Any]) -> ColumnElement[str]:
    """The stored wire body as its JSON text: not decoded by the driver (JSONB's text form on PostgreSQL)."""
    return cast(body, Text).label("body_text")


_BODY = _body_text(c.body)
_STORED_TEXT = select(c.id, _BODY).where(_BY_NAME)


def _position(row: Any) -> list[JsonScalar]:
    return [row.start_time_us, row.start_time_nanos, row.conversation_id]
class RecordedHistory(Sequence[Message]):
    """Every message of a recorded conversation's first ``turn_count`` turns, in order: what agents read as a
    session's history. Read from the store only when looked at (most agents never do), and a slice of the last
    k messages (``history[-k:]``) reads only the last turns, so a turn's cost does not grow with the session."""

    def __init__(self, database: Database, pk: int, turn_count: int) -> None:
        self.database = database
        self.pk = pk
        self.turn_count = turn_count
        self._all: list[Message] | None = None

    def _messages(self, turns: Sequence[dict[str, Any]]) -> list[Message]:
        return [message for turn in turns for message in Turn.model_validate(turn).messages or ()]

    def _tail(self, count: int) -> list[Message]:
        """The last ``count`` messages (fewer if there are not as many), reading turns back from the last."""
        messages: list[Message] = []
        end = self.turn_count
        while end > 0 and len(messages) < count:
            with self.database.reading() as connection:
                turns = conversation_bodies.turns_before(connection, self.pk, end, count)
            if not turns:
                break
            end -= len(turns)
            messages = self._messages(turns) + messages
        return messages[len(messages) - min(count, len(messages)):]

    def _everything(self) -> list[Message]:
        if self._all is None:
            with self.database.reading() as connection:
                turns = conversation_bodies.turns_before(connection, self.pk, self.turn_count, self.turn_count)
            self._all = self._messages(turns)
        return self._all

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if (isinstance(index, slice) and self._all is None and index.stop is None and index.step in (None, 1)
                and isinstance(index.start, int) and index.start < 0):
            return self._tail(-index.start)
        return self._everything()[index]

    def __len__(self) -> int:
        return len(self._everything())


class ConversationService:
    def __init__(self, database: Database, tokens: PageTokens, apps: AppService,
                 scan_rows: int = LIST_SCAN_ROWS) -> None:
        self.database = database
        self.tokens = tokens
        self.apps = apps
        self.scan_rows = scan_rows
        """Rows a list call with a filter on unindexed fields examines at most (see ``list``)."""

    def list(self, request: ListConversationsRequest, caller: Caller) -> ListConversationsResponse:
        """A page, newest first. A filter on fields the keyset index does not hold (anything but startTime and
        source) is applied to rows as they are walked; such a call examines at most ``scan_rows`` rows, and
        when it stops there the page may be short, or empty, with a nextPageToken that resumes the scan where
        it stopped (AIP-158 allows short pages): a filter that matches nothing costs the budget, not the app."""
        parent = AppName.parse(request.parent, "parent")
        page_size = resolve_page_size(request.page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        sources = tuple(s.value for s in requested_sources(request))
        app = str(parent)
        query = {
            "method": "list_conversations",
            "parent": app,
            "filter": request.filter or "",
            "sources": list(sources),
        }
        shape = _list_shape(request.filter or "", sources, bool(request.page_token), bounded=False)
        values: dict[str, Any] = {"app": app, "limit": page_size + 1}
        with self.database.reading() as connection:
            if request.page_token:
                values.update(zip(("after_us", "after_nanos", "after_id"), self._after(request.page_token, query, caller, connection), strict=True))
            stop = None
            if shape.windowed is not None and self.database.dialect == "postgresql":
                # The page from the window first: most pages fill long before the budget, and then where the
                # window would end does not matter.
                rows = connection.execute(shape.windowed, {**values, "budget": self.scan_rows}).all()
                if len(rows) <= page_size:
                    assert shape.boundary is not None
                    stop = connection.execute(shape.boundary, {**values, "skip": self.scan_rows - 1}).first()
            elif shape.boundary is None:
                rows = connection.execute(shape.page, values).all()
            else:
                # Windows growing to the budget: most filters fill a page within a few hundred rows, and then
                # where the budget's window would end (a walk of ``scan_rows`` index entries, more than the
                # page itself costs) does not matter. A window that holds a full page gives the page the whole
                # budget would (the page is the first matches in order); a window that does not is widened.
                bounded = _list_shape(request.filter or "", sources, bool(request.page_token), bounded=True)
                window = min(self.scan_rows, FIRST_WINDOW_PAGES * (page_size + 1))
                while True:
                    stop = connection.execute(shape.boundary, {**values, "skip": window - 1}).first()
                    if stop is None:  # the app ends within the window: the page is taken from the rest of the app
                        rows = connection.execute(shape.page, values).all()
                        break
                    values.update(zip(("bound_us", "bound_nanos", "bound_id"), _position(stop), strict=True))
                    rows = connection.execute(bounded.page, values).all()
                    if len(rows) > page_size or window >= self.scan_rows:
                        break
                    window = min(self.scan_rows, window * WINDOW_GROWTH)
            if not rows and stop is None:
                self.apps.app_pk(connection, parent)  # NOT_FOUND when the app is not there
            page, more = split_page(rows, page_size)
            # By position (id first, body_text last in every page statement): a Row's attribute lookup by name
            # cost more than the rest of this line, twice per conversation.
            texts = conversation_bodies.body_texts(connection, {row[0]: row[-1] for row in page})
        resume_at = _position(page[-1]) if more else _position(stop) if stop is not None else None
        token = None
        if resume_at is not None:
            token = self.tokens.issue(query=query, caller=caller.principal, position=resume_at)
        return ListConversationsResponse(
            conversations=[StoredBody(Conversation, text) for text in texts.values()], next_page_token=token
        )

    def _after(self, token: str, query: dict[str, Any], caller: Caller, connection: Connection) -> tuple[int, int, str]:
        """The position a page token resumes after; an app that does not exist is NOT_FOUND first."""
        try:
            match self.tokens.position(token, query=query, caller=caller.principal):
                case [int() as micros, int() as nanos, str() as conversation_id]:
                    return micros, nanos, conversation_id
                case _:
                    raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
        except InvalidArgument:
            self.apps.app_pk(connection, AppName.parse(query["parent"]))
            raise

    def get(self, request: GetConversationRequest, caller: Caller) -> Conversation:
        name = ConversationName.parse(request.name)
        with self.database.reading() as connection:
            app_pk = self.apps.app_pk(connection, name.app_name)
            row = connection.execute(_STORED_TEXT, {"app_pk": app_pk, "conversation_id": name.conversation}).first()
            if row is None:
                raise NotFound(f"conversation {name} does not exist")
            text = conversation_bodies.body_texts(connection, {row.id: row.body_text})[row.id]
        conversation = StoredBody(Conversation, text).parse()
        if request.source not in (None, Source.SOURCE_UNSPECIFIED) and conversation.source is not request.source:
            raise NotFound(f"conversation {name} has no source {request.source}")
        return conversation

    def delete(self, request: DeleteConversationRequest, caller: Caller) -> None:
        name = ConversationName.parse(request.name)
        with self.database.transaction() as connection:
            row = self._row(connection, name)
            if connection.execute(delete(table).where(c.id == row.id)).rowcount == 0:
                raise NotFound(f"conversation {name} does not exist")  # a concurrent delete won

    def _row(self, connection: Connection, name: ConversationName) -> AnyRow:
        app_pk = self.apps.app_pk(connection, name.app_name)
        row = connection.execute(
            select(c.id, c.body).where(c.app_pk == app_pk, c.conversation_id == name.conversation)
        ).first()
        if row is None:
            raise NotFound(f"conversation {name} does not exist")
        return row

    def store(
        self,
        connection: Connection,
        app_pk: int,
        name: ConversationName,
        conversation: Conversation,
        *,
        replace: bool = False,
    ) -> Stored:
        """Store a conversation unless the same one is there already (a no-op then).

        A different conversation under the same name is ALREADY_EXISTS (recordings are immutable),
        unless the writer owns the name and asks to ``replace`` it, as the demo loader does.
        """
        existing = connection.execute(_STORED, {"app_pk": app_pk, "conversation_id": name.conversation}).first()
        return self._store(connection, app_pk, name, conversation, existing, replace)

    @staticmethod
    def _store(connection: Connection, app_pk: int, name: ConversationName, conversation: Conversation,
               existing: Row[int, int, Any] | None, replace: bool) -> Stored:
        """``store`` once the stored conversation of that name (if any) has been read."""
        # A recording without any time of its own starts when it is received; settling it again
        # against the stored start makes a re-import compare equal.
        received = Timestamp.from_micros(existing.start_time_us) if existing else Timestamp.now()
        settled = settle(conversation, name, received=received)
        body = settled.to_json()
        header, turns = conversation_bodies.split(body)
        if existing is not None:
            if same_json(conversation_bodies.body(connection, existing.id, existing.body), body):
                return Stored(settled, created=False)
            if not replace:
                raise AlreadyExists(f"conversation {name} already exists with different content")
            connection.execute(update(table).where(c.id == existing.id).values(body=header, **_columns(settled)))
            connection.execute(delete(conversation_turns).where(conversation_turns.c.conversation_pk == existing.id))
            conversation_bodies.write_turns(connection, {existing.id: turns})
            return Stored(settled, created=False)
        ConversationService._insert(connection, app_pk, [(name, settled)], if_absent=False)
        return Stored(settled, created=True)

    @staticmethod
    def _begin(connection: Connection, app_pk: int, begun: Sequence[tuple[ConversationName, Conversation]]) -> set[str]:
        """Store the conversations ``begun`` of app ``app_pk``, each unless one of its name exists (then it is left
        as it is): the IDs of those stored."""
        received = Timestamp.now()
        settled = [(name, settle(conversation, name, received=received)) for name, conversation in begun]
        return ConversationService._insert(connection, app_pk, settled, if_absent=True) if settled else set()

    @staticmethod
    def _insert(connection: Connection, app_pk: int, new: Sequence[tuple[ConversationName, Conversation]], *,
                if_absent: bool) -> set[str]:
        """Insert new settled conversations of app ``app_pk``, their headers in one statement and their turns in
        another: the IDs of those inserted (``if_absent``: those of which none existed)."""
        headers: list[dict[str, Any]] = []
        turns: dict[str, list[conversation_bodies.Json]] = {}
        for name, settled in new:
            header, turns[name.conversation] = conversation_bodies.split(settled.to_json())
            headers.append({"app_pk": app_pk, "conversation_id": name.conversation, "body": header,
                            **_columns(settled)})
        statement = _INSERTS_IF_ABSENT[connection.dialect.name] if if_absent else _INSERT
        inserted: dict[int, str] = {pk: conversation for pk, conversation in connection.execute(statement, headers)}
        conversation_bodies.write_turns(connection, {pk: turns[conversation] for pk, conversation in inserted.items()})
        return set(inserted.values())

    def append(self, connection: Connection, app_pk: int, appended: Sequence[Appended]) -> None:
        """Record each turn of ``appended`` as its conversation's next turn, in order: one turn row written and the
        header updated, whatever the number of turns before it. The conversations their callers' readings found
        absent (``seen_absent``) are begun first, in one statement, without looking for them (as they would be
        had none been made meanwhile); the others, and those made meanwhile after all, a turn at a time."""
        first_absent: dict[str, Appended] = {}
        for one in appended:
            if one.seen_absent:
                first_absent.setdefault(one.name.conversation, one)
        begun = self._begin(connection, app_pk, [(one.name, one.begun()) for one in first_absent.values()])
        for one in appended:
            if first_absent.get(one.name.conversation) is not one or one.name.conversation not in begun:
                self._append(connection, app_pk, one)

    def _append(self, connection: Connection, app_pk: int, one: Appended) -> None:
        existing = connection.execute(_STORED, {"app_pk": app_pk, "conversation_id": one.name.conversation}).first()
        if existing is None:  # the first turn: the conversation begins (not looked up again)
            self._store(connection, app_pk, one.name, one.begun(), None, False)
            return
        before = Conversation.model_validate(existing.body)
        header, settled_turn = settle_appended(before, one.turn, end_time=one.end_time)
        columns = _columns(header)
        connection.execute(_APPENDED, {"b_pk": existing.id, "b_body": header.to_json(),
                                       **{f"b_{key}": columns[key] for key in _APPENDED_COLUMNS}})
        conversation_bodies.write_turns(connection, {existing.id: [settled_turn.to_json()]}, before.turn_count or 0)

    def history(self, pk: int, turn_count: int) -> RecordedHistory:
        """The messages of the first ``turn_count`` turns of the conversation of row ``pk`` (found by the caller's
        own reading), read when looked at."""
        return RecordedHistory(self.database, pk, turn_count)
