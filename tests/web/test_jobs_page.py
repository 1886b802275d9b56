"""Jobs a person can tell apart, in a real browser: what each reads (connector, locator, wing), when it started and
how long it took, filters by status and kind past the newest 50, an empty state that says what jobs are, and a
queued job's "why waiting" that follows the jobs ahead of it instead of freezing at the progress it first saw."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from waiting import wait_until

pytestmark = pytest.mark.usefixtures("browser_available")


def texts(browser: Any, css: str) -> list[str]:
    from selenium.common.exceptions import StaleElementReferenceException

    for _ in range(20):
        try:
            return [e.text for e in browser.find_elements(By.CSS_SELECTOR, css)]
        except StaleElementReferenceException:
            continue
    return []


def test_a_job_row_says_what_it_reads_when_and_for_how_long(browser: Any, daemon: Any) -> None:
    served = daemon()
    folder = served.home.root / "ledgers"
    folder.mkdir()
    for i in range(20):
        (folder / f"page-{i}.md").write_text(f"# Page {i}\n\nThe east tower ledger, entry {i}.\n")
    browser.get(served.address + "/jobs")
    with served.http() as http:
        job = http.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": "ledgers"}).json()
    row = f"#job-{job['job']['id']}"
    wait_until(lambda: texts(browser, f"{row} .status") == ["completed"], what="the job, live, to its end")
    assert not browser.find_elements(By.CSS_SELECTOR, "tr.empty"), "the empty state goes when a job arrives"
    what = texts(browser, f"{row} .what")[0]
    assert "notes" in what and str(folder) in what and "wing ledgers" in what
    when = texts(browser, f"{row} .when")[0]
    assert "started" in when and "UTC" in when and "took" in when and ".0000" not in when
    browser.get(served.address + "/jobs?kind=embed")
    assert "No embed jobs" in browser.find_element(By.CSS_SELECTOR, "tr.empty").text
    browser.get(served.address + "/jobs?kind=mine&status=completed")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#job-rows tr.status-completed")) == 1


def test_a_queued_jobs_reason_follows_the_job_ahead_of_it(browser: Any, daemon: Any) -> None:
    served = daemon(extra_env={"MEMCASTLE_JOBS_WORKERS": "1"})
    big, small = served.home.root / "big", served.home.root / "small"
    for folder, count in ((big, 3000), (small, 5)):
        folder.mkdir()
        for i in range(count):
            (folder / f"page-{i}.md").write_text(f"# Page {i}\n\n" + f"Entry {i} of the west ledger. " * 20 + "\n")
    browser.get(served.address + "/jobs")
    with served.http() as http:
        http.post("/api/mine", json={"connector": "notes", "locator": str(big)})
        wait_until(
            lambda: http.get("/api/jobs", params={"status": "running"}).json()["jobs"], what="the big mine to run"
        )
        queued = http.post("/api/mine", json={"connector": "notes", "locator": str(small)}).json()["job"]["id"]
    row = f"#job-{queued} .why"
    # "next; every worker is busy (mine (120/3000))", or "behind … queued job(s) …; running: mine (120/3000)"
    wait_until(lambda: "mine (" in " ".join(texts(browser, row)), what="the queued job's reason")
    seen = set(texts(browser, row))
    # The queued job itself sends no event while it waits: its reason moves because the big mine's events do.
    wait_until(lambda: bool(seen.add(" ".join(texts(browser, row))) or len(seen - {""}) >= 3), what="it to follow")


def test_older_jobs_page_on_past_the_newest_and_new_ones_stay_on_the_first_page(browser: Any, daemon: Any) -> None:
    served = daemon()
    ids = []
    with served.http() as http:
        for n in range(3):
            folder = served.home.root / f"shelf-{n}"
            folder.mkdir()
            (folder / "note.md").write_text(f"# Shelf {n}\n\nThe shelf of the north tower, number {n}.\n")
            ids.append(http.post("/api/mine", json={"connector": "notes", "locator": str(folder)}).json()["job"]["id"])
    browser.get(served.address + "/jobs?kind=mine&limit=2")
    first = [row.get_attribute("id") for row in browser.find_elements(By.CSS_SELECTOR, "#job-rows tr")]
    assert first == [f"job-{ids[2]}", f"job-{ids[1]}"], "the newest two, newest first"
    browser.find_element(By.CSS_SELECTOR, "nav.pager a[rel=next]").click()
    wait_until(lambda: "before=" in browser.current_url, what="the older page")
    older = [row.get_attribute("id") for row in browser.find_elements(By.CSS_SELECTOR, "#job-rows tr")]
    assert older == [f"job-{ids[0]}"], "the page before the cursor holds the oldest, and only it"
    assert "kind=mine" in browser.current_url and "limit=2" in browser.current_url, "the filters page on with it"
    with served.http() as http:
        folder = served.home.root / "shelf-new"
        folder.mkdir()
        (folder / "note.md").write_text("# A new shelf\n")
        fresh = http.post("/api/mine", json={"connector": "notes", "locator": str(folder)}).json()["job"]["id"]
        wait_until(lambda: http.get(f"/api/jobs/{fresh}").json()["status"] == "completed", what="the new mine")
    wait_until(lambda: texts(browser, f"#job-{ids[0]} .status") == ["completed"], what="the old row, live")
    assert not browser.find_elements(By.ID, f"job-{fresh}"), "a new job does not land on a page of older ones"
    browser.find_element(By.LINK_TEXT, "back to the newest").click()
    wait_until(lambda: bool(browser.find_elements(By.ID, f"job-{fresh}")), what="the newest page with the new job")


def test_a_status_filtered_page_takes_in_a_job_only_once_it_has_that_status(browser: Any, daemon: Any) -> None:
    served = daemon()
    folder = served.home.root / "annex"
    folder.mkdir()
    for i in range(10):
        (folder / f"note-{i}.md").write_text(f"# Annex {i}\n\nThe annex key hangs by door {i}.\n")
    browser.get(served.address + "/jobs?status=completed")
    with served.http() as http:
        done = http.post("/api/mine", json={"connector": "notes", "locator": str(folder)}).json()["job"]["id"]
        wait_until(lambda: http.get(f"/api/jobs/{done}").json()["status"] == "completed", what="the mine")
        slow = http.post("/api/verify", json={"batch": 1, "pace_ms": 2000}).json()["job"]["id"]  # ~20 s running
        wait_until(lambda: http.get(f"/api/jobs/{slow}").json()["status"] == "running", what="the verify to run")
        wait_until(lambda: bool(browser.find_elements(By.ID, f"job-{done}")), what="the completed mine on the page")
        assert http.get(f"/api/jobs/{slow}").json()["status"] == "running"
        assert not browser.find_elements(By.ID, f"job-{slow}"), "a running job is not shown under 'completed'"
        http.post(f"/api/jobs/{slow}/cancel", json={})
        wait_until(lambda: http.get(f"/api/jobs/{slow}").json()["status"] == "cancelled", what="the cancel")
    assert not browser.find_elements(By.ID, f"job-{slow}"), "nor once it is cancelled"
