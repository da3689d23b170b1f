"""Headless Chromium driven through chromedriver (Debian's chromium and chromium-driver, or the ones
AGENT_ENV_CHROMIUM and AGENT_ENV_CHROMEDRIVER name): the page tests' browser."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from tst.util.capabilities import chromium_paths

WAIT_S = 15.0


@contextlib.contextmanager
def headless_chromium(width: int = 1280, height: int = 1400) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager look for a browser online
    binary, driver_path = chromium_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(browser: Any, condition: Any) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, WAIT_S).until(condition)
