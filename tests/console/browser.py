"""Debian's headless Chromium, driven by Selenium through Debian's chromedriver: no browser is downloaded.

Every page a test opens is checked for what would show that content ran: a call of ``alert``/``confirm``/
``prompt`` (recorded by a hook installed before any page script), an open alert, and any error on the
browser's console (a CSP violation is one).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REQUIRED = os.environ.get("CONVENER_REQUIRE_BROWSER") == "1"
"""Set by .ci/run: there a missing browser fails the run rather than skipping its tests."""

HOOK = """
window.__dialogs = [];
for (const name of ["alert", "confirm", "prompt", "print"]) {
  window[name] = (...args) => { window.__dialogs.push([name, String(args[0])]); };
}
"""


def require_browser() -> None:
    if CHROMIUM.exists() and CHROMEDRIVER.exists() and shutil.which("chromedriver") is not None:
        return
    message = "needs Debian's chromium and chromium-driver: apt-get install -y chromium chromium-driver"
    if REQUIRED:
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def chromium(*, width: int = 1280, height: int = 900, javascript: bool = True) -> Iterator[Any]:
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--disable-extensions", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--metrics-recording-only",
                     f"--window-size={width},{height}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.set_page_load_timeout(30)
        if javascript:
            driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOOK})
        yield driver
    finally:
        driver.quit()


def assert_nothing_ran(driver: Any, page_status: int | None = None) -> None:
    """No dialog opened or was asked for, and the console logged no error, since the last check; but for
    the page's own status when the test expects one that Chromium logs (an error page's 400 or 403)."""
    from selenium.common.exceptions import NoAlertPresentException

    try:
        alert = driver.switch_to.alert
    except NoAlertPresentException:
        pass
    else:
        text = alert.text
        alert.dismiss()
        raise AssertionError(f"an alert opened: {text}")
    dialogs = driver.execute_script("return window.__dialogs || []")
    assert dialogs == [], dialogs
    expected = f"{driver.current_url} - Failed to load resource: the server responded with a status of {page_status} "
    errors = [entry for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "ERROR")
              and not (page_status and entry["source"] == "network" and entry["message"].startswith(expected))]
    assert errors == [], errors


def wait_for_url(driver: Any, predicate: Any, seconds: float = 15) -> None:
    """Until the page a click started loading is the current one (a click does not wait for navigation)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, seconds).until(lambda d: predicate(d.current_url)
                                         and d.execute_script("return document.readyState") == "complete")


def sign_in(driver: Any, base_url: str, key: str, start: str = "/console/", *, check: bool = True) -> None:
    """Sign in with ``key`` through the form ``start`` leads to (the sign-in page, or a page that asks for it);
    ``check`` then asserts nothing ran (a browser without JavaScript has nothing to ask)."""
    from selenium.webdriver.common.by import By

    driver.delete_all_cookies()
    driver.get(base_url + start)
    driver.find_element(By.ID, "key").send_keys(key)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for_url(driver, lambda url: "/console/sign-in" not in url)
    if check:
        assert_nothing_ran(driver)


def assert_fits(driver: Any, where: str) -> None:
    """The page is no wider than the window: nothing scrolls sideways on a phone."""
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, (where, overflow)


SHOTS = os.environ.get("CONVENER_SCREENSHOTS")
"""A folder: the browser tests then save the pages docs/console.md shows (``CONVENER_SCREENSHOTS=docs``)."""


def shoot(driver: Any, name: str) -> None:
    """Save the whole page as docs' ``console-<name>.png`` when screenshots were asked for."""
    if not SHOTS:
        return
    width = driver.execute_script("return window.innerWidth")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(driver.get_window_size()["width"], min(height + 140, 2400))
    Path(SHOTS).mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(Path(SHOTS) / f"console-{name}.png"))
    driver.set_window_size(driver.get_window_size()["width"], 900)
    assert width > 0
