"""The chat service: reading, searching and posting messages as one user, who sees only their spaces.

Every read starts from the caller's memberships. A space the caller is not a member of answers
exactly as one that does not exist, and page tokens are bound to the caller and the query, so
nothing about another user's spaces (not even how many messages they hold) can be learnt here.
"""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    Double,
    Select,
    Text,
    and_,
    bindparam,
    cast,
    column,
    exists,
    false,
    func,
    insert,
    literal_column,
    or_,
    select,
    table,
    type_coerce,
    update,
)
from sqlalchemy.sql.elements import ColumnElement

from convener.api.errors import InvalidArgument, NotFound, PermissionDenied, Unimplemented
from convener.api.paging import PageTokens, resolve_page_size, split_page
from convener.api.protojson import Timestamp
from convener.auth.caller import ANONYMOUS, LOCAL_USER, Caller
from convener.chat import markdown
from convener.chat.models import (
    ChatAttachmentMetadata,
    ChatMessage,
    Conversation,
    ConversationType,
    ListChatMessagesRequest,
    ListChatMessagesResponse,
    ListMembershipsRequest,
    ListMembershipsResponse,
    Member,
    Membership,
    MembershipRole,
    MembershipState,
    MemberType,
    OrderBy,
    QuotedMessageMetadata,
    ReactionSummary,
    SearchConversationsRequest,
    SearchConversationsResponse,
    SearchMessagesRequest,
    SearchMessagesResponse,
    SendMessageRequest,
    SendMessageResponse,
    User,
    UserType,
)
from convener.chat.names import SpaceName, ThreadName, parse_user_reference
from convener.chat.tables import memberships, mentions, messages, spaces, users
from convener.outside.limits import CHAT_KEYWORD_CHARACTERS, CHAT_KEYWORDS, CHAT_MESSAGE_TEXT
from convener.store.database import AnyRow, Database

MAX_MESSAGE_TEXT = CHAT_MESSAGE_TEXT
"""Google Chat's limit on a message's text, in characters."""
MAX_KEYWORDS = CHAT_KEYWORDS
MAX_KEYWORD_LENGTH = CHAT_KEYWORD_CHARACTERS
_NO_IDENTITY = frozenset({LOCAL_USER.principal, ANONYMOUS.principal})


@dataclass(frozen=True)
class Viewer:
    """The chat user a caller is, or None for a principal that is no chat user (who then sees nothing)."""

    principal: str
    user_id: str | None


def _timestamp(text_value: str | None, field: str) -> Timestamp | None:
    if text_value is None or text_value == "":
        return None
    try:
        return Timestamp.parse(text_value)
    except ValueError as error:
        raise InvalidArgument(f"{field}: {error}") from None


def _after(column: Any, moment: Timestamp) -> ColumnElement[bool]:
    """Strictly after ``moment``, exactly: times are stored in microseconds, requests may carry nanoseconds."""
    return column > moment.to_micros()  # type: ignore[no-any-return]  # to_micros floors the nanoseconds


def _ceil_micros(moment: Timestamp) -> int:
    """The first whole microsecond at or after ``moment`` (requests may carry nanoseconds, the store does not)."""
    return moment.to_micros() + (1 if moment.nanos % 1000 else 0)


def _before(column: Any, moment: Timestamp) -> ColumnElement[bool]:
    """Strictly before ``moment``: ``create < moment`` holds for micros below the moment's ceiling."""
    return column < _ceil_micros(moment)  # type: ignore[no-any-return]


_MESSAGE_FIELDS = ("row_id", "space_id", "message_id", "thread_id", "threaded_reply", "create_time_us", "body",
                   "attachments", "reactions", "quote", "sender_id", "sender_name", "sender_email", "sender_type")
"""The columns ``ChatService._message_select`` selects, in order: ``_message`` reads them by position."""
_MESSAGE_COLUMNS = len(_MESSAGE_FIELDS)
_USER_BY_ID = select(users.c.user_id).where(users.c.user_id == bindparam("ref"))
_USER_BY_EMAIL = select(users.c.user_id).where(users.c.email == bindparam("ref"))



