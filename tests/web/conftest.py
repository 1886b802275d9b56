"""The browser the web page's tests drive: headless Chromium from the distribution, through chromedriver. Outside CI a
machine without it skips them with the reason; under `CI=true` (where `.ci/run` installs it) a missing one fails."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from waiting import CEILING

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="session")
def browser_available() -> None:
    if CHROMIUM and DRIVER:
        return
    if os.environ.get("CI") == "true":
        pytest.fail("the web page's tests need chromium and chromedriver (apt-get install chromium chromium-driver)")
    pytest.skip("no chromium + chromedriver on this machine (apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def browser(browser_available: None) -> Iterator[Any]:
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1440,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=DRIVER))
    driver.set_page_load_timeout(CEILING)
    # A command chromedriver never answers fails after the ceiling instead of holding the run until pytest's timeout.
    driver.command_executor.client_config.timeout = CEILING
    yield driver
    driver.quit()
