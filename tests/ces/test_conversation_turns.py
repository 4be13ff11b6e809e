"""A conversation stored as a header and a row per turn: split on write, assembled on read, appended per turn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml
from sqlalchemy import func, select

from convener.api.errors import AlreadyExists, NotFound
from convener.api.protojson import Timestamp
from convener.auth.caller import LOCAL_USER
from convener.ces import conversation_bodies
from convener.ces.conversations import Appended, RecordedHistory, _columns
from convener.ces.importing import import_conversations
from convener.ces.models import Conversation
from convener.ces.names import AppName, ConversationName
from convener.ces.recording import settle
from convener.ces.requests import DeleteConversationRequest, GetConversationRequest, ListConversationsRequest
from convener.ces.session_models import RunSessionRequest, SessionConfig, SessionInput
from convener.ces.tables import conversation_turns, conversations
from convener.services import Services

APP = AppName("p", "l", "a")


def at(second: int) -> str:
    """A time ``second`` seconds into 2026."""
    return f"2026-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"


def turn(index: int, *, messages: int = 2) -> dict[str, Any]:
    said = [{"role": "user" if n % 2 == 0 else "agent", "chunks": [{"text": f"turn {index} message {n}"}],
             "eventTime": at(index)} for n in range(messages)]
    return {"messages": said} if said else {"rootSpan": {"name": f"turn {index}", "startTime": at(index)}}


def conversation(conversation_id: str, turns: int, *, start: int = 0, **fields: Any) -> dict[str, Any]:
    return {"name": f"{APP}/conversations/{conversation_id}", "startTime": at(start),
            "turns": [turn(start + index) for index in range(turns)], **fields}


def imported(services: Services, *bodies: dict[str, Any]) -> tuple[int, int, list[str]]:
    report = import_conversations(services.apps, services.conversations, [json.dumps(body) for body in bodies], APP)
    return report.created, report.unchanged, [error.reason for error in report.errors]


def get(services: Services, conversation_id: str) -> dict[str, Any]:
    found = services.conversations.get(GetConversationRequest(name=f"{APP}/conversations/{conversation_id}"), LOCAL_USER)
    return found.to_json()


def stored_rows(services: Services, conversation_id: str) -> tuple[dict[str, Any], list[int]]:
    """The conversation's header as stored, and the turn indexes of its turn rows."""
    with services.database.reading() as connection:
        row = connection.execute(select(conversations.c.id, conversations.c.body)
                                 .where(conversations.c.conversation_id == conversation_id)).one()
        indexes = connection.execute(select(conversation_turns.c.turn_index)
                                     .where(conversation_turns.c.conversation_pk == row.id)
                                     .order_by(conversation_turns.c.turn_index)).scalars().all()
    return row.body, list(indexes)


def settled_json(body: dict[str, Any], conversation_id: str) -> dict[str, Any]:
    name = ConversationName.parse(f"{APP}/conversations/{conversation_id}")
    return settle(Conversation.model_validate(body), name, received=Timestamp(0)).to_json()


