"""The console in a real headless Chromium: sign in with a key, walk apps, conversations and a conversation
on the demo workspace, see a filter's error inline, and check that hostile content stays text, that a
chat-only key sees no agent data, that pages read without JavaScript and fit a phone's width.

``CONVENER_SCREENSHOTS=<folder>`` also saves the pages docs/console.md shows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from convener.auth.keys import ApiKeys
from convener.console.present import TURNS_PER_PAGE
from convener.services import Services
from tests.conftest import demo_services, serving
from tests.console.browser import (
    assert_fits,
    assert_nothing_ran,
    chromium,
    require_browser,
    shoot,
    sign_in,
    wait_for_url,
)
from tests.console.recorded import APP, HOSTILE_ID, hostile_conversation, long_conversation, record

pytestmark = pytest.mark.slow


class Site:
    def __init__(self, url: str, admin: str, chat_only: str) -> None:
        self.url = url
        self.admin = admin
        self.chat_only = chat_only


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_browser()
    with demo_services("sqlite", tmp_path_factory.mktemp("console-browser")) as services:
        record(services, hostile_conversation(), long_conversation("long", TURNS_PER_PAGE + 20))
        keys = ApiKeys(services.database)
        admin, chat_only = keys.create("users/alice")[1], keys.create("users/ben", ("chat",))[1]
        with serving(services) as url:
            yield Site(url, admin, chat_only)


def test_sign_in_and_walk_to_a_conversation_and_its_trace(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.admin, start=f"/console/{APP}")
    assert browser.current_url == f"{site.url}/console/{APP}"  # back where the sign-in began
    browser.get(site.url + "/console/")
    shoot(browser, "home")
    browser.find_element(By.LINK_TEXT, "projects/demo/locations/global").click()
    wait_for_url(browser, lambda url: url.endswith("/console/projects/demo/locations/global/apps"))
    shoot(browser, "apps")
    browser.find_element(By.CSS_SELECTOR, f'a[href="/console/{APP}"]').click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}"))
    browser.find_element(By.PARTIAL_LINK_TEXT, "Conversations").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}/conversations"))
    assert_nothing_ran(browser)

    browser.find_element(By.ID, "filter").send_keys("turnCount >= 4")
    browser.find_element(By.XPATH, "//label[contains(@class, 'chip')][normalize-space()='LIVE']").click()
    browser.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
    wait_for_url(browser, lambda url: "filter=turnCount" in url and "sources=LIVE" in url)
    rows = browser.find_elements(By.CSS_SELECTOR, "table.conversations tbody tr")
    assert rows
    assert all(row.find_element(By.CSS_SELECTOR, ".chip").text == "LIVE" for row in rows)
    assert all(int(row.find_element(By.CSS_SELECTOR, "td.num").text) >= 4 for row in rows)
    shoot(browser, "conversations")
    browser.find_element(By.LINK_TEXT, "demo-001").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}/conversations/demo-001"))
    transcript = browser.find_element(By.CSS_SELECTOR, ".transcript").text
    assert "Welcome to Acme support" in transcript
    kinds = {row.find_element(By.CSS_SELECTOR, ".kind").text for row in browser.find_elements(By.CSS_SELECTOR, "tr.span")}
    assert {"TURN", "AGENT", "TOOL"} <= kinds
    bars = browser.find_elements(By.CSS_SELECTOR, "svg.bar rect")
    assert bars and all(bar.size["width"] > 0 for bar in bars)
    assert_nothing_ran(browser)
    shoot(browser, "conversation")

    browser.find_element(By.CSS_SELECTOR, "form.generate button[type=submit]").click()
    wait_for_url(browser, lambda url: f"/console/{APP}/evaluations/" in url)
    assert "lookup_order" in browser.find_element(By.TAG_NAME, "main").text  # demo-001's tool call, expected
    assert_nothing_ran(browser)


def test_a_filter_error_is_shown_beside_the_box(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.admin)
    browser.get(f"{site.url}/console/{APP}/conversations")
    browser.find_element(By.ID, "filter").send_keys("turnCount >> 2")
    browser.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
    wait_for_url(browser, lambda url: "filter=" in url)
    problem = browser.find_element(By.ID, "filter-problem").text
    assert problem.startswith("INVALID_ARGUMENT: filter:") and "at position" in problem
    assert "^" in browser.find_element(By.CSS_SELECTOR, "pre.caret").text
    assert browser.find_element(By.ID, "filter").get_attribute("value") == "turnCount >> 2"
    assert_nothing_ran(browser, page_status=400)
    shoot(browser, "filter-error")


def test_hostile_content_is_shown_as_text_and_nothing_runs(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.admin)
    browser.get(f"{site.url}/console/{APP}/conversations/{HOSTILE_ID}")
    text = browser.find_element(By.TAG_NAME, "main").text
    assert "<script>alert('pwned')</script>" in text
    assert "[click me](javascript:alert('link'))" in text
    assert "<img src=x onerror=" in text
    assert browser.find_elements(By.CSS_SELECTOR, "main script") == []
    assert browser.find_elements(By.CSS_SELECTOR, "main b") == []
    assert all("javascript:" not in (link.get_attribute("href") or "") for link in browser.find_elements(By.TAG_NAME, "a"))
    images = browser.find_elements(By.CSS_SELECTOR, "figure.image img")
    assert len(images) == 1 and browser.execute_script("return arguments[0].naturalWidth", images[0]) == 1
    assert browser.find_elements(By.CSS_SELECTOR, "audio[controls]")
    # Opening every disclosure shows the tool arguments, responses and variables as text too.
    for summary in browser.find_elements(By.CSS_SELECTOR, "details:not([open]) > summary"):
        summary.click()
    assert "alert('img')" in browser.find_element(By.CSS_SELECTOR, ".exchange.response.failed pre").text
    assert_nothing_ran(browser)
    shoot(browser, "hostile")


def test_a_link_to_a_turn_lands_on_the_page_that_holds_it(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.admin)
    later = TURNS_PER_PAGE + 7
    # A bare anchor, as in a link written by hand: the page holding the turn is opened, at the turn.
    browser.get(f"{site.url}/console/{APP}/conversations/long#turn-{later}")
    wait_for_url(browser, lambda url: url.endswith(f"?turn={later}#turn-{later}"))
    sections = browser.find_elements(By.CSS_SELECTOR, "section.turn")
    assert sections[0].get_attribute("id") == f"turn-{TURNS_PER_PAGE + 1}"
    assert browser.find_element(By.ID, f"turn-{later}").is_displayed()
    # The index's link to a turn of the first page goes there, and to the turn.
    browser.find_element(By.CSS_SELECTOR, 'nav.turn-index a[href="?turn=3#turn-3"]').click()
    wait_for_url(browser, lambda url: url.endswith("?turn=3#turn-3"))
    assert browser.find_elements(By.CSS_SELECTOR, "section.turn")[0].get_attribute("id") == "turn-1"
    assert_nothing_ran(browser)


def test_a_chat_only_key_sees_no_agent_data(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.chat_only)
    assert "users/ben" in browser.find_element(By.CSS_SELECTOR, ".principal").text
    assert not browser.find_elements(By.LINK_TEXT, "projects/demo/locations/global")
    for path in (f"/console/{APP}/conversations", f"/console/{APP}/conversations/demo-001"):
        browser.get(site.url + path)
        page = browser.find_element(By.TAG_NAME, "main").text
        assert "PERMISSION_DENIED" in page and "Acme" not in page and "AC-1002" not in page
        assert_nothing_ran(browser, page_status=403)
    browser.find_element(By.CSS_SELECTOR, "button.link").click()  # sign out
    wait_for_url(browser, lambda url: "/console/sign-in" in url)
    browser.get(f"{site.url}/console/{APP}")
    assert "/console/sign-in" in browser.current_url


def test_pages_read_without_javascript_and_fit_a_phone(site: Site) -> None:
    from selenium.webdriver.common.by import By

    with chromium(width=390, height=844, javascript=False) as phone:
        sign_in(phone, site.url, site.admin, "/console/sign-in", check=False)
        for path in ("/console/", f"/console/{APP}/conversations", f"/console/{APP}/conversations/demo-001"):
            phone.get(site.url + path)
            assert phone.find_element(By.TAG_NAME, "h1").text
            assert_fits(phone, path)
        assert "Where is my order" in phone.find_element(By.TAG_NAME, "main").text
        shoot(phone, "conversation-phone")
