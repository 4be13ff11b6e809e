"""The chat pages through Starlette's test client: a user's conversations, a conversation's messages and
threads, the message search, Markdown rendered safely, access by scope and by membership, bad parameters."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from convener.auth.keys import ApiKeys
from convener.chat.models import SendMessageRequest
from convener.services import Services
from tests.console.conftest import Keys
from tests.console.test_views import signed_in

SUPPORT, INCIDENTS, GENERAL = "spaces/C06SUPPORT", "spaces/C06INCIDNT", "spaces/C06GENERAL"
HOSTILE = ("<script>alert('chat')</script> [click me](javascript:alert('link')) "
           "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) "
           "<img src=x onerror=alert('img')> <b>bold?</b> <javascript:alert('auto')> "
           "**strong** [fine](https://example.test/ok) <mailto:ana@acme.test>")


def key(workspace: Services, principal: str, scopes: tuple[str, ...] = ("*",)) -> str:
    return ApiKeys(workspace.database).create(principal, scopes)[1]


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def post_hostile(workspace: Services, principal: str = "users/ana") -> str:
    """A message of ``principal`` in #general holding hostile Markdown; its name."""
    caller = ApiKeys(workspace.database).caller(key(workspace, principal))
    assert caller is not None
    sent = workspace.chat.send_message(SendMessageRequest(conversation_id=GENERAL, message_text=HOSTILE), caller)
    assert sent.message and sent.message.message_id
    return sent.message.message_id


def test_the_spaces_page_lists_the_callers_conversations(workspace: Services) -> None:
    ana = signed_in(workspace, key(workspace, "users/ana"))
    page = ana.get("/console/spaces")
    assert page.status_code == 200
    links = {a["href"] for a in soup(page.text).select("table.spaces a")}
    assert links == {f"/console/{space}" for space in (SUPPORT, GENERAL, "spaces/D06ANABEN", "spaces/C06ANABENCY")}
    named = ana.get("/console/spaces", params={"spaceNameQuery": "gener"})
    assert [a["href"] for a in soup(named.text).select("table.spaces a")] == [f"/console/{GENERAL}"]
    paged = ana.get("/console/spaces", params={"pageSize": "2"})
    assert len(soup(paged.text).select("table.spaces tbody tr")) == 2
    following = soup(paged.text).select_one("nav.pager a[rel=next]")
    assert following is not None
    second = ana.get(str(following["href"]))
    assert len(soup(second.text).select("table.spaces tbody tr")) == 2
    assert 'href="/console/spaces"' in ana.get("/console/").text


def test_a_space_shows_its_messages_in_threads_and_pages(workspace: Services) -> None:
    ana = signed_in(workspace, key(workspace, "users/ana"))
    page = ana.get(f"/console/{SUPPORT}", params={"pageSize": "10"})
    assert page.status_code == 200, page.text
    html = soup(page.text)
    assert len(html.select("article.chat-message")) == 10
    assert html.select("section.chat-thread .replies article.chat-message.reply")
    # Markdown rendered: the nightly run's bold title, its list and its https link
    assert html.select_one("article.chat-message .md strong").text == "Nightly evaluation"
    assert html.select_one('article.chat-message .md a[href^="https://convener.acme.test/"]')["rel"] == \
        ["nofollow", "noopener", "noreferrer"]
    assert "Dana Reyes" in {member.text.strip() for member in html.select("details.members li")}
    thread_link = html.select_one("section.chat-thread .replies a")
    assert thread_link is not None and "/threads/" in thread_link["href"]
    thread = ana.get(str(thread_link["href"]))
    assert thread.status_code == 200 and "Thread" in soup(thread.text).h1.text
    following = html.select_one("nav.pager a[rel=next]")
    assert following is not None
    older = ana.get(str(following["href"]))
    assert older.status_code == 200
    first_names = {a["id"] for a in html.select("article.chat-message")}
    assert first_names.isdisjoint(a["id"] for a in soup(older.text).select("article.chat-message"))


def test_hostile_markdown_in_a_message_stays_text(workspace: Services) -> None:
    name = post_hostile(workspace)
    ana = signed_in(workspace, key(workspace, "users/ana"))
    for path, params in ((f"/console/{GENERAL}", {}), ("/console/spaces/-/messages", {"keywords": "strong"})):
        page = ana.get(path, params=params)
        assert page.status_code == 200
        html = soup(page.text)
        article = html.find("article", id=f"m-{name.rsplit('/', 1)[-1]}")
        assert article is not None, path
        body = article.select_one(".md")
        assert "<script>alert('chat')</script>" in body.text
        assert "[click me](javascript:alert('link'))" in body.text
        assert "<img src=x onerror=alert('img')>" in body.text and "<b>bold?</b>" in body.text
        assert body.select("script, img, b, iframe") == []
        assert body.select_one("strong").text == "strong"
        assert [a["href"] for a in body.select("a")] == ["https://example.test/ok", "mailto:ana@acme.test"]
        assert html.select("main script") == []
        assert not any(str(a.get("href", "")).lower().startswith(("javascript:", "data:")) for a in html.select("a"))
        assert "<script>alert(" not in page.text and 'href="javascript:' not in page.text.lower()


