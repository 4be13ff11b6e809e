"""The evaluation pages in a real headless Chromium: from an app to its evaluations, a failing evaluation, its
result (expected against actual), the run that produced it and the comparison with a later run; hostile
text in an evaluation stays text; the pages read without JavaScript at a phone's width."""

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
from tests.console.test_evaluations_views import HOSTILE_EVALUATION, fix_and_rerun, hostile_evaluation

pytestmark = pytest.mark.slow


class Site:
    def __init__(self, url: str, admin: str, before: str, after: str, hostile_result: str) -> None:
        self.url = url
        self.admin = admin
        self.before = before
        self.after = after
        self.hostile_result = hostile_result


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_browser()
    with demo_services("sqlite", tmp_path_factory.mktemp("evaluations-browser")) as services:
        before, after = fix_and_rerun(services)
        hostile = hostile_evaluation(services)
        admin = ApiKeys(services.database).create("users/alice")[1]
        with serving(services) as url:
            yield Site(url, admin, before, after, hostile)


def test_walk_from_evaluations_to_a_failed_result_its_run_and_a_comparison(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    sign_in(browser, site.url, site.admin, f"/console/{APP}")
    browser.find_element(By.PARTIAL_LINK_TEXT, "Evaluations").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}/evaluations"))
    assert browser.find_elements(By.CSS_SELECTOR, "svg.trend rect")
    assert_nothing_ran(browser)
    shoot(browser, "evaluations")

    browser.find_element(By.LINK_TEXT, "Refund amount (fails)").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{APP}/evaluations/refund-amount-wrong"))
    assert "Expect_Refund_Quote" in browser.find_element(By.TAG_NAME, "main").text
    bars = browser.find_elements(By.CSS_SELECTOR, "svg.trend.big rect")
    assert bars and all(bar.size["height"] > 0 for bar in bars)
    assert_nothing_ran(browser)

    browser.find_element(By.CSS_SELECTOR, "ol.results-list a").click()
    wait_for_url(browser, lambda url: "/evaluations/refund-amount-wrong/results/" in url)
    failed = browser.find_element(By.CSS_SELECTOR, "tr.check.verdict-row-fail")
    assert "$43.00" in failed.find_element(By.CSS_SELECTOR, "td.expected").text
    assert failed.find_element(By.CSS_SELECTOR, "td.actual").text.strip()
    assert "Offline judge" in failed.text
    assert_nothing_ran(browser)
    shoot(browser, "evaluation-result")

    browser.find_element(By.XPATH, "//dt[normalize-space()='Run']/following-sibling::dd[1]/a").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{site.after}"))  # the newest result's run
    assert len(browser.find_elements(By.CSS_SELECTOR, "table.results tbody tr")) == 7
    assert_nothing_ran(browser)

    Select(browser.find_element(By.ID, "with")).select_by_value(site.before.rsplit("/", 1)[-1])
    browser.find_element(By.CSS_SELECTOR, "form.compare-form button[type=submit]").click()
    wait_for_url(browser, lambda url: "/compare?with=" in url)
    fixed = browser.find_elements(By.CSS_SELECTOR, "tr.delta-fixed")
    assert len(fixed) == 1 and "cancelled" in fixed[0].text
    assert_nothing_ran(browser)
    shoot(browser, "run-compare")


def test_run_the_regression_dataset_watch_it_finish_and_compare_it(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    sign_in(browser, site.url, site.admin, f"/console/{APP}/evaluations")
    Select(browser.find_element(By.ID, "target")).select_by_value("dataset:regression")
    browser.find_element(By.ID, "displayName").send_keys("From the browser")
    browser.find_element(By.CSS_SELECTOR, "form.run-form button[type=submit]").click()
    wait_for_url(browser, lambda url: f"/console/{APP}/evaluationRuns/" in url and "compare" not in url)
    run = browser.current_url.removeprefix(site.url + "/console/")
    # The page reloads itself every two seconds while the run is RUNNING (console.js).
    wait_for_url(browser, lambda url: bool(browser.find_elements(By.CSS_SELECTOR, "h1 .state-completed")), 60)
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("From the browser")
    assert len(browser.find_elements(By.CSS_SELECTOR, "table.results tbody tr")) == 7
    assert_nothing_ran(browser)
    shoot(browser, "run")

    Select(browser.find_element(By.ID, "with")).select_by_value(site.after.rsplit("/", 1)[-1])
    browser.find_element(By.CSS_SELECTOR, "form.compare-form button[type=submit]").click()
    wait_for_url(browser, lambda url: url.endswith(f"/console/{run}/compare?with={site.after.rsplit('/', 1)[-1]}"))
    assert browser.find_elements(By.CSS_SELECTOR, "table tbody tr")
    assert_nothing_ran(browser)


def test_hostile_text_in_an_evaluation_stays_text(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.by import By

    sign_in(browser, site.url, site.admin, f"/console/{APP}/evaluations/{HOSTILE_EVALUATION}")
    for path in (f"/console/{APP}/evaluations", f"/console/{APP}/evaluations/{HOSTILE_EVALUATION}",
                 f"/console/{site.hostile_result}"):
        browser.get(site.url + path)
        assert SCRIPT in browser.find_element(By.TAG_NAME, "main").text, path
        assert browser.find_elements(By.CSS_SELECTOR, "main script, main img, main b") == []
        assert_nothing_ran(browser)


def test_evaluation_pages_read_without_javascript_and_fit_a_phone(site: Site) -> None:
    from selenium.webdriver.common.by import By

    with chromium(width=390, height=844, javascript=False) as phone:
        sign_in(phone, site.url, site.admin, "/console/sign-in", check=False)
        phone.get(f"{site.url}/console/{APP}/evaluations/cancelled-order-status")
        result = phone.find_element(By.CSS_SELECTOR, "ol.results-list a").get_attribute("href")
        for path in (f"/console/{APP}/evaluations", f"/console/{APP}/evaluations/cancelled-order-status",
                     result.removeprefix(site.url), f"/console/{APP}/evaluationRuns", f"/console/{site.after}",
                     f"/console/{site.after}/compare?with={site.before.rsplit('/', 1)[-1]}"):
            phone.get(site.url + path)
            assert phone.find_element(By.TAG_NAME, "h1").text
            assert_fits(phone, path)