def _member_by(condition: ColumnElement[bool]) -> Select[Any]:
    """The user matching ``condition`` and their membership of the space ``:space`` (NULL when none)."""
    in_space = and_(memberships.c.user_id == users.c.user_id, memberships.c.space_id == bindparam("space"))
    return select(users.c.user_id, memberships.c.space_id).select_from(
        users.outerjoin(memberships, in_space)).where(condition)


_MEMBER_BY_ID = _member_by(users.c.user_id == bindparam("ref"))
_MEMBER_BY_EMAIL = _member_by(users.c.email == bindparam("ref"))
_VISIBLE_SPACE = (
    select(spaces).join(memberships, memberships.c.space_id == spaces.c.space_id)
    .where(spaces.c.space_id == bindparam("space"), memberships.c.user_id == bindparam("user"))
)


@functools.cache
def _listing(thread: bool, start: bool, end: bool, position: bool) -> Select[Any]:
    """list_messages' SELECT for one combination of its filters, with bound parameters: built once per
    shape, not per call (building a statement costs more than SQLite takes to run it)."""
    statement = ChatService._message_select().where(messages.c.space_id == bindparam("space"), messages.c.listed)
    if thread:
        statement = statement.where(messages.c.thread_id == bindparam("thread"))
    if start:
        statement = statement.where(messages.c.create_time_us > bindparam("after"))
    if end:
        statement = statement.where(messages.c.create_time_us < bindparam("before"))
    if position:
        statement = statement.where(_older_than((bindparam("created"), bindparam("row_id"))))
    return statement.order_by(messages.c.create_time_us.desc(), messages.c.row_id.desc()).limit(
        bindparam("limit"))


