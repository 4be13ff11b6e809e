"""SessionService.save_all: played turns stored together, as an evaluation stores the turns of a group of results."""

from __future__ import annotations

import copy

import pytest
import yaml
from sqlalchemy import insert, select

from convener.api.errors import NotFound
from convener.auth.caller import LOCAL_USER
from convener.ces.names import AppName
from convener.ces.sessions import Opening, UnsavedTurn
from convener.ces.session_models import RunSessionRequest, SessionConfig, SessionInput
from convener.ces.tables import conversations, sessions
from convener.services import Services

from .test_conversation_turns import APP, BUNDLE, get, statements, stored_rows


def played(services: Services, session: str, text: str = "say hello", opening: Opening | None = None,
           **config: str) -> UnsavedTurn:
    request = RunSessionRequest(config=SessionConfig(session=f"{APP}/sessions/{session}", **config),
                                inputs=[SessionInput(text=text)])
    return services.runtime.sessions.play_turn(request, LOCAL_USER, opening=opening)


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


def _reply(turn: UnsavedTurn) -> str:
    return " ".join(output.text for output in turn.record.outputs if output.text)


def test_turns_given_an_opening_begin_their_sessions_reading_nothing_and_are_stored_as_any(
        services: Services) -> None:
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
    opening = services.runtime.sessions.opening(APP, None)
    with statements(services) as seen:
        turns = [played(services, f"o{index}", f"say w{index}", opening) for index in range(3)]
    assert seen == [], "the app as the opening read it: nothing of the sessions is read"
    assert [_reply(turn) for turn in turns] == ["w0", "w1", "w2"]
    assert saved(services, turns) == ["o0", "o1", "o2"]
    for index in range(3):
        got = get(services, f"o{index}")
        assert got["turnCount"] == 1 and got["turns"][0]["messages"][-1]["chunks"][0]["text"] == f"w{index}"
    assert stored_sessions(services)["o1"][0] == 1


def test_an_opening_runs_the_app_as_it_was_read_and_a_later_one_the_app_as_it_is(services: Services) -> None:
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
    before = services.runtime.sessions.opening(APP, None)
    changed = copy.deepcopy(BUNDLE)
    changed["agents"]["echo"]["playbookAgent"]["intents"][0]["steps"][0]["reply"] = "echo {{ slots.what }}"
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(changed), True, LOCAL_USER)
    assert _reply(played(services, "old", "say hi", before)) == "hi"
    assert _reply(played(services, "new", "say hi", services.runtime.sessions.opening(APP, None))) == "echo hi"
    assert _reply(played(services, "read", "say hi")) == "echo hi"


def test_an_opening_is_not_used_for_another_app_version_or_a_deployment(services: Services) -> None:
    services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
    opening = services.runtime.sessions.opening(APP, None)
    # Each is read as any turn's session is, and is refused for what the reading finds.
    with pytest.raises(NotFound, match="versions/v9"):
        played(services, "v", "say hi", opening, app_version=f"{APP}/versions/v9")
    with pytest.raises(NotFound, match="deployments/d9"):
        played(services, "d", "say hi", opening, deployment=f"{APP}/deployments/d9")
    other = RunSessionRequest(config=SessionConfig(session=f"{AppName('p', 'l', 'other')}/sessions/s"),
                              inputs=[SessionInput(text="say hi")])
    with pytest.raises(NotFound, match="other"):
        services.runtime.sessions.play_turn(other, LOCAL_USER, opening=opening)


def test_an_opening_of_an_app_that_does_not_exist_is_not_found(services: Services) -> None:
    with pytest.raises(NotFound, match="apps/missing"):
        services.runtime.sessions.opening(AppName("p", "l", "missing"), None)
