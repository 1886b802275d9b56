"""The original's dashboard pages this one lacked, in a real browser: the overview (health, counts by wing and by
connector, the embedding backlog, recent activity that follows the event stream), the miners with their triggers
(enable, disable, run), and the effective settings with their origins and secrets masked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from waiting import wait_until

pytestmark = pytest.mark.usefixtures("browser_available")


def text(browser: Any, css: str) -> str:
    for _ in range(20):
        try:
            return " ".join(e.text for e in browser.find_elements(By.CSS_SELECTOR, css))
        except StaleElementReferenceException:
            continue
    return ""


def notes(root: Path, count: int) -> Path:
    root.mkdir()
    for i in range(count):
        (root / f"note-{i}.md").write_text(f"# Note {i}\n\nThe harbour log, line {i}.\n")
    return root


def test_the_overview_counts_by_wing_and_connector_and_follows_activity(browser: Any, daemon: Any) -> None:
    served = daemon()
    folder = notes(served.home.root / "harbour", 6)
    with served.http() as http:
        job = http.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": "harbour"}).json()
        wait_until(lambda: http.get(f"/api/jobs/{job['job']['id']}").json()["status"] == "completed", what="a mine")
        http.post("/api/notes", json={"content": "Buoys are painted in May.", "wing": "harbour"})
    browser.get(served.address + "/overview")
    assert browser.title == "Overview · MemCastle"
    wings = text(browser, "#by-wing + table, section[aria-labelledby=by-wing] table")
    assert "harbour" in wings and "7" in wings, wings
    connectors = text(browser, "section[aria-labelledby=by-connector] table")
    assert "notes 1 6 6" in connectors, connectors
    assert "7 current" in text(browser, "section[aria-labelledby=palace]")
    assert "Off: search is lexical only." in text(browser, "section[aria-labelledby=vectors]")
    wait_until(lambda: "Live:" in text(browser, "#live"), what="the event stream")
    before = len(browser.find_elements(By.CSS_SELECTOR, "#activity-list li"))
    second = notes(served.home.root / "quay", 3)
    with served.http() as http:
        http.post("/api/mine", json={"connector": "notes", "locator": str(second)})
    wait_until(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#activity-list li")) > before, what="new activity")
    wait_until(lambda: "mine" in text(browser, "#activity-list li"), what="the mine among the new lines")


def test_miners_are_listed_with_their_triggers_and_enabled_disabled_and_run(browser: Any, daemon: Any) -> None:
    served = daemon()
    folder = notes(served.home.root / "logbook", 4)
    created = served.cli("miner", "add", "logbook", "notes", str(folder), "--every", "1d")
    assert created.returncode == 0, created.stderr
    browser.get(served.address + "/miners")
    row = "#miner-logbook"
    assert "schedule" in text(browser, row) and "every " in text(browser, row)
    assert text(browser, f"{row} .state") == "enabled"
    browser.find_element(By.CSS_SELECTOR, f"{row} form[action$='/disable'] button").click()
    wait_until(lambda: text(browser, f"{row} .state") == "disabled", what="the miner to be disabled")
    browser.find_element(By.CSS_SELECTOR, f"{row} form[action$='/enable'] button").click()
    wait_until(lambda: text(browser, f"{row} .state") == "enabled", what="the miner enabled again")
    browser.find_element(By.CSS_SELECTOR, f"{row} form[action$='/run'] button").click()

    def ran() -> bool:
        browser.refresh()
        return "completed" in text(browser, row) and "(request)" in text(browser, row)

    wait_until(ran, what="the run asked from the page to show as its last run")


def test_settings_show_origins_and_mask_secrets(browser: Any, daemon: Any) -> None:
    served = daemon(extra_env={"MEMCASTLE_STORE_URL": "", "MEMCASTLE_EXTRACTION_API_KEY": "sk-very-secret-1234"})
    browser.get(served.address + "/settings")
    table = text(browser, "table.settings")
    assert "web.enabled" in table and "sk-very-secret-1234" not in table
    rows = {
        row.find_element(By.TAG_NAME, "code").text: row.text
        for row in browser.find_elements(By.CSS_SELECTOR, "tbody tr")
    }
    key = rows["extraction.api_key"]
    assert "********" in key and "MEMCASTLE_EXTRACTION_API_KEY" in key


def test_the_graph_around_an_entity_is_drawn_and_listed(browser: Any, daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        ids = [http.post("/api/facts", json={"subject": "Atlas", "predicate": p, "object": o}).json()["id"]
               for p, o in (("located_in", "Madrid"), ("located_in", "Frankfurt"), ("uses", "Postgres"))]  # fmt: skip
        http.post(f"/api/facts/{ids[0]}/link", json={"to": ids[1], "kind": "contradicts", "reason": "one seat"})
    browser.get(served.address + "/graph?entity=Atlas")
    listed = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "ul.graph-facts li")]
    assert sorted(listed) == sorted(["Atlas · located in · Madrid (conflicting, level normal)",
                                     "Atlas · located in · Frankfurt (conflicting, level normal)",
                                     "Atlas · uses · Postgres (current, level normal)"]), listed  # fmt: skip
    drawn = wait_until(lambda: browser.find_element(By.ID, "graph").get_attribute("data-drawn"), what="the picture")
    assert int(drawn) == 7, "four entities and three facts"
    assert browser.execute_script("return window.memcastleGraph.edges('[kind = \"contradicts\"]').length") >= 1
    scripts = [s.get_attribute("src") for s in browser.find_elements(By.TAG_NAME, "script") if s.get_attribute("src")]
    assert all(src.startswith(served.address + "/static/") for src in scripts), "vendored, no CDN"
    browser.find_element(By.LINK_TEXT, "Postgres").click()
    wait_until(lambda: "entity=Postgres" in browser.current_url, what="the graph around Postgres")


def test_recent_activity_keeps_one_line_per_job_and_shows_notes_and_forgets(browser: Any, daemon: Any) -> None:
    served = daemon()
    browser.get(served.address + "/overview")
    wait_until(lambda: "Live:" in text(browser, "#live"), what="the event stream")
    folder = notes(served.home.root / "docks", 400)  # a mine that reports its progress many times
    with served.http() as http:
        job = http.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": "docks"}).json()
        job_id = job["job"]["id"]
        wait_until(lambda: http.get(f"/api/jobs/{job_id}").json()["status"] == "completed", what="the mine")
        http.post("/api/notes", json={"content": "The crane is serviced on Fridays.", "wing": "docks"})
        search = {"query": "crane", "wing": "docks"}
        forgot = http.post("/api/forget", json={"scope": "search", "search": search, "dry_run": False})
        assert forgot.status_code == 200, forgot.text
    line = f'#activity-list li[data-key="job-{job_id}"]'
    wait_until(lambda: text(browser, f"{line} .state") == "completed", what="the mine's line to say it completed")
    assert len(browser.find_elements(By.CSS_SELECTOR, line)) == 1, "one line for the job, however often it reported"
    wait_until(lambda: "filed a note in docks/" in text(browser, "#activity-list li"), what="the note's line")
    wait_until(lambda: "forgot 1 drawers, 1 versions" in text(browser, "#activity-list li"), what="the forget's line")
    assert "0 facts" not in text(browser, "#activity-list li"), "a forget says what it erased, not the zeros"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#activity-list li")) < 10
