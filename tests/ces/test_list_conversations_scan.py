"""list_conversations: stored bodies served as they are, and the scan budget of filters on unindexed fields.

The budget is set tiny here (``list_scan_rows``) so that a handful of conversations proves the resume logic on
each engine; what a budget costs at a million rows is measured by benchmarks/list_conversations.py.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from convener.api.errors import InvalidArgument
from convener.api.protojson import Timestamp
from convener.api.stored import StoredBody
from convener.auth.caller import LOCAL_USER, Caller
from convener.ces import conversations
from convener.ces.models import App, Chunk, Conversation, Message, Source, Turn
from convener.ces.names import AppName
from convener.ces.requests import (
    CreateAppRequest,
    GetConversationRequest,
    ListConversationsRequest,
    ListConversationsResponse,
)
from convener.config import Settings
from convener.services import Services

APP = AppName("acme", "global", "scan")
BUDGET = 7
COUNT = 40
LANGUAGES = ("en-US", "de-DE", "fr-FR", "ja-JP", "en-US")  # de-DE: every 5th conversation
BOB = Caller("users/bob")


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, allow_anonymous=False,
                    list_scan_rows=BUDGET)


def conversation(index: int) -> Conversation:
    message = Message(role="user", chunks=[Chunk(text=f"question {index}")])
    return Conversation(
        start_time=Timestamp(1_700_000_000 + index * 60, (index % 3) * 1_000),
        turns=[Turn(messages=[message])],
        source=Source.EVAL if index % 10 == 0 else Source.LIVE,
        language_code=LANGUAGES[index % len(LANGUAGES)],
    )


@pytest.fixture
def stored(services: Services) -> list[Conversation]:
    """COUNT conversations, one a minute; the list (newest first) as the service stored them."""
    services.apps.create(CreateAppRequest(parent=str(APP.parent), app_id=APP.app, app=App(display_name="Scan")),
                         LOCAL_USER)
    kept = []
    with services.database.transaction() as connection:
        app_pk = services.apps.app_pk(connection, APP)
        for index in range(COUNT):
            name = APP.conversation(f"c{index:03d}")
            kept.append(services.conversations.store(connection, app_pk, name, conversation(index)).conversation)
    return sorted(kept, key=lambda c: (c.start_time, c.name), reverse=True)


def page(services: Services, caller: Caller = LOCAL_USER, **arguments: Any) -> ListConversationsResponse:
    return services.conversations.list(ListConversationsRequest(parent=str(APP), **arguments), caller)


def names(response: ListConversationsResponse) -> list[str]:
    return [body.to_json()["name"] for body in response.conversations or ()]


def walk(services: Services, page_size: int, **arguments: Any) -> tuple[list[str], list[int]]:
    """Every name listed, following tokens to the end; the size of each page."""
    found: list[str] = []
    sizes: list[int] = []
    token = None
    for _ in range(COUNT * 2):  # bounded: a scan that never ends fails the test instead of hanging it
        response = page(services, page_size=page_size, page_token=token, **arguments)
        found.extend(names(response))
        sizes.append(len(response.conversations or ()))
        token = response.next_page_token
        if not token:
            return found, sizes
    raise AssertionError("the listing did not end")


# --- stored bodies ---------------------------------------------------------------------------------------


def test_a_listed_conversation_is_the_stored_body_get_returns(services: Services, stored: list[Conversation]) -> None:
    listed = page(services, page_size=COUNT).conversations or []
    assert [body.to_json() for body in listed] == [c.to_json() for c in stored]
    for body in listed[:3]:
        got = services.conversations.get(GetConversationRequest(name=body.to_json()["name"]), LOCAL_USER)
        assert body.parse() == got
        assert body.to_json() == got.to_json()


def test_a_stored_body_has_its_models_schema_and_serializes_as_stored() -> None:
    model = conversation(1)
    body = StoredBody.of(model)
    response = ListConversationsResponse(conversations=[body], next_page_token="t")
    assert response.to_json() == {"conversations": [model.to_json()], "nextPageToken": "t"}
    assert ListConversationsResponse(conversations=[model]).to_json() == {"conversations": [model.to_json()]}
    schema = ListConversationsResponse.json_schema()
    assert schema["properties"]["conversations"]["anyOf"][0]["items"] == {"$ref": "#/$defs/Conversation"}
    with pytest.raises(ValueError, match="expected a stored Conversation"):
        ListConversationsResponse.model_validate({"conversations": [{"name": "x"}]})


# --- the scan budget -------------------------------------------------------------------------------------


def test_an_unindexed_filter_resumes_where_its_scan_stopped(services: Services, stored: list[Conversation]) -> None:
    expected = [c.name for c in stored if c.language_code == "de-DE"]
    found, sizes = walk(services, 3, filter='languageCode = "de-DE"')
    assert found == expected
    assert all(size <= 3 for size in sizes)
    assert 0 in sizes or any(size < 3 for size in sizes[:-1]), "with a budget of 7 rows some page is short"
    # Each call examines at most BUDGET rows, so walking COUNT rows takes at least COUNT / BUDGET calls.
    assert len(sizes) >= COUNT // BUDGET


def test_a_filter_matching_nothing_walks_the_app_a_budget_at_a_time(services: Services,
                                                                    stored: list[Conversation]) -> None:
    first = page(services, page_size=5, filter='languageCode = "xx-XX"')
    assert first.conversations is None or first.conversations == []
    assert first.next_page_token, "the scan stopped at its budget, so the page says where to go on"
    found, sizes = walk(services, 5, filter='languageCode = "xx-XX"')
    assert found == []
    assert len(sizes) == -(-COUNT // BUDGET)  # ceil: the last window reaches the end and has no token


def test_an_unindexed_filter_matching_every_row_pages_as_usual(services: Services,
                                                                    stored: list[Conversation]) -> None:
    # Every row matches: each page fills inside its window, so pages are full and tokens are ordinary.
    found, sizes = walk(services, 4, filter="turnCount = 1")
    assert found == [c.name for c in stored]
    assert sizes[:-1] == [4] * (len(sizes) - 1)


def test_windows_widened_up_to_the_budget_list_what_the_budget_alone_would(
        services: Services, stored: list[Conversation], monkeypatch: pytest.MonkeyPatch) -> None:
    # SQLite tries windows of growing size before the whole budget (PostgreSQL streams one window): with a
    # first window of one page's rows doubling up to a budget of 20 rows, the pages are still every match in
    # order, each call examines at most the budget, and a page full inside a small window is a full page.
    monkeypatch.setattr(conversations, "FIRST_WINDOW_PAGES", 1)
    monkeypatch.setattr(conversations, "WINDOW_GROWTH", 2)
    services.conversations.scan_rows = 20
    found, sizes = walk(services, 2, filter='languageCode = "de-DE"')
    assert found == [c.name for c in stored if c.language_code == "de-DE"]
    assert len(sizes) >= COUNT // 20
    found, sizes = walk(services, 4, filter="turnCount = 1")
    assert found == [c.name for c in stored]
    assert sizes[:-1] == [4] * (len(sizes) - 1)


def test_page_size_may_change_between_resumed_pages(services: Services, stored: list[Conversation]) -> None:
    expected = [c.name for c in stored if c.language_code == "en-US"]  # 2 of every 5
    found: list[str] = []
    token = None
    for size in [1, 5, 2, 100, 3] * COUNT:
        response = page(services, page_size=size, page_token=token, filter='languageCode = "en-US"')
        assert len(response.conversations or ()) <= size
        found.extend(names(response))
        token = response.next_page_token
        if not token:
            break
    assert found == expected


def test_indexed_filters_are_not_budgeted(services: Services, stored: list[Conversation]) -> None:
    # source and startTime are in the keyset indexes: the store seeks, so pages are full however far apart.
    evals = [c.name for c in stored if c.source is Source.EVAL]
    assert names(page(services, page_size=len(evals), sources=[Source.EVAL])) == evals
    assert names(page(services, page_size=len(evals), filter="source = EVAL")) == evals
    oldest = str(stored[-3].start_time)
    assert names(page(services, page_size=3, filter=f'startTime <= "{oldest}"')) == [c.name for c in stored[-3:]]


def _forged(token: str, position: list[Any]) -> str:
    body, _, mac = token.partition(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["k"] = position
    encoded = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).rstrip(b"=").decode()
    return f"{encoded}.{mac}"


@pytest.mark.parametrize("hostile", ["other-filter", "other-caller", "forged-position", "truncated", "no-filter"])
def test_a_scan_resume_token_is_bound_to_its_query_and_caller(services: Services, stored: list[Conversation],
                                                              hostile: str) -> None:
    token = page(services, page_size=5, filter='languageCode = "xx-XX"').next_page_token
    assert token
    attempts = {
        "other-filter": lambda: page(services, page_size=5, page_token=token, filter='languageCode = "de-DE"'),
        "other-caller": lambda: page(services, BOB, page_size=5, page_token=token, filter='languageCode = "xx-XX"'),
        "forged-position": lambda: page(services, page_size=5, filter='languageCode = "xx-XX"',
                                        page_token=_forged(token, [0, 0, "a"])),
        "truncated": lambda: page(services, page_size=5, page_token=token[:-3], filter='languageCode = "xx-XX"'),
        "no-filter": lambda: page(services, page_size=5, page_token=token),
    }
    with pytest.raises(InvalidArgument, match="pageToken is not valid"):
        attempts[hostile]()


def test_an_invalid_token_for_an_app_that_does_not_exist_is_not_found(services: Services,
                                                                      stored: list[Conversation]) -> None:
    with pytest.raises(Exception, match="does not exist"):
        services.conversations.list(ListConversationsRequest(parent=f"{APP}x", page_token="forged.token"), LOCAL_USER)


@pytest.mark.anyio
async def test_the_tool_serves_a_short_page_with_its_token(client: Client, stored: list[Conversation]) -> None:
    result = await client.call_tool("list_conversations", {"parent": str(APP), "pageSize": 5,
                                                           "filter": 'languageCode = "xx-XX"'})
    assert not result.is_error
    assert result.structured_content is not None
    assert set(result.structured_content) == {"nextPageToken"}
    listed = await client.call_tool("list_conversations", {"parent": str(APP), "pageSize": 2})
    assert listed.structured_content is not None
    assert listed.structured_content["conversations"] == [c.to_json() for c in stored[:2]]
    text = listed.content[0]
    assert text.type == "text" and json.loads(text.text) == listed.structured_content


def test_a_listed_body_keeps_large_numbers_doubles(services: Services, stored: list[Conversation]) -> None:
    # PostgreSQL's JSONB prints 1e23 as 100000000000000000000000; a Struct number is a double all the same.
    payload = {"big": 1e23, "negative": -2.5e30, "exact": 7}
    newest = conversation(COUNT).model_copy(update={"turns": [Turn(messages=[Message(role="user", chunks=[
        Chunk(payload=payload)])])]})
    with services.database.transaction() as connection:
        services.conversations.store(connection, services.apps.app_pk(connection, APP), APP.conversation("n"), newest)
    (body,) = page(services, page_size=1).conversations or []
    listed = body.to_json()["turns"][0]["messages"][0]["chunks"][0]["payload"]
    assert listed == payload
    assert [type(listed[key]) for key in payload] == [float, float, int]
