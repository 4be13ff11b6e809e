"""SessionService.save_all: played turns stored together, as an evaluation stores the turns of a group of results."""

from __future__ import annotations

import yaml
from sqlalchemy import insert, select

from convener.auth.caller import LOCAL_USER
from convener.ces.sessions import UnsavedTurn
from convener.ces.session_models import RunSessionRequest, SessionConfig, SessionInput
from convener.ces.tables import conversations, sessions
from convener.services import Services

from .test_conversation_turns import APP, BUNDLE, get, statements, stored_rows


def played(services: Services, session: str, text: str = "say hello") -> UnsavedTurn:
    request = RunSessionRequest(config=SessionConfig(session=f"{APP}/sessions/{session}"),
                                inputs=[SessionInput(text=text)])
    return services.runtime.sessions.play_turn(request, LOCAL_USER)


def saved(services: Services, turns: list[UnsavedTurn]) -> list[str]:
    with services.database.transaction() as connection:
        return [turn.name.id for turn in services.runtime.sessions.save_all(connection, turns)]


def stored_sessions(services: Services) -> dict[str, tuple[int, dict[str, object]]]:
    with services.database.reading() as connection:
        return {row.session_id: (row.revision, row.state) for row in connection.execute(
            select(sessions.c.session_id, sessions.c.revision, sessions.c.state))}


def test_turns_beginning_sessions_are_stored_with_a_statement_for_each_table_whatever_their_number(
        services: Services) -> None:
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
    turns = [played(services, f"s{index}", f"say w{index}") for index in range(5)]
    with statements(services) as seen:
        assert saved(services, turns) == [f"s{index}" for index in range(5)]
    writes = [s.split("(")[0].split() for s in seen if s.lstrip().upper().startswith("INSERT")]
    assert writes == [["INSERT", "INTO", "ces_sessions"], ["INSERT", "INTO", "ces_conversations"],
                      ["INSERT", "INTO", "ces_conversation_turns"]], seen
    assert sorted(stored_sessions(services)) == [f"s{index}" for index in range(5)]
    for index in range(5):
        got = get(services, f"s{index}")
        assert got["turnCount"] == 1 and got["turns"][0]["messages"][-1]["chunks"][0]["text"] == f"w{index}"
        assert stored_rows(services, f"s{index}")[1] == [0]


def test_a_session_another_turn_stored_first_keeps_it_and_the_others_are_stored(services: Services) -> None:
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
    turns = [played(services, name) for name in ("a", "taken", "b")]
    with services.database.transaction() as connection:
        connection.execute(insert(sessions).values(
            app_pk=turns[1].app_pk, session_id="taken", app_version="", deployment="", revision=7, ended=False,
            update_time_us=1, state={"theirs": True}))
    assert saved(services, turns) == ["a", "b"]
    assert stored_sessions(services)["taken"] == (7, {"theirs": True})
    assert get(services, "a")["turnCount"] == 1 and get(services, "b")["turnCount"] == 1
    assert sorted(_conversation_ids(services)) == ["a", "b"], "the turn that lost is not recorded either"


def test_two_first_turns_of_one_session_store_the_first_only(services: Services) -> None:
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
    first, second = played(services, "twice", "say one"), played(services, "twice", "say two")
    assert saved(services, [first, second]) == ["twice"]
    got = get(services, "twice")
    assert got["turnCount"] == 1 and got["turns"][0]["messages"][-1]["chunks"][0]["text"] == "one"


def test_a_later_turn_among_first_turns_moves_its_session_on_and_appends_to_its_conversation(
        services: Services) -> None:
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
    saved(services, [played(services, "old", "say one")])
    later, stale = played(services, "old", "say two"), played(services, "old", "say three")
    assert saved(services, [played(services, "new"), later, stale]) == ["new", "old"]
    assert stored_sessions(services)["old"][0] == 2, "the stale turn read revision 1 too: not stored"
    got = get(services, "old")
    assert got["turnCount"] == 2 and [turn["messages"][-1]["chunks"][0]["text"] for turn in got["turns"]] == [
        "one", "two"]
    assert get(services, "new")["turnCount"] == 1


def _conversation_ids(services: Services) -> list[str]:
    with services.database.reading() as connection:
        return list(connection.execute(select(conversations.c.conversation_id)).scalars())
