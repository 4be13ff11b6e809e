"""The playground through Starlette's test client: starting a session on the draft or a version, turns that
show what the agents did, answering a client tool call (refused answers kept off the session), the session
recorded like any other, and refusals: no CSRF token, a chat-only key, a read-only server, bad names."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from sqlalchemy import func, select
from httpx import Response
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
START = re.compile(rf'<form method="post" action="{re.escape(PLAYGROUND)}/(pg-[0-9a-f]{{12}})#next"')


def token_of(client: TestClient, path: str) -> str:
    found = TOKEN.search(client.get(path).text)
    assert found, f"{path} has no form"
    return found.group(1)


def start_form(client: TestClient) -> tuple[str, str]:
    """The start form's session ID (new on every load) and CSRF token."""
    form = client.get(PLAYGROUND).text
    found = START.search(form)
    token = TOKEN.search(form)
    assert found and token, form[-2000:]
    return found.group(1), token.group(1)


def start(client: TestClient, text: str, **choices: str) -> str:
    """A new session from the start form, its first turn run; its ID."""
    session, token = start_form(client)
    answer = client.post(f"{PLAYGROUND}/{session}", data={"csrf_token": token, "text": text, **choices})
    assert answer.status_code == 200 and 'id="turn-1"' in answer.text, answer.text[-2000:]
    return session


def say(client: TestClient, session: str, **fields: str) -> Response:
    path = f"{PLAYGROUND}/{session}"
    return client.post(path, data={"csrf_token": token_of(client, path), **fields})


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
    assert again.status_code == 200 and 'id="turn-2"' in again.text and 'id="turn-1"' in again.text
    assert recorded(workspace, session).turn_count == 2
    assert 'id="turn-2"' in alice.get(f"{PLAYGROUND}/{session}").text


def test_a_turn_streams_what_happens_as_it_happens(workspace: Services, keys: Keys) -> None:
    alice = signed_in(workspace, keys.admin)
    session = start(alice, "hello")
    path = f"{PLAYGROUND}/{session}"
    with alice.stream("POST", path, data={"csrf_token": token_of(alice, path),
                                          "text": "where is order AC-1001"}) as answer:
        assert answer.status_code == 200
        chunks = [chunk.decode() for chunk in answer.iter_bytes() if chunk]
    # The turns so far leave first; then one piece for each thing that happened; the new turn last.
    assert 'id="turn-1"' in chunks[0] and 'id="turn-2"' not in chunks[0] and "where is order AC-1001" in chunks[0]
    html = "".join(chunks)
    steps = [step.strip() for step in re.findall(r'<li class="step small muted">([^<]*)</li>', html)]
    assert steps == ["transferred to Orders", "tool call lookup_order", "tool response lookup_order",
                     "variables updated: last_order"]
    assert len(chunks) >= len(steps) + 2
    assert html.index('class="steps"') < html.index('id="turn-2"') < html.index('id="next"')
    assert html.count("<html") == 1 and html.rstrip().endswith("</html>")


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
    assert answered.status_code == 200 and "tool call create_refund" in answered.text
    assert "Refund RF-1010 of $16.00" in answered.text and "Waiting for your client" not in answered.text
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
    assert say(alice, session, text="thanks").status_code == 200
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
    session, token = start_form(alice)
    refused = alice.post(f"{PLAYGROUND}/{session}", data={"csrf_token": token, **fields})
    assert refused.status_code in (400, 429) and complaint in refused.text, refused.text[-3000:]
    assert "Traceback" not in refused.text
    assert stored(workspace) == before
    if refused.status_code == 400:  # the page keeps the start's choices for the next try
        for key in ("entryAgent", "appVersion", "deployment"):
            if fields.get(key) and "/" not in fields[key]:
                assert f'name="{key}" value="{fields[key]}"' in refused.text


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
    assert ben.post(f"{PLAYGROUND}/{session}", data={"csrf_token": token_of(ben, "/console/"),
                                                       "text": "hi"}).status_code == 403

    read_only = browser(replace(workspace, settings=workspace.settings.model_copy(update={"read_only": True})))
    read_only.headers["authorization"] = f"Bearer {keys.admin}"
    assert f'href="{PLAYGROUND}"' not in read_only.get(f"/console/{APP}").text
    refused = read_only.post(f"{PLAYGROUND}/{session}", data={"csrf_token": token_of(read_only, f"/console/{APP}"),
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