class ChatService:
    def __init__(self, database: Database, tokens: PageTokens) -> None:
        self.database = database
        self.tokens = tokens

    # ------------------------------------------------------------------ who is calling

    def viewer(self, connection: Connection, caller: Caller) -> Viewer:
        """The chat user ``caller`` is (a lookup by ID or email, its statement built once per process)."""
        bare = self._caller_reference(caller)[len("users/"):]
        found = connection.scalar(_USER_BY_EMAIL if "@" in bare else _USER_BY_ID, {"ref": bare})
        return Viewer(caller.principal, str(found) if found is not None else None)

    @staticmethod
    def _caller_reference(caller: Caller) -> str:
        if caller.principal in _NO_IDENTITY:
            raise PermissionDenied(
                "the chat tools act as a user: HTTP callers present that user's API key "
                "(convener auth create-key --user users/ID); a stdio server runs with --as users/ID"
            )
        return parse_user_reference(caller.principal, "caller")

    @staticmethod
    def _member(connection: Connection, caller: Caller, reference: str, space: SpaceName, field: str) -> Viewer:
        """``viewer`` and ``_visible_space`` in one query: the chat user ``caller`` (``reference``) is, who
        must be a member of ``space`` (NOT_FOUND otherwise, as for a space that does not exist)."""
        bare = reference[len("users/"):]
        found = connection.execute(_MEMBER_BY_EMAIL if "@" in bare else _MEMBER_BY_ID,
                                   {"ref": bare, "space": space.space}).first()
        if found is None or found.space_id is None:
            raise NotFound(f"{field}: conversation {space} does not exist or you are not a member of it")
        return Viewer(caller.principal, str(found.user_id))

    @staticmethod
    def _user_id(connection: Connection, reference: str) -> str | None:
        """``users/{id}`` or ``users/{email}`` → our user ID, or None when no such user is stored."""
        bare = reference[len("users/"):]
        found = connection.scalar(_USER_BY_EMAIL if "@" in bare else _USER_BY_ID, {"ref": bare})
        return str(found) if found is not None else None

    @staticmethod
    def _visible_space(connection: Connection, viewer: Viewer, space: SpaceName, field: str) -> AnyRow:
        row = connection.execute(_VISIBLE_SPACE, {"space": space.space, "user": viewer.user_id}).first()
        if row is None or viewer.user_id is None:
            # The same answer whether the space is missing or not the caller's: nothing leaks.
            raise NotFound(f"{field}: conversation {space} does not exist or you are not a member of it")
        return row

    def _my_spaces(self, viewer: Viewer) -> Any:
        return select(memberships.c.space_id).where(memberships.c.user_id == viewer.user_id).scalar_subquery()

    # ------------------------------------------------------------------ list_messages

    def list_messages(self, request: ListChatMessagesRequest, caller: Caller) -> ListChatMessagesResponse:
        space = SpaceName.parse(request.conversation_id, "conversationId")
        thread = ThreadName.parse(request.thread_id, "threadId") if request.thread_id else None
        if thread is not None and thread.space != space.space:
            raise InvalidArgument(f"threadId {thread} is not a thread of {space}")
        page_size = resolve_page_size(request.page_size, default=20, maximum=50)
        start = _timestamp(request.start_time, "startTime")
        end = _timestamp(request.end_time, "endTime")
        with self.database.reading() as connection:
            reference = self._caller_reference(caller)
            query = {"tool": "list_messages", "space": str(space), "thread": str(thread or ""),
                     "start": request.start_time or "", "end": request.end_time or ""}
            # Checked in the order viewer, page token, space, as the other tools do
            position = self._position(request.page_token, query, Viewer(caller.principal, None))
            viewer = self._member(connection, caller, reference, space, "conversationId")
            parameters: dict[str, Any] = {"space": space.space, "limit": page_size + 1}
            if thread is not None:
                parameters["thread"] = thread.thread
            if start is not None:
                parameters["after"] = start.to_micros()  # floors the nanoseconds: strictly after, exactly
            if end is not None:
                parameters["before"] = _ceil_micros(end)
            if position is not None:
                parameters["created"], parameters["row_id"] = position
            statement = _listing(thread is not None, start is not None, end is not None, position is not None)
            rows = connection.execute(statement, parameters).all()
        page, more = split_page(rows, page_size)
        token = self._token(query, viewer, [page[-1].create_time_us, page[-1].row_id]) if more else None
        return ListChatMessagesResponse(messages=[_message(row) for row in page], next_page_token=token)

    def _position(self, token: str | None, query: dict[str, Any], viewer: Viewer) -> list[Any] | None:
        """The keyset position of a page token. Tokens are signed and bound to the tool, its arguments and
        the caller, so a position that verifies is one this service issued for this very query."""
        return self.tokens.position(token, query=query, caller=viewer.principal) if token else None

    def _token(self, query: dict[str, Any], viewer: Viewer, position: list[Any]) -> str:
        return self.tokens.issue(query=query, caller=viewer.principal, position=position)

    @staticmethod
    def _message_select() -> Select[Any]:
        """The columns ``_message`` reads, in its order (``_MESSAGE_COLUMNS`` of them)."""
        return select(
            messages.c.row_id, messages.c.space_id, messages.c.message_id, messages.c.thread_id,
            messages.c.threaded_reply, messages.c.create_time_us, messages.c.body,
            # As stored: most messages have none of them, and SQLite's "null" need not go through a JSON parser
            type_coerce(messages.c.attachments, Text).label("attachments"),
            type_coerce(messages.c.reactions, Text).label("reactions"),
            type_coerce(messages.c.quote, Text).label("quote"), messages.c.sender_id,
            users.c.display_name.label("sender_name"), users.c.email.label("sender_email"),
            users.c.user_type.label("sender_type"),
        ).select_from(messages.outerjoin(users, users.c.user_id == messages.c.sender_id))

    # ------------------------------------------------------------------ search_messages

    def search_messages(self, request: SearchMessagesRequest, caller: Caller) -> SearchMessagesResponse:
        parameters = request.search_parameters
        if parameters.is_unread:
            raise Unimplemented("isUnread: Convener keeps no read state; search without it")
        keywords = [keyword.strip() for keyword in parameters.keywords or [] if keyword.strip()]
        if len(keywords) > MAX_KEYWORDS or any(len(keyword) > MAX_KEYWORD_LENGTH for keyword in keywords):
            raise InvalidArgument(f"keywords: at most {MAX_KEYWORDS}, each at most {MAX_KEYWORD_LENGTH} characters")
        order = request.order_by or OrderBy.RELEVANCE_DESC
        if order is OrderBy.ORDER_BY_UNSPECIFIED:
            order = OrderBy.RELEVANCE_DESC
        if order is OrderBy.RELEVANCE_DESC and not keywords:
            order = OrderBy.CREATE_TIME_DESC  # nothing to be relevant to
        page_size = resolve_page_size(request.page_size, default=25, maximum=100)
        start = _timestamp(parameters.start_time, "searchParameters.startTime")
        end = _timestamp(parameters.end_time, "searchParameters.endTime")
        space = SpaceName.parse(parameters.conversation_id, "searchParameters.conversationId") \
            if parameters.conversation_id else None
        sender = parse_user_reference(parameters.sender, "searchParameters.sender") if parameters.sender else None
        includes = parse_user_reference(parameters.conversation_includes_user,
                                        "searchParameters.conversationIncludesUser") \
            if parameters.conversation_includes_user else None
        query = {"tool": "search_messages", "parameters": parameters.to_json(), "order": order.value}
        with self.database.reading() as connection:
            viewer = self.viewer(connection, caller)
            position = self._position(request.page_token, query, viewer)
            if space is not None:
                self._visible_space(connection, viewer, space, "searchParameters.conversationId")
            statement = self._message_select().where(
                messages.c.listed, messages.c.space_id.in_(self._my_spaces(viewer))
            )
            if space is not None:
                statement = statement.where(messages.c.space_id == space.space)
            # A user that does not exist matches nothing (not the messages without a sender: no "IS NULL").
            if sender is not None:
                sender_id = self._user_id(connection, sender)
                statement = statement.where(messages.c.sender_id == sender_id if sender_id else false())
            if includes is not None:
                member_id = self._user_id(connection, includes)
                statement = statement.where(messages.c.space_id.in_(
                    select(memberships.c.space_id).where(memberships.c.user_id == member_id)
                ) if member_id else false())
            if parameters.has_link is not None:
                statement = statement.where(messages.c.has_link == parameters.has_link)
            if start is not None:
                statement = statement.where(messages.c.create_time_us >= _ceil_micros(start))
            if end is not None:
                statement = statement.where(_before(messages.c.create_time_us, end))
            if parameters.mentions_me:
                statement = statement.where(exists().where(
                    mentions.c.message_row_id == messages.c.row_id, mentions.c.user_id == viewer.user_id))
            wanted = [name.lower() for name in parameters.space_display_names or [] if name.strip()][:20]
            if wanted:
                statement = statement.where(messages.c.space_id.in_(
                    select(spaces.c.space_id).where(or_(*(func.lower(spaces.c.display_name).contains(name, autoescape=True)
                                                         for name in wanted)))
                ))
            rank: ColumnElement[Any] | None = None
            if keywords:
                statement, rank = self._full_text(statement, keywords)
            rows, token = self._search_page(connection, statement, order, rank, position, page_size, query, viewer)
        return SearchMessagesResponse(messages=[_message(row) for row in rows], next_page_token=token)

    def _full_text(self, statement: Select[Any], keywords: Sequence[str]) -> tuple[Select[Any], ColumnElement[Any]]:
        """Messages with every keyword, and a rank where smaller is more relevant (BM25 on SQLite,
        negated ts_rank on PostgreSQL)."""
        rank: ColumnElement[Any]
        if self.database.dialect == "postgresql":
            parts = [func.plainto_tsquery(literal_column("'simple'"), keyword) for keyword in keywords]
            tsquery: ColumnElement[Any] = parts[0]
            for part in parts[1:]:
                tsquery = tsquery.op("&&")(part)
            vector: ColumnElement[Any] = literal_column("chat_messages.search_vector")
            # ts_rank is a float4, which psycopg reads back rounded: a double keeps page tokens exact.
            rank = -cast(func.ts_rank(vector, tsquery), Double)
            return statement.where(vector.op("@@")(tsquery)).add_columns(rank.label("rank")), rank
        # Each keyword a quoted FTS5 string: its own syntax (OR, NEAR, *, column filters) stays literal.
        fts_query = " AND ".join('"' + keyword.replace('"', '""') + '"' for keyword in keywords)
        fts = table("chat_messages_fts", column("rowid"))
        rank = literal_column("bm25(chat_messages_fts)")
        statement = statement.join(fts, fts.c.rowid == messages.c.row_id).where(
            literal_column("chat_messages_fts").op("MATCH")(fts_query))
        return statement.add_columns(rank.label("rank")), rank

    def _search_page(self, connection: Connection, statement: Select[Any], order: OrderBy,
                     rank: ColumnElement[Any] | None, position: list[Any] | None, page_size: int,
                     query: dict[str, Any], viewer: Viewer) -> tuple[Sequence[AnyRow], str | None]:
        if order is OrderBy.RELEVANCE_DESC and rank is not None:
            if position is not None:
                statement = statement.where(or_(rank > position[0], and_(rank == position[0],
                                                                         messages.c.row_id > position[1])))
            statement = statement.order_by(rank, messages.c.row_id)
            key = ("rank", "row_id")
        elif order is OrderBy.CREATE_TIME_ASC:
            if position is not None:
                statement = statement.where(_newer_than(position))
            statement = statement.order_by(messages.c.create_time_us, messages.c.row_id)
            key = ("create_time_us", "row_id")
        else:
            if position is not None:
                statement = statement.where(_older_than(position))
            statement = statement.order_by(messages.c.create_time_us.desc(), messages.c.row_id.desc())
            key = ("create_time_us", "row_id")
        rows = connection.execute(statement.limit(page_size + 1)).all()
        page, more = split_page(rows, page_size)
        return page, self._token(query, viewer, [getattr(page[-1], name) for name in key]) if more else None

    # ------------------------------------------------------------------ search_conversations

    def search_conversations(self, request: SearchConversationsRequest, caller: Caller) -> SearchConversationsResponse:
        page_size = resolve_page_size(request.page_size, default=100, maximum=1000)
        name_query = (request.space_name_query or "").strip()
        if len(name_query) > 1000:
            raise InvalidArgument("spaceNameQuery must be at most 1000 characters")
        participants = [parse_user_reference(item, f"participants[{index}]")
                        for index, item in enumerate(request.participants or [])]
        if len(participants) > 49:
            raise InvalidArgument("participants: at most 49")
        query = {"tool": "search_conversations", "q": name_query, "participants": sorted(participants)}
        with self.database.reading() as connection:
            viewer = self.viewer(connection, caller)
            position = self._position(request.page_token, query, viewer)
            statement = select(spaces).where(spaces.c.space_id.in_(self._my_spaces(viewer)))
            if participants:
                statement = self._with_exactly(connection, statement, viewer, participants)
            if name_query:
                statement = statement.where(self._name_matches(viewer, name_query.lower()))
            if position is not None:
                statement = statement.where(spaces.c.last_active_time_us <= position[0], or_(
                    spaces.c.last_active_time_us < position[0],
                    and_(spaces.c.last_active_time_us == position[0], spaces.c.space_id > str(position[1]))))
            rows = connection.execute(
                statement.order_by(spaces.c.last_active_time_us.desc(), spaces.c.space_id).limit(page_size + 1)
            ).all()
            page, more = split_page(rows, page_size)
            names = self._display_names(connection, viewer, page)
        token = None
        if more:
            token = self.tokens.issue(query=query, caller=viewer.principal,
                                      position=[page[-1].last_active_time_us, page[-1].space_id])
        return SearchConversationsResponse(
            conversations=[Conversation(
                conversation_id=f"spaces/{row.space_id}",
                display_name=names[row.space_id],
                conversation_type=ConversationType(row.space_type),
                last_active_time=Timestamp.from_micros(row.last_active_time_us) if row.last_active_time_us else None,
            ) for row in page],
            next_page_token=token,
        )

    def _with_exactly(self, connection: Connection, statement: Select[Any], viewer: Viewer,
                      participants: list[str]) -> Select[Any]:
        """DMs (one participant) or group chats (several) whose members are exactly the caller and them."""
        ids = {self._user_id(connection, reference) for reference in participants}
        if None in ids or viewer.user_id in ids:
            return statement.where(literal_column("1") == 0)
        everyone = [viewer.user_id, *ids]
        kind = "DIRECT_MESSAGE" if len(ids) == 1 else "GROUP_CHAT"
        member_count = select(func.count()).where(memberships.c.space_id == spaces.c.space_id).scalar_subquery()
        statement = statement.where(spaces.c.space_type == kind, member_count == len(everyone))
        for user_id in ids:
            statement = statement.where(exists().where(memberships.c.space_id == spaces.c.space_id,
                                                       memberships.c.user_id == user_id))
        return statement

    @staticmethod
    def _name_matches(viewer: Viewer, needle: str) -> ColumnElement[bool]:
        """The display name callers see: a space's own name, or (DMs, group chats) the other members' names."""
        other_member_named = exists().where(
            memberships.c.space_id == spaces.c.space_id, memberships.c.user_id != viewer.user_id,
            users.c.user_id == memberships.c.user_id,
            func.lower(users.c.display_name).contains(needle, autoescape=True),
        )
        return or_(
            and_(spaces.c.display_name.is_not(None),
                 func.lower(spaces.c.display_name).contains(needle, autoescape=True)),
            and_(spaces.c.display_name.is_(None), other_member_named),
        )

    @staticmethod
    def _display_names(connection: Connection, viewer: Viewer, rows: Sequence[AnyRow]) -> dict[str, str]:
        names = {row.space_id: row.display_name for row in rows if row.display_name}
        unnamed = [row.space_id for row in rows if not row.display_name]
        others: dict[str, list[str]] = {space_id: [] for space_id in unnamed}
        if unnamed:
            for space_id, display_name in connection.execute(
                select(memberships.c.space_id, users.c.display_name)
                .join(users, users.c.user_id == memberships.c.user_id)
                .where(memberships.c.space_id.in_(unnamed), memberships.c.user_id != viewer.user_id)
                .order_by(memberships.c.space_id, users.c.display_name)
            ).all():
                others[space_id].append(display_name)
        for space_id, people in others.items():
            names[space_id] = ", ".join(people) if people else "(only you)"
        return names

    # ------------------------------------------------------------------ list_memberships

    def list_memberships(self, request: ListMembershipsRequest, caller: Caller) -> ListMembershipsResponse:
        space = SpaceName.parse(request.parent, "parent")
        page_size = resolve_page_size(request.page_size, default=100, maximum=1000)
        query = {"tool": "list_memberships", "space": str(space)}
        with self.database.reading() as connection:
            viewer = self.viewer(connection, caller)
            position = self._position(request.page_token, query, viewer)
            self._visible_space(connection, viewer, space, "parent")
            statement = (
                select(memberships, users.c.display_name, users.c.user_type)
                .join(users, users.c.user_id == memberships.c.user_id)
                .where(memberships.c.space_id == space.space)
            )
            if position is not None:
                statement = statement.where(memberships.c.user_id > str(position[0]))
            rows = connection.execute(statement.order_by(memberships.c.user_id).limit(page_size + 1)).all()
        page, more = split_page(rows, page_size)
        token = self.tokens.issue(query=query, caller=viewer.principal, position=[page[-1].user_id]) if more else None
        return ListMembershipsResponse(
            memberships=[Membership(
                name=f"spaces/{space.space}/members/{row.user_id}",
                state=MembershipState.JOINED,
                role=MembershipRole.ROLE_MANAGER if row.role == "manager" else MembershipRole.ROLE_MEMBER,
                member=Member(name=f"users/{row.user_id}", display_name=row.display_name,
                              type=MemberType.BOT if row.user_type == "APP" else MemberType.HUMAN),
                create_time=Timestamp.from_micros(row.create_time_us) if row.create_time_us else None,
            ) for row in page],
            next_page_token=token,
        )

    # ------------------------------------------------------------------ send_message

    def send_message(self, request: SendMessageRequest, caller: Caller) -> SendMessageResponse:
        space = SpaceName.parse(request.conversation_id, "conversationId")
        thread = ThreadName.parse(request.thread_id, "threadId") if request.thread_id else None
        if thread is not None and thread.space != space.space:
            raise InvalidArgument(f"threadId {thread} is not a thread of {space}")
        message_text = request.message_text
        if not message_text.strip():
            raise InvalidArgument("messageText is required")
        if len(message_text) > MAX_MESSAGE_TEXT:
            raise InvalidArgument(f"messageText must be at most {MAX_MESSAGE_TEXT} characters")
        with self.database.transaction() as connection:
            viewer = self.viewer(connection, caller)
            self._visible_space(connection, viewer, space, "conversationId")
            if thread is not None and connection.scalar(
                select(func.count()).where(messages.c.space_id == space.space, messages.c.thread_id == thread.thread)
            ) == 0:
                raise NotFound(f"threadId: thread {thread} does not exist")
            message_id = secrets.token_hex(8)
            now = Timestamp.now().to_micros()
            names = _StoredNames(connection)
            mentioned = [user_id for reference in markdown.mentions(message_text, "chat")
                         if (user_id := names.user_id(reference)) is not None]
            row_id = connection.execute(insert(messages).values(
                space_id=space.space, message_id=message_id,
                thread_id=thread.thread if thread else message_id, threaded_reply=thread is not None,
                sender_id=viewer.user_id, create_time_us=now, last_update_time_us=None, delete_time_us=None,
                private_viewer_id=None, system=False, listed=True,
                has_link=markdown.has_link(message_text, "chat"),
                body=markdown.to_markdown(message_text, "chat", names),
                search_text=markdown.plain_text(message_text, "chat", names),
                attachments=None, reactions=None, quote=None,
            ).returning(messages.c.row_id)).scalar_one()
            for user_id in dict.fromkeys(mentioned):
                connection.execute(insert(mentions).values(message_row_id=row_id, user_id=user_id))
            connection.execute(update(spaces).where(spaces.c.space_id == space.space,
                                                    spaces.c.last_active_time_us < now)
                               .values(last_active_time_us=now))
            row = connection.execute(self._message_select().where(messages.c.row_id == row_id)).one()
        return SendMessageResponse(message=_message(row))


