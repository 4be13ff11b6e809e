"""The playground through Starlette's test client: starting a session on the draft or a version, turns that
show what the agents did, answering a client tool call (refused answers kept off the session), the session
recorded like any other, and refusals: no CSRF token, a chat-only key, a read-only server, bad names."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from sqlalchemy import func, select
from starlette.testclient import TestClient

from convener.auth.caller import LOCAL_USER
from convener.ces import tables
from convener.ces.models import Conversation
from convener.ces.requests import GetConversationRequest
from convener.console.playground import ended, waiting_calls
from convener.services import Services
from tests.console.conftest import Keys
from tests.console.recorded import APP, SCRIPT
from tests.console.test_views import TOKEN, browser, signed_in

PLAYGROUND = f"/console/{APP}/playground"
SESSION = re.compile(rf"^{re.escape(PLAYGROUND)}/(pg-[0-9a-f]{{12}})#turn-(\d+)$")


def token_of(client: TestClient, path: str) -> str:
    found = TOKEN.search(client.get(path).text)
    assert found, f"{path} has no form"
    return found.group(1)


def start(client: TestClient, text: str, **choices: str) -> str:
    """A new session from the start form; its ID."""
    answer = client.post(PLAYGROUND, data={"csrf_token": token_of(client, PLAYGROUND), "text": text, **choices})
    assert answer.status_code == 303, answer.text[:2000]
    found = SESSION.match(answer.headers["location"])
    assert found and found.group(2) == "1", answer.headers["location"]
    return found.group(1)


def say(client: TestClient, session: str, **fields: str) -> TestClient:
    path = f"{PLAYGROUND}/{session}"
    return client.post(path, data={"csrf_token": token_of(client, path), **fields})  # type: ignore[return-value]


def stored(services: Services) -> tuple[int, int]:
    """How many sessions and conversations the store holds."""
    with services.database.reading() as connection:
        return (connection.execute(select(func.count()).select_from(tables.sessions)).scalar_one(),
                connection.execute(select(func.count()).select_from(tables.conversations)).scalar_one())


def recorded(services: Services, session: str) -> Conversation:
    return services.conversations.get(GetConversationRequest(name=f"{APP}/conversations/{session}"), LOCAL_USER)


def test_a_session_shows_each_turn_and_is_recorded_like_any_other(workspace: Services, keys: Keys) -> None:
    alice = signed_in(workspace, keys.admin)
    assert f'href="{PLAYGROUND}"' in alice.get(f"/console/{APP}").text
    form = alice.get(PLAYGROUND).text
    assert 'name="appVersion"' in form and '<option value="v1"' in form and '<option value="orders">' in form

    session = start(alice, "where is order AC-1001")
    page = alice.get(f"{PLAYGROUND}/{session}").text

    assert 'id="turn-1"' in page and "Transferred to <strong>Orders</strong>" in page
    assert "Tool call <strong>lookup_order</strong>" in page and "Tool response <strong>lookup_order</strong>" in page
    assert "Order AC-1001" in page and 'class="waterfall"' in page
    assert f'href="/console/{APP}/conversations/{session}"' in page and "Your next message" in page
    conversation = recorded(workspace, session)
    assert conversation.turn_count == 1 and conversation.app_version is None

    again = say(alice, session, text="and order AC-1002?")
    assert again.status_code == 303 and again.headers["location"].endswith(f"{session}#turn-2")
    assert recorded(workspace, session).turn_count == 2
    assert 'id="turn-2"' in alice.get(f"{PLAYGROUND}/{session}").text


def test_a_client_tool_call_is_answered_in_the_page_in_the_shape_it_declares(workspace: Services, keys: Keys) -> None:
    alice = signed_in(workspace, keys.admin)
    session = start(alice, "I'd like a refund for order AC-1010")
    page = alice.get(f"{PLAYGROUND}/{session}").text
    assert "Waiting for your client" in page and "<legend>confirm_identity</legend>" in page
    assert "&#34;amount&#34;: 16.0" in page or '"amount": 16.0' in page.replace("&#34;", '"')
    assert '{&#34;method&#34;?: &#34;fingerprint&#34; | &#34;face&#34; | &#34;code&#34;, &#34;verified&#34;?: boolean}' in page
    (call_id,) = re.findall(r'name="call-0" value="([^"]+)"', page)

    for typed, complaint in (("yes", "that is not JSON"),
                             ('{"verified": "yes"}', "that is not what confirm_identity answers"),
                             ('{"verified": true, "n": NaN}', "NaN or Infinity")):
        refused = say(alice, session, **{"call-0": call_id, "answer-0": typed})
        assert refused.status_code == 400 and complaint in refused.text, typed
        assert "Traceback" not in refused.text
    assert recorded(workspace, session).turn_count == 1  # a refused answer runs no turn

    stale = say(alice, session, **{"call-0": "not-a-call", "answer-0": "{}"})
    assert stale.status_code == 400 and "no longer waiting" in stale.text

    answered = say(alice, session, **{"call-0": call_id, "answer-0": '{"verified": true, "method": "face"}'})
    assert answered.status_code == 303 and answered.headers["location"].endswith("#turn-2")
    page = alice.get(f"{PLAYGROUND}/{session}").text
    assert "Refund RF-1010 of $16.00" in page and "Waiting for your client" not in page
    user_side = recorded(workspace, session).turns[1].messages[0].chunks  # type: ignore[index]
    assert user_side and user_side[0].tool_response is not None
    assert user_side[0].tool_response.response == {"output": {"verified": True, "method": "face"}}


def test_a_session_runs_the_version_it_started_on(workspace: Services, keys: Keys) -> None:
    alice = signed_in(workspace, keys.admin)
    session = start(alice, "where is order AC-1001", appVersion="v1")
    assert recorded(workspace, session).app_version == f"{APP}/versions/v1"
    page = alice.get(f"{PLAYGROUND}/{session}").text
    assert "<dt>Runs</dt><dd>v1" in page and "Convener the draft" not in page
    assert say(alice, session, text="thanks").status_code == 303
    assert recorded(workspace, session).app_version == f"{APP}/versions/v1"


def test_hostile_text_is_shown_as_text(workspace: Services, keys: Keys) -> None:
    alice = signed_in(workspace, keys.admin)
    session = start(alice, f"order {SCRIPT} <a href=\"javascript:alert(1)\">x</a>")
    page = alice.get(f"{PLAYGROUND}/{session}").text
    assert SCRIPT not in page and "&lt;script&gt;" in page and 'href="javascript:' not in page


@pytest.mark.parametrize("fields, complaint", [
    ({"text": "   "}, "type a message first"),
    ({"text": "hi", "entryAgent": "../admin"}, "INVALID_ARGUMENT"),
    ({"text": "hi", "entryAgent": "nobody"}, "does not exist"),
    ({"text": "hi", "appVersion": "v404"}, "NOT_FOUND"),
    ({"text": "hi", "deployment": "gone"}, "NOT_FOUND"),
    ({"text": "x" * 200_000}, "RESOURCE_EXHAUSTED"),
])
def test_a_bad_start_is_refused_with_its_reason_and_starts_nothing(workspace: Services, keys: Keys,
                                                                     fields: dict[str, str], complaint: str) -> None:
    alice = signed_in(workspace, keys.admin)
    before = stored(workspace)
    refused = alice.post(PLAYGROUND, data={"csrf_token": token_of(alice, PLAYGROUND), **fields})
    assert refused.status_code in (400, 404, 429) and complaint in refused.text, refused.text[-3000:]
    assert "Traceback" not in refused.text
    assert stored(workspace) == before


def test_a_bad_session_name_is_an_invalid_argument(workspace: Services, keys: Keys) -> None:
    alice = signed_in(workspace, keys.admin)
    page = alice.get(f"{PLAYGROUND}/-bad")
    assert page.status_code == 400 and "INVALID_ARGUMENT" in page.text
    fresh = alice.get(f"{PLAYGROUND}/not-started-yet")
    assert fresh.status_code == 200 and "Your first message" in fresh.text


def test_writes_need_the_form_token_the_service_scope_and_a_writable_server(workspace: Services,
                                                                             keys: Keys) -> None:
    alice = signed_in(workspace, keys.admin)
    session = start(alice, "where is order AC-1001")
    forged = alice.post(f"{PLAYGROUND}/{session}", data={"text": "again"})
    assert forged.status_code == 403 and "PERMISSION_DENIED" in forged.text
    other_site = alice.post(f"{PLAYGROUND}/{session}", headers={"origin": "https://evil.example"},
                            data={"csrf_token": token_of(alice, PLAYGROUND), "text": "again"})
    assert other_site.status_code == 403
    assert recorded(workspace, session).turn_count == 1

    ben = signed_in(workspace, keys.chat_only)
    for path in (PLAYGROUND, f"{PLAYGROUND}/{session}"):
        assert ben.get(path).status_code == 403, path
    assert ben.post(PLAYGROUND, data={"csrf_token": token_of(ben, "/console/"), "text": "hi"}).status_code == 403

    read_only = browser(replace(workspace, settings=workspace.settings.model_copy(update={"read_only": True})))
    read_only.headers["authorization"] = f"Bearer {keys.admin}"
    assert f'href="{PLAYGROUND}"' not in read_only.get(f"/console/{APP}").text
    refused = read_only.post(f"{PLAYGROUND}/{session}", data={"csrf_token": token_of(read_only, PLAYGROUND),
                                                              "text": "again"})
    assert refused.status_code == 403 and "read-only" in refused.text
    assert recorded(workspace, session).turn_count == 1


def test_waiting_calls_are_the_last_turns_calls_without_a_response() -> None:
    conversation = Conversation.model_validate({"turns": [
        {"messages": [{"role": "agent", "chunks": [{"toolCall": {"id": "old", "displayName": "t"}}]}]},
        {"messages": [{"role": "agent", "chunks": [
            {"toolCall": {"id": "server", "displayName": "lookup"}},
            {"toolResponse": {"id": "server", "response": {"output": 1}}},
            {"toolCall": {"id": "client", "displayName": "confirm"}},
        ]}], "rootSpan": {"name": "TURN", "attributes": {}}},
    ]})
    assert [call.id for call in waiting_calls(conversation)] == ["client"]
    assert not ended(conversation) and waiting_calls(Conversation()) == [] and not ended(Conversation())
    assert conversation.turns and conversation.turns[-1].root_span
    conversation.turns[-1].root_span.attributes = {"endSession": {"agent": "triage"}}
    assert ended(conversation)
