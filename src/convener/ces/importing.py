"""Import conversations from JSON Lines: one Conversation per line, in list_conversations' JSON shape.

Every line stands alone: a bad line is reported with its number and reason and leaves nothing
behind (it runs in its own savepoint), good lines are stored, and lines already stored are
left as they are, so importing the same file twice changes nothing. Work is committed in
batches: an interrupted import keeps what it committed and a re-run finishes the rest.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pydantic import ValidationError
from sqlalchemy.exc import DBAPIError

from convener.api.errors import ApiError, InvalidArgument, describe_validation
from convener.api.protojson import check_storable_json
from convener.auth.caller import LOCAL_USER
from convener.ces.apps import AppService
from convener.ces.conversations import ConversationService, content_id
from convener.ces.models import App, Conversation
from convener.ces.names import AppName, ConversationName
from convener.outside.limits import CONVERSATION_BATCH_BYTES, CONVERSATION_LINE_BYTES

logger = logging.getLogger(__name__)

BATCH = 500
MAX_LINE_BYTES = CONVERSATION_LINE_BYTES


@dataclass(frozen=True)
class LineError:
    line: int
    reason: str


@dataclass
class ImportReport:
    created: int = 0
    unchanged: int = 0
    errors: list[LineError] = field(default_factory=list)

    @property
    def lines(self) -> int:
        return self.created + self.unchanged + len(self.errors)


def _decode(line: str | bytes) -> str:
    if len(line) > MAX_LINE_BYTES:
        raise InvalidArgument(f"the line is longer than {MAX_LINE_BYTES} bytes (ces.import.line)")
    if isinstance(line, str):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidArgument(f"not UTF-8: invalid byte at column {error.start + 1}") from None


def _parse(line: str | bytes, app: AppName) -> tuple[ConversationName, Conversation]:
    text = _decode(line)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidArgument(f"not JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise InvalidArgument("the JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise InvalidArgument("a line must be one JSON object (a Conversation)")
    check_storable_json(data, "conversation")
    try:
        conversation = Conversation.model_validate(data)
    except ValidationError as error:
        raise InvalidArgument(describe_validation(error)) from None
    if conversation.name:
        name = ConversationName.parse(conversation.name)
        if name.app_name != app:
            raise InvalidArgument(f"name {conversation.name} is not under the app {app}")
    else:
        name = app.conversation(content_id(conversation, app))
    return name, conversation


def import_conversations(
    apps: AppService,
    conversations: ConversationService,
    lines: Iterable[str | bytes],
    app: AppName,
    *,
    on_line: Callable[[int], None] = lambda _size: None,
    author: str = LOCAL_USER.principal,
) -> ImportReport:
    """Import ``lines`` into ``app`` (created if missing, by ``author``). ``on_line`` gets each line's size, for
    progress."""
    report = ImportReport()
    database = conversations.database
    with database.transaction() as connection:
        apps.ensure(connection, app, App(), author=author)
        app_pk = apps.app_pk(connection, app)
    batch: list[tuple[int, str | bytes]] = []
    batch_bytes = 0

    def flush() -> None:
        nonlocal batch_bytes
        batch_bytes = 0
        with database.transaction() as connection:
            for number, text in batch:
                try:
                    with connection.begin_nested():
                        name, conversation = _parse(text, app)
                        stored = conversations.store(connection, app_pk, name, conversation)
                except ApiError as error:
                    report.errors.append(LineError(number, str(error)))
                    continue
                except RecursionError:
                    report.errors.append(LineError(number, "INVALID_ARGUMENT: the conversation is nested too deeply"))
                    continue
                except DBAPIError:
                    # The savepoint undid the line; the store's own words stay in the log, not the report.
                    logger.exception("the store refused line %d", number)
                    report.errors.append(LineError(number, "INTERNAL: the store refused this conversation"))
                    continue
                if stored.created:
                    report.created += 1
                else:
                    report.unchanged += 1
        batch.clear()

    for number, text in enumerate(lines, start=1):
        on_line(len(text))
        if text.strip():
            batch.append((number, text))
            batch_bytes += len(text)
        if len(batch) >= BATCH or batch_bytes >= CONVERSATION_BATCH_BYTES:  # many lines, or a few big ones
            flush()
    flush()
    return report