@contextmanager
def statements(services: Services) -> Iterator[list[str]]:
    """The SQL statements run on the store meanwhile."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    with services.database.listening("before_cursor_execute", record):
        yield seen


# --- assembly ---------------------------------------------------------------------------------------


def test_split_and_assemble_give_back_the_body_keys_in_order() -> None:
    body = settle(Conversation.model_validate(conversation("c", 3, languageCode="en")),
                  ConversationName.parse(f"{APP}/conversations/c"), received=Timestamp(0)).to_json()
    header, turns = conversation_bodies.split(body)
    assert "turns" not in header and len(turns) == 3
    assembled = conversation_bodies.assemble(header, turns)
    assert assembled == body and list(assembled) == list(body)
    assert conversation_bodies.assemble(header, []) == header  # no turns: none written, as proto3 JSON omits them


def test_an_imported_conversation_is_a_header_and_a_row_per_turn_read_back_in_order(services: Services) -> None:
    given = conversation("c", 12)
    assert imported(services, given) == (1, 0, [])
    header, indexes = stored_rows(services, "c")
    assert "turns" not in header and header["turnCount"] == 12
    assert indexes == list(range(12))
    got = get(services, "c")
    assert got == settled_json(given, "c")
    assert [t["messages"][0]["chunks"][0]["text"] for t in got["turns"]] == [f"turn {i} message 0" for i in range(12)]


def test_a_conversation_of_more_than_a_thousand_turns_is_stored_and_read_whole(services: Services) -> None:
    given = conversation("long", 1_200)
    assert imported(services, given) == (1, 0, [])
    assert stored_rows(services, "long")[1] == list(range(1_200))
    got = get(services, "long")
    assert got["turnCount"] == 1_200 and got == settled_json(given, "long")


def test_a_list_page_reads_its_turns_in_one_query_whatever_the_number_of_conversations(services: Services) -> None:
    bodies = [conversation(f"c{index}", index % 4, start=index * 10) for index in range(7)]
    assert imported(services, *bodies) == (7, 0, [])
    with statements(services) as seen:
        page = services.conversations.list(ListConversationsRequest(parent=str(APP), page_size=5), LOCAL_USER)
    turn_reads = [s for s in seen if "ces_conversation_turns" in s]
    assert len(turn_reads) == 1 and sum("ces_conversations" in s for s in seen) == 1
    listed = [c.to_json() for c in page.conversations]
    assert [c["name"].rpartition("/")[2] for c in listed] == ["c6", "c5", "c4", "c3", "c2"]
    for body in listed:
        conversation_id = body["name"].rpartition("/")[2]
        assert body == settled_json(bodies[int(conversation_id[1:])], conversation_id)


def test_deleting_a_conversation_deletes_its_turns(services: Services) -> None:
    assert imported(services, conversation("gone", 5), conversation("kept", 3)) == (2, 0, [])
    with services.database.reading() as connection:
        gone = connection.scalar(select(conversations.c.id).where(conversations.c.conversation_id == "gone"))
    services.conversations.delete(DeleteConversationRequest(name=f"{APP}/conversations/gone"), LOCAL_USER)
    with services.database.reading() as connection:
        left = connection.execute(select(conversation_turns.c.conversation_pk, func.count())
                                  .group_by(conversation_turns.c.conversation_pk)).all()
    assert gone not in {pk for pk, _ in left} and [count for _, count in left] == [3]
    with pytest.raises(NotFound):
        get(services, "gone")


def test_the_same_conversation_again_is_a_no_op_and_a_different_one_already_exists(services: Services) -> None:
    given = conversation("c", 4)
    assert imported(services, given) == (1, 0, [])
    assert imported(services, given) == (0, 1, [])
    changed_turn = json.loads(json.dumps(given))
    changed_turn["turns"][2]["messages"][1]["chunks"][0]["text"] = "something else"
    one_more = {**given, "turns": [*given["turns"], turn(9)]}
    one_less = {**given, "turns": given["turns"][:3]}
    for different in (changed_turn, one_more, one_less, {**given, "languageCode": "fr"}):
        created, unchanged, errors = imported(services, different)
        assert (created, unchanged) == (0, 0) and errors == [f"ALREADY_EXISTS: conversation {APP}/conversations/c "
                                                             "already exists with different content"]
    assert stored_rows(services, "c")[1] == [0, 1, 2, 3] and get(services, "c") == settled_json(given, "c")
    with services.database.transaction() as connection:
        app_pk = services.apps.app_pk(connection, APP)
        with pytest.raises(AlreadyExists):
            services.conversations.store(connection, app_pk, ConversationName.parse(given["name"]),
                                         Conversation.model_validate(one_less))


def test_a_replaced_conversation_keeps_only_its_new_turns(services: Services) -> None:
    given = conversation("c", 5)
    assert imported(services, given) == (1, 0, [])
    shorter = conversation("c", 2)
    with services.database.transaction() as connection:
        app_pk = services.apps.app_pk(connection, APP)
        services.conversations.store(connection, app_pk, ConversationName.parse(shorter["name"]),
                                     Conversation.model_validate(shorter), replace=True)
    assert stored_rows(services, "c")[1] == [0, 1] and get(services, "c") == settled_json(shorter, "c")


# --- sessions append a row per turn ---------------------------------------------------------------

BUNDLE = {
    "format": "convener.app/v1",
    "app": {"displayName": "Echo", "rootAgent": "echo"},
    "agents": {"echo": {"displayName": "Echo", "playbookAgent": {
        "intents": [{"name": "say", "patterns": [r"say (?P<what>\w+)"], "steps": [{"reply": "{{ slots.what }}"}]}],
        "fallback": [{"reply": "Say something."}]}}},
}


def test_a_session_appends_a_turn_row_per_turn_and_its_header_is_what_settling_it_whole_gives(
        services: Services) -> None:
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
    session = f"{APP}/sessions/s"
    inputs = [[SessionInput(text="say hello")], [SessionInput(variables={"tier": "gold"}), SessionInput(text="hm")],
              [SessionInput(text="say bye")]]
    for given in inputs:
        services.runtime.sessions.run(RunSessionRequest(config=SessionConfig(session=session), inputs=given),
                                      LOCAL_USER)
    header, indexes = stored_rows(services, "s")
    assert indexes == [0, 1, 2] and "turns" not in header
    got = get(services, "s")
    assert got["turnCount"] == 3 and got["inputTypes"] == ["INPUT_TYPE_TEXT", "INPUT_TYPE_VARIABLES"]
    assert got["endTime"] == got["turns"][2]["rootSpan"]["endTime"]
    assert got == settled_json(got, "s")  # the header kept incrementally is the one derived from every turn


def test_the_filterable_columns_a_session_keeps_are_those_of_its_whole_conversation(services: Services) -> None:
    """A turn after the first updates only the columns a turn can change; the others keep what the first turn
    wrote, which is what the whole conversation gives."""
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
    session = f"{APP}/sessions/s"
    for given in ([SessionInput(text="say hello")], [SessionInput(variables={"tier": "gold"})],
                  [SessionInput(dtmf="12")], [SessionInput(text="say bye")]):
        services.runtime.sessions.run(RunSessionRequest(config=SessionConfig(session=session), inputs=given),
                                      LOCAL_USER)
    whole = Conversation.model_validate(get(services, "s"))
    with services.database.reading() as connection:
        row = connection.execute(select(*(conversations.c[name] for name in _columns(whole)))
                                 .where(conversations.c.conversation_id == "s")).one()
    assert whole.turn_count == 4 and dict(row._mapping) == _columns(whole)


def test_the_recorded_history_reads_only_the_last_turns_it_is_asked_for(services: Services) -> None:
    # Turns of 0, 1 and 2 messages, so that the last k messages span a varying number of turns.
    given = {**conversation("h", 0), "turns": [turn(index, messages=index % 3) for index in range(40)]}
    assert imported(services, given) == (1, 0, [])
    with services.database.reading() as connection:
        pk = connection.scalar(select(conversations.c.id).where(conversations.c.conversation_id == "h"))
    everything = [m for t in Conversation.model_validate(given).turns or () for m in t.messages or ()]
    for count in (1, 5, 20, 39, 200):
        assert list(RecordedHistory(services.database, pk, 40)[-count:]) == everything[-count:]
    history = RecordedHistory(services.database, pk, 40)
    assert len(history) == len(everything) and list(history) == everything and history[3] == everything[3]
    # The turns recorded after the history was taken are not part of it.
    assert list(RecordedHistory(services.database, pk, 10)[-20:]) == [
        m for t in Conversation.model_validate(given).turns[:10] or () for m in t.messages or ()][-20:]


def test_a_first_turn_begins_its_conversation_without_looking_for_it_again(services: Services) -> None:
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
    request = RunSessionRequest(config=SessionConfig(session=f"{APP}/sessions/first"), inputs=[SessionInput(text="hi")])
    with statements(services) as seen:
        services.runtime.sessions.run(request, LOCAL_USER)
    looked = [s for s in seen if s.lstrip().upper().startswith("SELECT") and "ces_conversations" in s]
    assert len(looked) == 1, looked  # the turn's reading, with its app and session
    assert get(services, "first")["turnCount"] == 1


def test_a_conversation_made_between_a_turns_reading_and_its_writing_gets_the_turn_appended(
        services: Services) -> None:
    assert imported(services, conversation("raced", 2)) == (1, 0, [])
    with services.database.reading() as connection:
        app_pk = connection.execute(select(conversations.c.app_pk).where(
            conversations.c.conversation_id == "raced")).scalar_one()
    name = ConversationName.parse(f"{APP}/conversations/raced")
    late = Conversation.model_validate({"turns": [turn(5)]}).turns or []
    with services.database.transaction() as connection:  # as a turn whose reading found no conversation
        services.conversations.append(connection, app_pk, [Appended(name, late[0], None, Conversation(),
                                                                    seen_absent=True)])
    header, indexes = stored_rows(services, "raced")
    assert indexes == [0, 1, 2]
    got = get(services, "raced")
    assert got["turnCount"] == 3 and got["turns"][2]["messages"][0]["chunks"][0]["text"] == "turn 5 message 0"
    with services.database.reading() as connection:
        assert connection.scalar(select(func.count()).select_from(conversations)) == 1
