"""The browser the web page's tests drive: headless Chromium from the distribution, through chromedriver. Outside CI a
machine without it skips them with the reason; under `CI=true` (where `.ci/run` installs it) a missing one fails."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from waiting import CEILING

# The pages a browser drives in the default run; every other browser test is marked `browser` and run by `.ci/run`
# (`pytest -m browser`), each module sharing one served palace.
SMOKE = {
    "test_a_query_typed_in_the_page_shows_hits_with_their_evidence",
    "test_a_drawer_page_shows_the_verbatim_text_and_what_it_said_before",
    "test_the_graph_around_an_entity_is_drawn_and_listed",
    "test_a_mine_is_launched_from_its_connectors_form",
    "test_no_page_scrolls_sideways_on_a_360_pixel_screen",
}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()) and item.name.split("[")[0] not in SMOKE:
            item.add_marker(pytest.mark.browser)


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
