"""The web page in a real headless Chromium (Debian's chromium and chromedriver, through
selenium): open the printed URL, see the graph, answer a gate, see the status change, see a
write from the command line arrive without a reload; the page without its token is refused.

``LOOPX_WEB_SCREENSHOT=docs/web.png`` keeps the screenshot the answering test takes (the one
docs/web.md shows)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_loopx
from webkit import plan, serve

pytest.importorskip("starlette", reason="the [web] extra is not installed")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
# Read at import: the hermetic fixture clears LOOPX_* from each test's environment.
SCREENSHOT = os.environ.get("LOOPX_WEB_SCREENSHOT")
WAIT_S = 30  # a bound on waiting for the page, never a measure of it

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (CHROMIUM and DRIVER), reason=(
        "headless Chromium is not installed: apt-get install chromium chromium-driver "
        "(.ci/run installs them)")),
]


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1200", "--no-first-run", "--disable-extensions",
                 f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(str(DRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def _until(driver: Any, test: Any) -> Any:
    return WebDriverWait(driver, WAIT_S).until(lambda d: test(d))


def _node(driver: Any, todo: str) -> str:
    found = driver.find_elements(By.CSS_SELECTOR, f'svg.plan g.node[data-id="{todo}"]')
    return found[0].get_attribute("class") if found else ""


def test_answering_a_gate_in_the_browser_changes_the_status(repo: Path, browser: Any,
                                                            tmp_path: Path) -> None:
    plan(repo)
    with serve(repo) as page:
        browser.get(page.url)
        nodes = browser.find_elements(By.CSS_SELECTOR, "svg.plan g.node")
        assert len(nodes) == 4  # the graph: three todos and the gate
        assert _node(browser, "t-1") == "node waiting"
        # The hostile title is text on the page, not markup (no script ran, no element made).
        assert "<script>alert(1)</script>" in browser.find_element(By.ID, "plan").text
        assert browser.execute_script("return document.querySelectorAll('main script').length") == 0

        form = browser.find_element(By.CSS_SELECTOR, 'form[data-gate="q-1"]')
        form.find_element(By.NAME, "comment").send_keys("ship it")
        shot = tmp_path / "web.png"
        browser.save_screenshot(str(shot))  # the page as docs/web.md shows it
        if SCREENSHOT:
            shutil.copyfile(shot, SCREENSHOT)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        flash = _until(browser, lambda d: d.find_elements(By.ID, "flash"))
        assert "answered gate q-1: approve" in flash[0].text
        assert _node(browser, "t-1") == "node ready"
        assert "No gate waits on you." in browser.find_element(By.ID, "waiting").text
    status = run_loopx(repo, "status", "--format", "json", "--detail").json()
    assert isinstance(status, dict)
    assert "t-1" in status["frontier"]
    assert [g["decision"] for g in status["gates"] if g["id"] == "q-1"] == ["approve"]


def test_the_page_follows_the_ledger_without_a_reload(repo: Path, browser: Any) -> None:
    plan(repo)
    with serve(repo) as page:
        browser.get(page.url)
        browser.execute_script("window.notReloaded = true")
        assert run_loopx(repo, "todo", "add", "g-1", "announce it", "--id", "t-4",
                         "--after", "t-3").code == 0
        _until(browser, lambda d: _node(d, "t-4") == "node waiting")
        assert run_loopx(repo, "gate", "answer", "q-1", "--approve").code == 0
        _until(browser, lambda d: _node(d, "t-1") == "node ready")
        assert run_loopx(repo, "todo", "claim", "t-1").code == 0
        _until(browser, lambda d: _node(d, "t-1") == "node claimed")
        assert browser.execute_script("return window.notReloaded") is True


def test_the_page_without_its_token_is_refused(repo: Path, browser: Any) -> None:
    plan(repo)
    with serve(repo) as page:
        browser.get(page.base + "/")
        assert "403" in browser.find_element(By.TAG_NAME, "body").text
        assert not browser.find_elements(By.CSS_SELECTOR, "svg.plan")