class _StoredNames:
    """Display names for the Markdown renderer, looked up in the store (``<users/…>`` mentions)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def user_id(self, reference: str) -> str | None:
        try:
            parsed = parse_user_reference(reference, "mention")
        except InvalidArgument:
            return None
        return ChatService._user_id(self.connection, parsed)

    def user(self, ref: str) -> str | None:
        user_id = self.user_id(ref)
        if user_id is None:
            return None
        name = self.connection.scalar(select(users.c.display_name).where(users.c.user_id == user_id))
        return str(name) if name is not None else None

    def channel(self, ref: str) -> str | None:
        return None


def _older_than(position: Sequence[Any]) -> ColumnElement[bool]:
    """Before ``(create_time_us, row_id)`` in newest-first order. The leading ``create_time_us <=`` is
    implied by the rest, and is what lets SQLite and PostgreSQL seek the index to the position instead
    of scanning it from the newest message (the OR alone is only a filter to both planners)."""
    created, row_id = position
    return and_(messages.c.create_time_us <= created,
                or_(messages.c.create_time_us < created,
                    and_(messages.c.create_time_us == created, messages.c.row_id < row_id)))


def _newer_than(position: list[Any]) -> ColumnElement[bool]:
    """After ``(create_time_us, row_id)`` in oldest-first order; see ``_older_than``."""
    created, row_id = position
    return and_(messages.c.create_time_us >= created,
                or_(messages.c.create_time_us > created,
                    and_(messages.c.create_time_us == created, messages.c.row_id > row_id)))


def _message(row: AnyRow) -> ChatMessage:
    # By position, in ``_message_select``'s order (a search's rank may follow): a page reads 50 rows of 14
    # columns, and a Row's attribute lookup by name costs more than building the message.
    (_, space_id, message_id, thread_id, threaded_reply, create_time_us, body, attachments, reactions, quote,
     sender_id, sender_name, sender_email, sender_type) = row[:_MESSAGE_COLUMNS]
    sender = None
    if sender_id is not None:
        human = sender_type != "APP"
        sender = User(user_id=f"users/{sender_id}", display_name=sender_name,
                      email=sender_email if human else None,
                      user_type=UserType.HUMAN if human else UserType.APP)
    quoted = _stored_json(quote)
    return ChatMessage(
        message_id=f"spaces/{space_id}/messages/{message_id}",
        thread_id=f"spaces/{space_id}/threads/{thread_id}" if thread_id else None,
        plaintext_body=body,
        sender=sender,
        create_time=Timestamp.from_micros(create_time_us),
        threaded_reply=bool(threaded_reply),
        attachments=[ChatAttachmentMetadata.model_validate(item) for item in _stored_json(attachments) or []],
        reaction_summaries=[ReactionSummary(emoji=item["emoji"], count=item["count"])
                            for item in _stored_json(reactions) or []],
        quoted_message_metadata=QuotedMessageMetadata.model_validate(quoted) if quoted else None,
    )


def _stored_json(value: Any) -> Any:
    """A JSON column selected as text: parsed, None for SQL NULL or JSON null. (PostgreSQL's driver hands
    JSONB over already parsed.)"""
    if value is None or value == "null":
        return None
    return json.loads(value) if isinstance(value, str) else value
