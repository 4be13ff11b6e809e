"""The agents pages and the playground in a real headless Chromium: from an app to its agents, an agent, one of
its tools, the app's versions and a version; a playground session that answers a client tool call in the page;
hostile text in an agent or a message stays text; the pages read (and the playground talks) without JavaScript
at a phone's width."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from convener.auth.keys import ApiKeys
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
from tests.console.recorded import APP, SCRIPT
from tests.console.test_agents_views import COLLECTIONS, hostile_parts

pytestmark = pytest.mark.slow


class Site:
    def __init__(self, url: str, admin: str, hostile: str) -> None:
        self.url = url
        self.admin = admin
        self.hostile = hostile


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_browser()
    with demo_services("sqlite", tmp_path_factory.mktemp("agents-browser")) as services:
        hostile = hostile_parts(services)
        admin = ApiKeys(services.database).create("users/alice")[1]
        with serving(services) as url:
            yield Site(url, admin, hostile)


def test_walk_from_the_app_to_an_agent_its_tool_and_a_version(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.admin, f"/console/{APP}")
    browser.find_element(By.LINK_TEXT, "Agents").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}/agents"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "table.parts tbody tr")) == 4
    assert_nothing_ran(browser)

    browser.find_element(By.LINK_TEXT, "Orders").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}/agents/orders"))
    assert "playbook agent" in browser.find_element(By.TAG_NAME, "main").text
    assert_nothing_ran(browser)

    browser.find_element(By.LINK_TEXT, "lookup_order").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}/tools/lookup_order"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "lookup_order"
    assert_nothing_ran(browser)

    browser.find_element(By.LINK_TEXT, f"apps/support").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}"))
    browser.find_element(By.LINK_TEXT, "versions").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}/versions"))
    assert_nothing_ran(browser)

    browser.find_element(By.LINK_TEXT, "v1").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}/versions/v1"))
    main = browser.find_element(By.TAG_NAME, "main").text
    assert "first published" in main and "Agents in this version" in main
    assert_nothing_ran(browser)


def test_hostile_text_in_an_agent_stays_text(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.admin, f"/console/{site.hostile}")
    for path in (f"/console/{APP}/agents", f"/console/{site.hostile}", f"/console/{APP}/guardrails/no-swearing"):
        browser.get(site.url + path)
        assert SCRIPT in browser.find_element(By.TAG_NAME, "main").text, path
        assert browser.find_elements(By.CSS_SELECTOR, "main script, main img") == []
        assert_nothing_ran(browser)


def talk(driver: Any, text: str) -> None:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "text")
    box.clear()
    box.send_keys(text)
    box.find_element(By.XPATH, "ancestor::form//button[@type='submit']").click()


def test_talk_in_the_playground_and_answer_the_client_tool(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.admin, f"/console/{APP}")
    browser.find_element(By.LINK_TEXT, "Playground").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}/playground"))
    talk(browser, "I'd like a refund for order AC-1010")
    wait_for_url(browser, lambda url: "/playground/pg-" in url and bool(browser.find_elements(By.ID, "turn-1")))
    main = browser.find_element(By.TAG_NAME, "main").text
    assert "Waiting for your client" in main and "confirm_identity" in main
    shoot(browser, "playground-client-tool")
    assert_nothing_ran(browser)

    answer = browser.find_element(By.ID, "answer-0")
    answer.send_keys('{"verified": "yes"}')
    answer.find_element(By.XPATH, "ancestor::form//button[@type='submit']").click()
    # (a click does not wait for the page it posts to: the refusal is waited for, as the next turn is below)
    wait_for_url(browser, lambda url: bool(browser.find_elements(By.CSS_SELECTOR, "#next .error")))
    refused = browser.find_element(By.CSS_SELECTOR, "#next .error").text
    assert "that is not what confirm_identity answers" in refused
    assert_nothing_ran(browser, 400)
    answer = browser.find_element(By.ID, "answer-0")
    answer.clear()
    answer.send_keys('{"verified": true, "method": "fingerprint"}')
    answer.find_element(By.XPATH, "ancestor::form//button[@type='submit']").click()
    wait_for_url(browser, lambda url: bool(browser.find_elements(By.ID, "turn-2")))
    assert "Refund RF-1010 of $16.00" in browser.find_element(By.ID, "turn-2").text
    steps = [step.text for step in browser.find_elements(By.CSS_SELECTOR, "ol.steps li.step")]
    assert steps[:2] == ["tool call create_refund", "tool response create_refund"]
    assert browser.find_elements(By.ID, "answer-0") == []
    assert_nothing_ran(browser)
    shoot(browser, "playground")

    session = browser.current_url.split("/playground/", 1)[1].split("#", 1)[0]
    browser.find_element(By.LINK_TEXT, f"conversation {session}").click()
    wait_for_url(browser, lambda url: url.endswith(f"/conversations/{session}"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "section.turn")) == 2
    assert_nothing_ran(browser)


def test_agents_pages_read_without_javascript_and_fit_a_phone(site: Site) -> None:
    from selenium.webdriver.common.by import By

    with chromium(width=390, height=844, javascript=False) as phone:
        sign_in(phone, site.url, site.admin, "/console/sign-in", check=False)
        for path in [f"/console/{APP}/{collection}" for collection in COLLECTIONS] + [
                f"/console/{site.hostile}", f"/console/{APP}/agents/triage", f"/console/{APP}/tools/confirm_identity",
                f"/console/{APP}/toolsets/crm", f"/console/{APP}/guardrails/no-swearing",
                f"/console/{APP}/versions/v1", f"/console/{APP}/deployments/web"]:
            phone.get(site.url + path)
            assert phone.find_element(By.TAG_NAME, "h1").text, path
            assert_fits(phone, path)
        phone.get(f"{site.url}/console/{APP}/playground")
        assert_fits(phone, "the playground's start")
        talk(phone, f"where is order AC-1001 {SCRIPT}")
        wait_for_url(phone, lambda url: "/playground/pg-" in url and bool(phone.find_elements(By.ID, "turn-1")))
        turn = phone.find_element(By.ID, "turn-1").text
        assert "Order AC-1001" in turn and SCRIPT in turn
        assert phone.find_elements(By.CSS_SELECTOR, "main script") == []
        assert_fits(phone, "a playground session")
