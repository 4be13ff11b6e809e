"""The analytics pages in a real headless Chromium: from the start page to the demo data agent, ask the demo
question, see the SQL, the rows and the chart's image load, click a follow-up suggestion, open the
conversation; a hostile question stays text; the pages fit a phone without JavaScript."""

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
from tests.console.test_browser import Site

pytestmark = pytest.mark.slow
LOCATION = "projects/convener/locations/global"
AGENT = f"{LOCATION}/dataAgents/demo-data"
QUESTION = "What is the average horsepower by origin?"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_browser()
    with demo_services("sqlite", tmp_path_factory.mktemp("analytics-browser")) as services:
        keys = ApiKeys(services.database)
        admin, chat_only = keys.create("users/alice")[1], keys.create("users/ben", ("chat",))[1]
        with serving(services) as url:
            yield Site(url, admin, chat_only)


def submit(driver: Any, button: Any) -> None:
    """Click a form's button and wait for the page it posts to (a click does not wait for navigation)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    old = driver.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(driver, 60).until(expected_conditions.staleness_of(old))
    wait_for_url(driver, lambda url: True)


def test_ask_the_demo_agent_see_the_chart_and_follow_up(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.admin)
    browser.find_element(By.CSS_SELECTOR, f'a[href="/console/{LOCATION}/dataAgents"]').click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{LOCATION}/dataAgents"))
    browser.find_element(By.CSS_SELECTOR, f'a[href="/console/{AGENT}"]').click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{AGENT}"))
    assert "Glossary" in browser.find_element(By.TAG_NAME, "main").text
    assert_nothing_ran(browser)
    browser.find_element(By.CSS_SELECTOR, f'a[href="/console/{AGENT}/ask"]').click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{AGENT}/ask"))

    browser.find_element(By.ID, "question").send_keys(QUESTION)
    submit(browser, browser.find_element(By.CSS_SELECTOR, "form.ask button[type=submit]"))
    browser.find_element(By.CSS_SELECTOR, "li.said-final")  # the answer is on the page
    assert browser.find_elements(By.CSS_SELECTOR, "ol.steps li.step")  # and the steps that led to it
    assert 'AVG("Horsepower")' in browser.find_element(By.CSS_SELECTOR, "li.said-sql pre").text
    rows = browser.find_elements(By.CSS_SELECTOR, "li.said-rows tbody tr")
    assert [row.find_element(By.TAG_NAME, "td").text for row in rows] == ["Europe", "Japan", "USA"]
    chart = browser.find_element(By.CSS_SELECTOR, "li.said-chart figure img")
    assert chart.get_attribute("src").startswith("data:image/svg+xml;base64,")
    assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", chart) > 0
    assert chart.size["width"] > 0
    assert_nothing_ran(browser)
    shoot(browser, "analytics-ask")

    suggestion = browser.find_element(By.CSS_SELECTOR, "li.said-followups form.suggestion button")
    follow_up = suggestion.text
    submit(browser, suggestion)
    browser.find_element(By.XPATH, f"//li[contains(@class, 'said-question')]/p[normalize-space()={follow_up!r}]")
    assert browser.find_elements(By.CSS_SELECTOR, "li.said-rows tbody tr")
    assert_nothing_ran(browser)

    browser.find_element(By.CSS_SELECTOR, f'a[href^="/console/{LOCATION}/conversations/"]').click()
    wait_for_url(browser, lambda url: f"/console/{LOCATION}/conversations/" in url)
    questions = [p.text for p in browser.find_elements(By.CSS_SELECTOR, "li.said-question p")]
    assert questions == [QUESTION, follow_up]
    images = browser.find_elements(By.CSS_SELECTOR, "li.said-chart img")
    assert images and all(browser.execute_script("return arguments[0].naturalWidth", img) > 0 for img in images)
    assert_nothing_ran(browser)


def test_a_hostile_question_is_text_and_nothing_runs(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.admin)
    browser.get(f"{site.url}/console/{AGENT}/ask")
    hostile = "<script>alert('pwned')</script><img src=x onerror=alert('img')>"
    browser.find_element(By.ID, "question").send_keys(hostile)
    submit(browser, browser.find_element(By.CSS_SELECTOR, "form.ask button[type=submit]"))
    assert browser.find_element(By.CSS_SELECTOR, "li.said-question p").text == hostile
    assert browser.find_elements(By.CSS_SELECTOR, "main script") == []
    assert browser.find_elements(By.CSS_SELECTOR, "main img[onerror]") == []
    assert_nothing_ran(browser)


def test_a_chat_only_key_is_denied(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.chat_only)
    browser.get(f"{site.url}/console/{AGENT}")
    text = browser.find_element(By.TAG_NAME, "main").text
    assert "PERMISSION_DENIED" in text and "Glossary" not in text
    assert_nothing_ran(browser, page_status=403)


def test_analytics_pages_read_without_javascript_and_fit_a_phone(site: Site) -> None:
    from selenium.webdriver.common.by import By

    with chromium(width=390, height=844, javascript=False) as phone:
        sign_in(phone, site.url, site.admin, "/console/sign-in", check=False)
        phone.get(f"{site.url}/console/{AGENT}/ask")
        phone.find_element(By.ID, "question").send_keys(QUESTION)
        submit(phone, phone.find_element(By.CSS_SELECTOR, "form.ask button[type=submit]"))
        for path in (None, f"/console/{LOCATION}/dataAgents", f"/console/{AGENT}", f"/console/{LOCATION}/sqlSources",
                     f"/console/{LOCATION}/sqlSources/demo", f"/console/{LOCATION}/conversations"):
            if path is not None:
                phone.get(site.url + path)
            assert phone.find_element(By.TAG_NAME, "h1").text
            assert_fits(phone, path)
