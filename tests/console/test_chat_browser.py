"""The chat, knowledge and operations pages in a real headless Chromium on the demo workspace: Ana walks from
the start page to her conversations, a space with its threads, a thread and the message search (a message
holding hostile Markdown among them); asks the documentation a question and follows a reference; lists her
operations and cancels one. Nothing runs on any page; the pages fit a phone without JavaScript."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from convener.api.names import LocationName
from convener.auth.caller import Caller
from convener.auth.keys import ApiKeys
from convener.chat.models import SendMessageRequest
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
from tests.console.test_chat_views import GENERAL, HOSTILE, SUPPORT

pytestmark = pytest.mark.slow
LOCATION = "projects/demo/locations/global"


class Site:
    def __init__(self, url: str, ana: str, operation: str) -> None:
        self.url = url
        self.ana = ana
        self.operation = operation


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_browser()
    with demo_services("sqlite", tmp_path_factory.mktemp("chat-browser")) as services:
        ana = ApiKeys(services.database).create("users/ana")[1]
        caller = Caller("users/ana", frozenset({"*"}))
        services.chat.send_message(SendMessageRequest(conversation_id=GENERAL, message_text=HOSTILE), caller)
        operation = _running_operation(services, caller)
        with serving(services) as url:
            yield Site(url, ana, operation)


def _running_operation(services: Services, caller: Caller) -> str:
    with services.database.transaction() as connection:
        operation = services.operations.start(connection, LocationName.parse(LOCATION), caller, {
            "@type": "type.googleapis.com/google.cloud.ces.v1beta.EvaluationRunMetadata",
            "progress": {"totalCount": 4, "completedCount": 1, "errorCount": 0}})
    assert operation.name
    return operation.name


def no_dangerous_links(driver: Any) -> None:
    from selenium.webdriver.common.by import By

    assert driver.find_elements(By.CSS_SELECTOR, "main script, main img, main iframe") == []
    hrefs = [(link.get_attribute("href") or "").lower() for link in driver.find_elements(By.TAG_NAME, "a")]
    assert not any(href.startswith(("javascript:", "data:")) for href in hrefs)


def test_chat_a_space_a_thread_and_search(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.ana)
    browser.find_element(By.LINK_TEXT, "Your conversations").click()
    wait_for_url(browser, lambda url: url.endswith("/console/spaces"))
    names = [link.text for link in browser.find_elements(By.CSS_SELECTOR, "table.spaces tbody td > a")]
    assert "general" in names and "support-agent" in names and "incidents" not in names
    assert_nothing_ran(browser)

    browser.find_element(By.LINK_TEXT, "general").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{GENERAL}"))
    main = browser.find_element(By.TAG_NAME, "main").text
    assert "<script>alert('chat')</script>" in main and "[click me](javascript:alert('link'))" in main
    no_dangerous_links(browser)
    assert_nothing_ran(browser)
    shoot(browser, "chat-space")

    browser.get(f"{site.url}/console/{SUPPORT}")
    thread = browser.find_element(By.CSS_SELECTOR, "section.chat-thread .replies a")
    thread.click()
    wait_for_url(browser, lambda url: "/threads/" in url)
    assert browser.find_elements(By.CSS_SELECTOR, "article.chat-message")
    assert_nothing_ran(browser)

    browser.get(f"{site.url}/console/{SUPPORT}")
    browser.find_element(By.LINK_TEXT, "Search this conversation").click()
    wait_for_url(browser, lambda url: "/console/spaces/-/messages" in url)
    browser.find_element(By.ID, "keywords").send_keys("refund")
    browser.find_element(By.CSS_SELECTOR, "form.search-form button[type=submit]").click()
    wait_for_url(browser, lambda url: "keywords=refund" in url)
    found = browser.find_elements(By.CSS_SELECTOR, "article.chat-message")
    assert found and all(SUPPORT in message.find_element(By.TAG_NAME, "header").text for message in found)
    assert_nothing_ran(browser)

    browser.find_element(By.ID, "startTime").send_keys("yesterday")
    browser.find_element(By.CSS_SELECTOR, "form.search-form button[type=submit]").click()
    wait_for_url(browser, lambda url: "startTime=yesterday" in url)
    assert browser.find_element(By.ID, "search-problem").text.startswith("INVALID_ARGUMENT")
    assert_nothing_ran(browser, page_status=400)


def test_knowledge_ask_and_follow_a_reference(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.ana)
    browser.find_element(By.LINK_TEXT, "ask a question").click()
    wait_for_url(browser, lambda url: url.endswith("/console/answer"))
    browser.find_element(By.ID, "query").send_keys("How do I sign in to the console?")
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait_for_url(browser, lambda url: "query=" in url)
    assert browser.find_element(By.CSS_SELECTOR, "section.answer").text
    assert browser.find_elements(By.CSS_SELECTOR, "section.citations blockquote.passage")
    assert_nothing_ran(browser)
    shoot(browser, "knowledge-answer")
    browser.find_element(By.CSS_SELECTOR, "section.references a").click()
    wait_for_url(browser, lambda url: "/console/documents/" in url)
    assert browser.find_element(By.CSS_SELECTOR, "article.document").text
    no_dangerous_links(browser)
    assert_nothing_ran(browser)


def test_operations_list_and_cancel(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.ana)
    browser.find_element(By.PARTIAL_LINK_TEXT, "the operations of").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{LOCATION}/operations"))
    row = browser.find_element(By.CSS_SELECTOR, f'table.operations a[href="/console/{site.operation}"]')
    assert_nothing_ran(browser)
    shoot(browser, "operations")
    row.click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{site.operation}"))
    assert "1 of 4 finished" in browser.find_element(By.CSS_SELECTOR, ".facts").text
    browser.find_element(By.CSS_SELECTOR, "form.cancel button").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{site.operation}")
                 and bool(browser.find_elements(By.CSS_SELECTOR, "form.cancel button[disabled]")))
    assert browser.find_element(By.CSS_SELECTOR, ".facts .chip").text == "cancelling"
    assert_nothing_ran(browser)


def test_the_pages_read_without_javascript_and_fit_a_phone(site: Site) -> None:
    from selenium.webdriver.common.by import By

    with chromium(width=390, height=844, javascript=False) as phone:
        sign_in(phone, site.url, site.ana, "/console/sign-in", check=False)
        for path in ("/console/spaces", f"/console/{SUPPORT}", f"/console/{GENERAL}",
                     "/console/spaces/-/messages?keywords=refund", "/console/dataSources",
                     "/console/answer?query=How+do+I+sign+in", "/console/documents?query=console",
                     f"/console/{LOCATION}/operations", f"/console/{site.operation}"):
            phone.get(site.url + path)
            assert phone.find_element(By.TAG_NAME, "h1").text, path
            assert_fits(phone, path)
