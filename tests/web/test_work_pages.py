"""Asking for work from the page, in a real browser: a mine launched from the form its connector's declared options
make (a refused one shown on the form, naming the field), an audit and a repair with what they found, and an
agent's diary."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from waiting import wait_until

pytestmark = pytest.mark.usefixtures("browser_available")


def text(browser: Any, css: str) -> str:
    for _ in range(20):
        try:
            return " ".join(e.text for e in browser.find_elements(By.CSS_SELECTOR, css))
        except StaleElementReferenceException:
            continue
    return ""


def test_a_mine_is_launched_from_its_connectors_form(browser: Any, daemon: Any) -> None:
    served = daemon()
    folder = served.home.root / "ledger"
    folder.mkdir()
    for i in range(5):
        (folder / f"entry-{i}.md").write_text(f"---\nauthor: Ada\n---\n# Entry {i}\n\nThe salt ledger, line {i}.\n")
    browser.get(served.address + "/mine")
    Select(browser.find_element(By.NAME, "connector")).select_by_visible_text("git")
    browser.find_element(By.CSS_SELECTOR, "form.job-filters button").click()
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "form.mine input[name^='option.']"),
               what="the git connector's options as fields")  # fmt: skip
    browser.get(served.address + "/mine?connector=notes")
    browser.find_element(By.NAME, "locator").send_keys(str(served.home.root / "nowhere-at-all"))
    browser.find_element(By.CSS_SELECTOR, "form.mine button").click()
    wait_until(lambda: text(browser, "[role=alert]"), what="the refusal on the form")
    assert "nowhere-at-all does not exist" in text(browser, "[role=alert]")
    assert browser.find_element(By.NAME, "locator").get_attribute("value").endswith("nowhere-at-all"), "kept"
    locator = browser.find_element(By.NAME, "locator")
    locator.clear()
    locator.send_keys(str(folder))
    browser.find_element(By.NAME, "wing").send_keys("ledger")
    browser.find_element(By.CSS_SELECTOR, "form.mine button").click()
    wait_until(lambda: "/jobs#job-" in browser.current_url, what="the jobs page, at the new job")
    row = "#" + browser.current_url.split("#", 1)[1]

    def finished() -> bool:
        if "completed" in text(browser, f"{row} .status"):
            return True
        browser.refresh()
        return False

    wait_until(finished, what="the mine to finish")
    assert "notes" in text(browser, f"{row} .what") and "wing ledger" in text(browser, f"{row} .what")


def test_an_audit_finds_a_broken_index_and_a_repair_fixes_it(browser: Any, daemon: Any, tmp_path: Any) -> None:
    served = daemon(tmp_path / "palace")
    with served.http() as http:
        for n in range(3):
            http.post("/api/notes", json={"content": f"Rope store {n} is by the quay.", "wing": "dock"})
    with sqlite3.connect(tmp_path / "palace" / "palace.sqlite3") as db:  # a full-text row lost, as a crash could
        db.execute("DELETE FROM drawer_fts WHERE rowid = (SELECT min(seq) FROM drawer)")
    browser.get(served.address + "/maintenance")
    browser.find_element(By.CSS_SELECTOR, "form[action='/maintenance/audit'] button").click()

    def reported(kind: str) -> str:
        browser.refresh()
        found = text(browser, "ol.activity > li:first-child")
        # The newest entry, of this kind (an audit's report says "repair:" too, of what a repair would do).
        return found if found.startswith(f"{kind} ") and "completed" in found else ""

    audit = wait_until(lambda: reported("audit"), what="the audit's report")
    assert ": 1" in audit, audit
    browser.find_element(By.CSS_SELECTOR, "form[action='/maintenance/repair'] button").click()
    repair = wait_until(lambda: reported("repair"), what="the repair's report")
    assert "Repaired: fts_missing 1" in repair and "nothing wrong" in repair, repair


def test_an_agents_diary_reads_newest_first(browser: Any, daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        for day in ("Monday: started the ledger.", "Tuesday: the ledger balances."):
            assert http.post("/api/diary", json={"agent": "claude", "content": day}).status_code == 201
    browser.get(served.address + "/diaries")
    browser.find_element(By.LINK_TEXT, "claude").click()
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "ol.hits .hit"), what="the entries")
    entries = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "ol.hits .hit pre")]
    assert entries == ["Tuesday: the ledger balances.", "Monday: started the ledger."]
