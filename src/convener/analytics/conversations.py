"""Conversations with data agents, and their messages, private to the principal who started them.

A conversation that belongs to someone else answers exactly like one that does not exist, so its name
leaks nothing. A turn (the user's message and every system message answering it) is written in one
transaction: an interrupted answer leaves no half turn behind.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, func, insert, or_, select, update

from convener.analytics.agents import AGENTS, PARENT, agent_id_of
from convener.analytics.models import (
    Conversation,
    ListConversationMessagesResponse,
    ListConversationsResponse,
    Message,
)
from convener.analytics.tables import conversations, messages
from convener.api.errors import InvalidArgument, NotFound
from convener.api.paging import PageTokens, resolve_page_size, split_page
from convener.api.protojson import Timestamp
from convener.auth.caller import Caller
from convener.store.database import Database

CONVERSATIONS = f"{PARENT}/conversations/"
CONVERSATION_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


def conversation_id_of(text: str) -> str:
    conversation_id = text.removeprefix(CONVERSATIONS) if isinstance(text, str) else ""
    if not CONVERSATION_ID.fullmatch(conversation_id):
        raise InvalidArgument(f'conversation "{str(text)[:80]}" must be an ID or a name {CONVERSATIONS}{{id}}')
    return conversation_id


def _not_found(conversation_id: str) -> NotFound:
    return NotFound(f"conversation {CONVERSATIONS}{conversation_id} does not exist")


class Conversations:
    def __init__(self, database: Database, tokens: PageTokens) -> None:
        self.database = database
        self.tokens = tokens

    def start(self, agent_id: str, caller: Caller) -> str:
        conversation_id = uuid.uuid4().hex
        now = Timestamp.now().to_micros()
        with self.database.transaction() as connection:
            connection.execute(insert(conversations).values(
                conversation_id=conversation_id, agent_id=agent_id, principal=caller.principal,
                create_time_us=now, last_used_time_us=now))
        return conversation_id

    def owned(self, text: str, caller: Caller) -> tuple[str, str]:
        """(conversation ID, agent ID) of a conversation of the caller's, or NOT_FOUND."""
        conversation_id = conversation_id_of(text)
        with self.database.reading() as connection:
            row = connection.execute(select(conversations.c.agent_id).where(
                conversations.c.conversation_id == conversation_id,
                conversations.c.principal == caller.principal)).first()
        if row is None:
            raise _not_found(conversation_id)
        return conversation_id, row.agent_id

    def history(self, conversation_id: str, limit: int) -> list[Message]:
        """The last ``limit`` messages, oldest first: the context of a follow-up question."""
        with self.database.reading() as connection:
            rows = connection.execute(select(messages.c.message).where(messages.c.conversation_id == conversation_id)
                                      .order_by(messages.c.seq.desc()).limit(limit)).all()
        return [Message.model_validate(row.message) for row in reversed(rows)]

    def append(self, conversation_id: str, turn: Sequence[Message]) -> None:
        with self.database.transaction() as connection:
            last = connection.execute(select(func.max(messages.c.seq)).where(
                messages.c.conversation_id == conversation_id)).scalar()
            start = (last or 0) + 1
            connection.execute(insert(messages), [
                {"conversation_id": conversation_id, "seq": start + offset, "message": message.to_json()}
                for offset, message in enumerate(turn)])
            connection.execute(update(conversations).where(conversations.c.conversation_id == conversation_id)
                               .values(last_used_time_us=Timestamp.now().to_micros()))

    def list(self, agent: str | None, page_size: int | None, page_token: str | None,
             caller: Caller) -> ListConversationsResponse:
        size = resolve_page_size(page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        agent_id = agent_id_of(agent) if agent else None
        query = {"tool": "list_data_agent_conversations", "agent": agent_id}
        statement = select(conversations).where(conversations.c.principal == caller.principal)
        if agent_id:
            statement = statement.where(conversations.c.agent_id == agent_id)
        if page_token:
            match self.tokens.position(page_token, query=query, caller=caller.principal):
                case [int() as used, str() as after]:
                    statement = statement.where(or_(
                        conversations.c.last_used_time_us < used,
                        and_(conversations.c.last_used_time_us == used, conversations.c.conversation_id > after)))
                case _:
                    raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
        statement = statement.order_by(conversations.c.last_used_time_us.desc(), conversations.c.conversation_id)
        with self.database.reading() as connection:
            rows = connection.execute(statement.limit(size + 1)).all()
        page, more = split_page(rows, size)
        token = self.tokens.issue(query=query, caller=caller.principal,
                                  position=[page[-1].last_used_time_us, page[-1].conversation_id]) if more else None
        return ListConversationsResponse(conversations=[_conversation(row) for row in page], next_page_token=token)

    def messages(self, conversation: str, page_size: int | None, page_token: str | None,
                 caller: Caller) -> ListConversationMessagesResponse:
        conversation_id, _ = self.owned(conversation, caller)
        size = resolve_page_size(page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        query = {"tool": "list_data_agent_messages", "conversation": conversation_id}
        statement = select(messages).where(messages.c.conversation_id == conversation_id)
        if page_token:
            match self.tokens.position(page_token, query=query, caller=caller.principal):
                case [int() as after]:
                    statement = statement.where(messages.c.seq > after)
                case _:
                    raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
        with self.database.reading() as connection:
            rows = connection.execute(statement.order_by(messages.c.seq).limit(size + 1)).all()
        page, more = split_page(rows, size)
        token = self.tokens.issue(query=query, caller=caller.principal, position=[page[-1].seq]) if more else None
        return ListConversationMessagesResponse(
            messages=[Message.model_validate(row.message) for row in page], next_page_token=token)


def _conversation(row: Any) -> Conversation:
    return Conversation(
        name=CONVERSATIONS + row.conversation_id, agents=[AGENTS + row.agent_id],
        create_time=Timestamp.from_micros(row.create_time_us),
        last_used_time=Timestamp.from_micros(row.last_used_time_us))
