"""The agents pages in a real headless Chromium: from an app to its agents, an agent, one of its tools, the
app's versions and a version; hostile text in an agent stays text; the pages read without JavaScript at a
phone's width."""

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