def test_a_ces_only_key_is_refused_chat_pages(workspace: Services) -> None:
    ces = signed_in(workspace, key(workspace, "users/ana", ("ces",)))
    for path in ("/console/spaces", f"/console/{SUPPORT}", "/console/spaces/-/messages?keywords=refund"):
        page = ces.get(path)
        assert page.status_code == 403, path
        assert "PERMISSION_DENIED" in page.text and "Nightly evaluation" not in page.text
    assert 'href="/console/spaces"' not in ces.get("/console/").text


def test_a_user_sees_only_the_spaces_they_are_a_member_of(workspace: Services, keys: Keys) -> None:
    """#incidents is Ben's and not Ana's; the one private message (deploybot to Ana) is nobody's to list."""
    ben = signed_in(workspace, keys.chat_only)
    ana = signed_in(workspace, key(workspace, "users/ana"))
    assert f"/console/{INCIDENTS}" in {a["href"] for a in soup(ben.get("/console/spaces").text).select("table a")}
    assert ben.get(f"/console/{INCIDENTS}").status_code == 200
    assert f"/console/{INCIDENTS}" not in ana.get("/console/spaces").text
    refused = ana.get(f"/console/{INCIDENTS}")
    assert refused.status_code == 404 and "NOT_FOUND" in refused.text
    assert ana.get(f"/console/{INCIDENTS}/threads/1793000000.000100").status_code == 404
    incident_words = soup(ben.get(f"/console/{INCIDENTS}").text).select_one("article.chat-message .md").text
    found = ana.get("/console/spaces/-/messages", params={"keywords": incident_words.split()[0]})
    assert f"/console/{INCIDENTS}" not in found.text
    assert ana.get("/console/spaces/-/messages", params={"conversationId": INCIDENTS}).status_code == 404
    for client in (ana, ben):
        for path, params in ((f"/console/{SUPPORT}", {"pageSize": "50"}),
                             ("/console/spaces/-/messages", {"keywords": "r-1027a"})):
            assert "Only visible to you" not in client.get(path, params=params).text
    # Outsiders: Alice is a member of nothing in the demo's chat.
    alice = signed_in(workspace, keys.admin)
    assert soup(alice.get("/console/spaces").text).select("table.spaces") == []
    assert alice.get(f"/console/{SUPPORT}").status_code == 404


def test_search_takes_search_messages_parameters(workspace: Services) -> None:
    ana = signed_in(workspace, key(workspace, "users/ana"))
    blank = ana.get("/console/spaces/-/messages")
    assert blank.status_code == 200 and not soup(blank.text).select("article.chat-message")
    found = ana.get("/console/spaces/-/messages", params={"keywords": "refund", "conversationId": SUPPORT,
                                                          "orderBy": "CREATE_TIME_ASC", "pageSize": "3"})
    html = soup(found.text)
    articles = html.select("article.chat-message")
    assert len(articles) == 3 and all(SUPPORT in a.header.text for a in articles)
    times = [a.select_one("time")["datetime"] for a in articles]
    assert times == sorted(times)
    assert html.select_one("#keywords")["value"] == "refund"
    assert html.select_one("#orderBy option[selected]")["value"] == "CREATE_TIME_ASC"
    following = html.select_one("nav.pager a[rel=next]")
    assert following is not None and ana.get(str(following["href"])).status_code == 200
    linked = ana.get("/console/spaces/-/messages", params={"hasLink": "true", "spaceDisplayNames": "support"})
    assert all(a.select(".md a") for a in soup(linked.text).select("article.chat-message"))
    assert soup(linked.text).select("article.chat-message")


@pytest.mark.parametrize(("path", "params"), [
    ("/console/spaces", {"pageSize": "lots"}),
    ("/console/spaces/C06SUPPORT", {"pageSize": "-3"}),
    ("/console/spaces/C06SUPPORT", {"startTime": "yesterday"}),
    ("/console/spaces/C06SUPPORT", {"pageToken": "forged"}),
    ("/console/spaces/-/messages", {"keywords": "refund", "orderBy": "SIDEWAYS"}),
    ("/console/spaces/-/messages", {"hasLink": "maybe"}),
    ("/console/spaces/-/messages", {"startTime": "not a time"}),
    ("/console/spaces/-/messages", {"conversationId": "rooms/x"}),
])
def test_bad_parameters_are_invalid_arguments(workspace: Services, path: str, params: dict[str, str]) -> None:
    ana = signed_in(workspace, key(workspace, "users/ana"))
    page = ana.get(path, params=params)
    assert page.status_code == 400, (path, params, page.status_code)
    assert "INVALID_ARGUMENT" in page.text and "Traceback" not in page.text
