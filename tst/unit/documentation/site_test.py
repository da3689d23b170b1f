"""The documentation site, built by mkdocs as `make docs` builds it and opened in headless Chromium:
the home page, a guide, the API reference (generated from the docstrings) and the search box render,
and nothing is fetched from anywhere but the site itself. With AGENT_ENV_DOCS_SCREENSHOT set, the home
page is saved there (`make docs-screenshot` writes docs/site.png)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tst.support.browser import headless_chromium, wait_for

pytestmark = pytest.mark.needs("dev_installed", "chromium")
ROOT = Path(__file__).resolve().parents[3]
BUILT_S = 300


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site built strict into a temporary folder, served on a free loopback port."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BUILT_S,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


def fetched_elsewhere(browser: Any, site: str) -> list[str]:
    """Every resource the page loaded from anywhere but the site (fonts, scripts, styles, images)."""
    names = browser.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)")
    return [name for name in names if not name.startswith(site)]


def test_the_home_page_renders_its_title_and_navigation_with_nothing_fetched_elsewhere(
    site: str, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(site)
    wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "article h1"))

    assert browser.find_element(By.CSS_SELECTOR, "article h1").text == "agentenv-framework"
    nav = browser.find_element(By.CSS_SELECTOR, "nav.md-nav--primary").get_attribute("textContent")
    assert all(entry in nav for entry in ("Getting started", "Guides", "Reference", "Contributing"))
    assert fetched_elsewhere(browser, site) == []
    if shot := os.environ.get("AGENT_ENV_DOCS_SCREENSHOT"):
        assert browser.save_screenshot(str(Path(shot).resolve()))


def test_a_guide_renders_its_headings_and_highlighted_code(site: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{site}guides/bundles/")
    wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "article h1"))

    assert browser.find_element(By.CSS_SELECTOR, "article h1").text.startswith("Bundles")
    code = browser.find_elements(By.CSS_SELECTOR, "article .highlight code")
    assert any("class Dock(Env):" in block.text for block in code)
    assert browser.find_elements(By.CSS_SELECTOR, "article .highlight code span.k")  # highlighted keywords


def test_the_api_reference_shows_each_exported_name_with_its_docstring(site: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    import agent_env

    browser.get(f"{site}reference/api/core/")
    wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, ".doc-heading"))
    headings = {h.get_attribute("id") for h in browser.find_elements(By.CSS_SELECTOR, "h3.doc-heading")}
    page = browser.find_element(By.CSS_SELECTOR, "article").text

    assert {name for name in agent_env.__all__ if not any(h.endswith(f".{name}") for h in headings)} == set()
    assert agent_env.load_bundle.__doc__ is not None
    assert agent_env.load_bundle.__doc__.split("\n")[0].strip().replace("`", "") in page


def test_the_search_box_finds_the_pages_about_what_is_typed(site: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get(site)
    box = wait_for(browser, lambda b: b.find_element(By.CSS_SELECTOR, "input.md-search__input"))
    box.click()
    box.send_keys("warm pool")
    wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))

    results = browser.find_element(By.CSS_SELECTOR, ".md-search-result").text
    assert "Sandboxes" in results
