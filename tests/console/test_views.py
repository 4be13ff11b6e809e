"""The console's pages through Starlette's test client: sign-in, sessions, CSRF, access, and each page."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from bs4 import BeautifulSoup
from starlette.testclient import TestClient

from convener.auth.keys import ApiKeys
from convener.console.present import TURNS_PER_PAGE
from convener.console.security import CONTENT_SECURITY_POLICY, SESSION_SECONDS, Signer
from convener.server import build_app
from convener.services import Services
from tests.console.conftest import Keys
from tests.console.recorded import APP, HOSTILE_ID, long_conversation, record

LOCATION = "projects/demo/locations/global"
TOKEN = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')


def browser(services: Services, host: str = "127.0.0.1") -> TestClient:
    """A client as a browser on this machine is: loopback address, loopback Host, cookies kept."""
    return TestClient(build_app(services), base_url="http://127.0.0.1:8080", client=(host, 50123),
                      follow_redirects=False)


def csrf(client: TestClient, path: str = "/console/sign-in") -> str:
    found = TOKEN.search(client.get(path).text)
    assert found, "the page has no CSRF token"
    return found.group(1)


def signed_in(services: Services, key: str) -> TestClient:
    client = browser(services)
    answer = client.post("/console/sign-in", data={"csrf_token": csrf(client), "key": key, "next": "/console/"})
    assert answer.status_code == 303, answer.text
    return client


def test_every_page_carries_the_csp_and_the_root_links_to_the_console(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    for path in ("/", "/console/", "/console/sign-in", f"/console/{LOCATION}/apps", f"/console/{APP}",
                 f"/console/{APP}/conversations", f"/console/{APP}/conversations/demo-001", "/console/nowhere",
                 "/console/static/console.css"):
        answer = client.get(path)
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, path
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.status_code == (404 if path == "/console/nowhere" else 200), path
    assert 'href="/console/"' in client.get("/").text
    assert client.get("/console").headers["location"] == "/console/"
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY


def test_without_a_key_the_console_asks_for_one(workspace: Services) -> None:
    client = browser(workspace)
    answer = client.get(f"/console/{APP}/conversations")
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/console/sign-in?next=%2Fconsole%2F{APP.replace('/', '%2F')}%2Fconversations"
    assert "demo-001" not in client.get(f"/console/{APP}/conversations", follow_redirects=True).text


def test_sign_in_sets_a_strict_http_only_expiring_session_and_returns_where_asked(workspace: Services,
                                                                                 keys: Keys) -> None:
    client = browser(workspace)
    token = csrf(client)
    answer = client.post("/console/sign-in", data={"csrf_token": token, "key": keys.admin,
                                                   "next": f"/console/{APP}/conversations"})
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/console/{APP}/conversations"
    cookie = next(value for value in answer.headers.get_list("set-cookie") if value.startswith("convener_session="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and f"Max-Age={SESSION_SECONDS}" in cookie
    assert keys.admin not in cookie  # the session holds the key's fingerprint, never the key
    page = client.get(f"/console/{APP}/conversations")
    assert page.status_code == 200 and f'href="/console/{APP}/conversations/' in page.text
    assert "users/alice" in page.text


@pytest.mark.parametrize("next_path", ["https://evil.example/", "//evil.example/", "/\\evil.example", "/mcp"])
def test_sign_in_never_sends_the_browser_off_the_console(workspace: Services, keys: Keys, next_path: str) -> None:
    client = browser(workspace)
    answer = client.post("/console/sign-in", data={"csrf_token": csrf(client), "key": keys.admin, "next": next_path})
    assert answer.headers["location"] == "/console/"


def test_a_wrong_key_is_refused_inline(workspace: Services) -> None:
    client = browser(workspace)
    for key in ("cnv_nothing_here", "not-a-key", "x" * 5000):
        answer = client.post("/console/sign-in", data={"csrf_token": csrf(client), "key": key})
        assert answer.status_code == 401
        assert "UNAUTHENTICATED: that is not a valid API key" in answer.text
        assert "convener_session" not in answer.headers.get("set-cookie", "")


def test_forms_that_write_need_the_csrf_token_and_this_origin(workspace: Services, keys: Keys) -> None:
    client = browser(workspace)
    token = csrf(client)
    assert client.post("/console/sign-in", data={"key": keys.admin}).status_code == 403
    assert client.post("/console/sign-in", data={"csrf_token": "0" * 64, "key": keys.admin}).status_code == 403
    elsewhere = client.post("/console/sign-in", data={"csrf_token": token, "key": keys.admin},
                            headers={"origin": "https://evil.example"})
    assert elsewhere.status_code == 403 and "another site" in elsewhere.text
    # Another browser's token is no good with this browser's cookie.
    assert browser(workspace).post("/console/sign-in", data={"csrf_token": token, "key": keys.admin}).status_code == 403
    session = signed_in(workspace, keys.admin)
    assert session.post("/console/sign-out", data={}).status_code == 403
    assert session.get("/console/").status_code == 200


def test_a_form_over_its_limit_is_refused_unread(workspace: Services) -> None:
    client = browser(workspace)
    answer = client.post("/console/sign-in", data={"csrf_token": csrf(client), "key": "k" * 20_000})
    assert answer.status_code == 429 and "http.console.form" in answer.text


def test_sign_out_ends_the_session(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    answer = client.post("/console/sign-out", data={"csrf_token": csrf(client, "/console/")})
    assert answer.status_code == 303
    assert client.get("/console/").status_code == 303


def test_revoking_the_key_ends_its_sessions(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    issued = ApiKeys(workspace.database)
    issued.revoke(next(key.key_id for key in issued.list() if key.principal == "users/alice"))
    assert client.get(f"/console/{APP}/conversations").status_code == 303


def test_a_forged_or_expired_session_is_no_session() -> None:
    signer = Signer(b"s" * 32)
    cookie = signer.session_cookie("f" * 64, now=1_000_000)
    assert signer.session(cookie, now=1_000_001) is not None
    assert signer.session(cookie, now=1_000_000 + SESSION_SECONDS + 1) is None
    body, signature = cookie.split(".")
    assert signer.session(f"{body}x.{signature}", now=1_000_001) is None
    assert Signer(b"t" * 32).session(cookie, now=1_000_001) is None
    for junk in ("", ".", "a.b.c", "x" * 600, "!!.??"):
        assert signer.session(junk) is None


def test_a_bearer_key_works_too(workspace: Services, keys: Keys) -> None:
    client = browser(workspace)
    answer = client.get(f"/console/{APP}", headers={"authorization": f"Bearer {keys.admin}"})
    assert answer.status_code == 200
    assert client.get(f"/console/{APP}", headers={"authorization": "Bearer cnv_wrong"}).status_code == 303


def test_a_chat_only_key_sees_no_agent_data(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.chat_only)
    home = client.get("/console/")
    assert home.status_code == 200 and f"/console/{LOCATION}/apps" not in home.text
    for path in (f"/console/{LOCATION}/apps", f"/console/{APP}", f"/console/{APP}/conversations",
                 f"/console/{APP}/conversations/demo-001"):
        answer = client.get(path)
        assert answer.status_code == 403, path
        assert "PERMISSION_DENIED: users/ben may not use the ces service" in answer.text
        assert "AC-1002" not in answer.text and "Acme" not in answer.text


def test_anonymous_only_on_loopback_when_allowed(workspace: Services) -> None:
    assert browser(workspace).get("/console/").status_code == 303  # not allowed: sign in
    opened = replace(workspace, settings=workspace.settings.model_copy(update={"allow_anonymous": True}))
    open_here = browser(opened)
    assert open_here.get(f"/console/{APP}/conversations").status_code == 200
    assert "users/anonymous" in open_here.get("/console/").text
    assert browser(opened, host="10.1.2.3").get("/console/").status_code == 303


def test_a_foreign_host_name_is_refused_on_a_loopback_server(workspace: Services, keys: Keys) -> None:
    # DNS rebinding: a page of evil.example resolved to 127.0.0.1 must not read the console.
    client = browser(workspace)
    for host in ("evil.example", "evil.example:8080", "127.0.0.1.evil.example"):
        answer = client.get("/console/", headers={"host": host, "authorization": f"Bearer {keys.admin}"})
        assert answer.status_code == 421, host
    assert client.get("/console/sign-in", headers={"host": "localhost:8080"}).status_code == 200


def test_apps_and_an_app(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    apps = client.get(f"/console/{LOCATION}/apps").text
    assert f'href="/console/{APP}"' in apps
    app = client.get(f"/console/{APP}").text
    assert f'href="/console/{APP}/conversations"' in app
    assert client.get(f"/console/{LOCATION}/apps/nope").status_code == 404
    assert client.get("/console/go?location=projects/demo/locations/global").headers["location"] == \
        f"/console/{LOCATION}/apps"
    assert client.get("/console/go?location=../../etc").status_code == 400


def test_the_filter_box_lists_as_list_conversations_does_and_shows_errors_inline(workspace: Services,
                                                                                 keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    listed = client.get(f"/console/{APP}/conversations", params={"filter": "turnCount >= 4"})
    assert listed.status_code == 200
    ids = set(re.findall(r'/conversations/([\w-]+)"', listed.text))
    assert ids and "demo-001" in ids
    bad = client.get(f"/console/{APP}/conversations", params={"filter": "turnCount >> 2"})
    assert bad.status_code == 400
    assert "INVALID_ARGUMENT: filter:" in bad.text and "at position" in bad.text
    assert 'aria-invalid="true"' in bad.text and 'class="caret"' in bad.text
    unknown = client.get(f"/console/{APP}/conversations", params={"filter": "<script>=1"})
    assert unknown.status_code == 400 and "<script>" not in unknown.text


def test_source_chips_narrow_the_list(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    every = client.get(f"/console/{APP}/conversations", params={"pageSize": "100"}).text
    evals = client.get(f"/console/{APP}/conversations", params={"pageSize": "100", "sources": "EVAL"}).text
    assert every.count('class="chip source-') > evals.count('class="chip source-eval"')
    assert 'class="chip source-live"' not in evals


def test_pages_follow_the_tools_signed_tokens(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    first = client.get(f"/console/{APP}/conversations", params={"pageSize": "5"}).text
    found = re.search(r'href="([^"]+)" rel="next"', first)
    assert found
    second = client.get(found.group(1).replace("&amp;", "&")).text
    ids = re.findall(r'/conversations/([\w-]+)"', first)
    assert ids and not set(ids) & set(re.findall(r'/conversations/([\w-]+)"', second))
    assert "« First page" in second
    forged = client.get(f"/console/{APP}/conversations", params={"pageSize": "5", "pageToken": "AAAA"})
    assert forged.status_code == 400 and "INVALID_ARGUMENT" in forged.text
    # A token is bound to its query: another filter cannot reuse it.
    token = re.search(r"pageToken=([^&\"]+)", found.group(1).replace("&amp;", "&"))
    assert token
    replayed = client.get(f"/console/{APP}/conversations",
                          params={"pageSize": "5", "filter": "turnCount > 1", "pageToken": token.group(1)})
    assert replayed.status_code == 400


def test_a_conversation_shows_its_transcript_and_waterfall(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    page = client.get(f"/console/{APP}/conversations/demo-001")
    assert page.status_code == 200
    assert "Where is my order AC-1002?" in page.text
    assert "Tool call <strong>lookup_order</strong>" in page.text
    assert "Transferred to" in page.text
    for kind in ("turn", "agent", "tool"):
        assert f"span kind-{kind}" in page.text
    assert "server-timing" in page.headers
    assert client.get(f"/console/{APP}/conversations/nope").status_code == 404


def test_a_long_conversation_shows_its_turns_a_page_at_a_time(workspace: Services, keys: Keys) -> None:
    turns = TURNS_PER_PAGE * 2 + 30
    record(workspace, long_conversation("long", turns))
    client = signed_in(workspace, keys.admin)
    path = f"/console/{APP}/conversations/long"

    def shown(page: str) -> list[str]:
        return [section["id"] for section in BeautifulSoup(page, "html.parser").select("section.turn")]

    first = client.get(path).text
    assert shown(first) == [f"turn-{index}" for index in range(1, TURNS_PER_PAGE + 1)]
    assert f"<dt>Turns</dt><dd>{turns}</dd>" in first
    # The index links to every turn: here by its anchor, elsewhere by the page that holds it.
    index = BeautifulSoup(first, "html.parser").select_one("nav.turn-index")
    assert index is not None and index["data-turn-pages"] == str(TURNS_PER_PAGE)
    links = [link["href"] for link in index.find_all("a")]
    assert len(links) == turns
    assert links[0] == "#turn-1" and links[TURNS_PER_PAGE - 1] == f"#turn-{TURNS_PER_PAGE}"
    later = TURNS_PER_PAGE + 17
    assert links[later - 1] == f"?turn={later}#turn-{later}"
    assert 'rel="prev"' not in first and f'href="?turn={TURNS_PER_PAGE + 1}" rel="next"' in first

    middle = client.get(f"{path}?turn={later}").text
    assert shown(middle) == [f"turn-{index}" for index in range(TURNS_PER_PAGE + 1, 2 * TURNS_PER_PAGE + 1)]
    assert 'href="?turn=1" rel="prev"' in middle and f'href="?turn={2 * TURNS_PER_PAGE + 1}" rel="next"' in middle
    assert f'<a href="#turn-{later}">' in middle and '<a href="?turn=1#turn-1">' in middle
    last = client.get(f"{path}?turn={turns}").text
    assert shown(last) == [f"turn-{index}" for index in range(2 * TURNS_PER_PAGE + 1, turns + 1)]
    assert 'rel="next"' not in last
    for bad in ("0", str(turns + 1), "x", "-1", "1e3"):
        refused = client.get(path, params={"turn": bad})
        assert refused.status_code == 400 and "INVALID_ARGUMENT: turn:" in refused.text, bad
    # A conversation of one page has neither pages nor the marker the script looks for.
    short = client.get(f"/console/{APP}/conversations/demo-001").text
    assert "data-turn-pages" not in short and "turn-pages" not in short


def test_hostile_content_is_text_and_every_chunk_kind_is_shown(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    page = client.get(f"/console/{APP}/conversations/{HOSTILE_ID}")
    assert page.status_code == 200
    html = page.text
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in html
    document = BeautifulSoup(html, "html.parser")
    # Whatever the conversation holds, the page's markup is the console's own: its one script file, no
    # handlers, no script links, no image but the PNG (the SVG one can carry script: described, not drawn).
    assert [tag.get("src") for tag in document.find_all("script")] == ["/console/static/console.js"]
    assert not [tag for tag in document.find_all(True) if any(name.startswith("on") for name in tag.attrs)]
    assert not [tag for tag in document.find_all(href=True) if "javascript:" in tag["href"].lower()]
    assert [tag["src"][:22] for tag in document.find_all("img")] == ["data:image/png;base64,"]
    assert not document.find_all("b")
    text = document.get_text()
    assert "<script>alert('pwned')</script>" in text and "[click me](javascript:alert('link'))" in text
    assert '<img src="data:image/png;base64,' in html
    assert "image/svg+xml" in html and "data:image/svg+xml" not in html  # described, never drawn
    assert '<audio controls preload="none" src="data:audio/wav;base64,' in html
    assert "A file: text/html" in html
    assert 'class="exchange payload"' in html and 'class="exchange variables"' in html
    assert 'class="exchange response failed"' in html
    assert "120 in / 18 out" in html and "UNAVAILABLE: &lt;script&gt;" in html
    assert "span kind-llm" in html


def test_console_off(workspace: Services) -> None:
    quiet = replace(workspace, settings=workspace.settings.model_copy(update={"console": False}))
    client = browser(quiet)
    assert client.get("/console/").status_code == 404
    assert client.get("/healthz").status_code == 200
