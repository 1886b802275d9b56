"""The web page in a real browser (headless Chromium from the distribution, driven through chromedriver): type a
query and read the hits with their evidence, open a drawer and its history, watch a job's progress move, control a
job through a CSRF-protected form. Outside CI a machine without Chromium skips these with the reason; under
`CI=true` (where `.ci/run` installs it) a missing browser fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from waiting import CEILING, wait_until

pytestmark = pytest.mark.usefixtures("browser_available")


def visible_text(browser: Any, css: str) -> list[str]:
    """The text of what matches now; a row the live updates replaced meanwhile is read again."""
    for _ in range(20):
        try:
            return [element.text for element in browser.find_elements(By.CSS_SELECTOR, css)]
        except StaleElementReferenceException:
            continue
    return []


def attribute(browser: Any, css: str, name: str) -> str:
    for _ in range(20):
        try:
            found = browser.find_elements(By.CSS_SELECTOR, css)
            return (found[0].get_attribute(name) or "") if found else ""
        except StaleElementReferenceException:
            continue
    return ""


def test_a_query_typed_in_the_page_shows_hits_with_their_evidence(browser: Any, module_daemon: Any) -> None:
    with module_daemon.http() as http:
        http.post("/api/notes", json={"content": "The moat pump fails when the float valve sticks.", "wing": "web"})
        http.post("/api/notes", json={"content": "Bread is baked on Fridays.", "wing": "web"})
    browser.get(module_daemon.address + "/")
    box = browser.find_element(By.ID, "query")
    assert browser.switch_to.active_element == box, "the query box has the focus"
    box.send_keys("float valve", Keys.ENTER)
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#results .hit"), what="hits")
    hits = browser.find_elements(By.CSS_SELECTOR, "#results .hit")
    assert "float valve" in hits[0].find_element(By.CSS_SELECTOR, "pre.snippet").text
    assert [m.text for m in hits[0].find_elements(By.CSS_SELECTOR, "mark")] == ["float", "valve"]
    # A note has no document: it is titled by its text, and its place is said beside its origin.
    assert hits[0].find_element(By.CSS_SELECTOR, "h3").text == "The moat pump fails when the float valve sticks."
    assert "web/notes" in hits[0].find_element(By.CSS_SELECTOR, ".provenance").text
    assert "score" in hits[0].find_element(By.CSS_SELECTOR, ".signals").text
    kept = parse_qs(urlsplit(browser.current_url).query)
    assert kept["query"] == ["float valve"], "the search is a link one can keep"


def test_a_drawer_page_shows_the_verbatim_text_and_what_it_said_before(browser: Any, module_daemon: Any) -> None:
    with module_daemon.http() as http:
        first = http.post("/api/notes", json={"content": "The gate opens at six.", "wing": "web-history"}).json()
        second = http.post(
            f"/api/drawers/{first['drawer']['id']}/supersede",
            json={"content": "The gate opens at seven.", "reason": "winter hours"},
        ).json()
    browser.get(f"{module_daemon.address}/drawer/{second['id']}")
    assert "The gate opens at seven." in browser.find_element(By.CSS_SELECTOR, "pre.content").text
    versions = browser.find_elements(By.CSS_SELECTOR, ".timeline li")
    assert len(versions) == 2 and "winter hours" in versions[0].text
    older = versions[1]
    older.find_element(By.TAG_NAME, "summary").click()
    assert "The gate opens at six." in older.find_element(By.CSS_SELECTOR, "pre.content").text
    older.find_element(By.TAG_NAME, "a").click()
    wait_until(lambda: "closed" in " ".join(visible_text(browser, ".provenance")), what="the old version")
    # Every version, from the search page's time choice: the closed one is found and marked.
    browser.get(f"{module_daemon.address}/?q=gate+opens&wing=web-history&time=historical")
    found = visible_text(browser, "#results .hit")
    assert len(found) == 2 and sum("closed" in text for text in found) == 1


PAGES = 12_000


def test_the_jobs_page_follows_a_job_live_and_controls_it(browser: Any, module_daemon: Any, tmp_path: Path) -> None:
    folder = module_daemon.home.root / "web-mine"
    folder.mkdir()
    # Enough pages that the mine still runs when the page's pause button is pressed (2,000 were mined in about a
    # second once the copies were linked after the mine).
    for i in range(PAGES):
        (folder / f"page-{i}.md").write_text(f"# Page {i}\n\n" + f"The east tower ledger, entry {i}. " * 30 + "\n")
    browser.get(module_daemon.address + "/jobs")
    wait_until(lambda: "Live:" in " ".join(visible_text(browser, "#live")), what="the event stream")
    with module_daemon.http() as http:
        job = http.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": "web-mine"}).json()
    row = f"#job-{job['job']['id']}"
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, row), what="the new job's row, without a reload")
    seen: set[str] = set()

    def progress_moves() -> bool:
        seen.add(attribute(browser, f"{row} progress", "value"))
        return len(seen - {"0", ""}) >= 2 or "completed" in visible_text(browser, f"{row} .status")

    wait_until(progress_moves, what="the progress bar to move")

    def press(action: str) -> bool:
        try:
            browser.find_element(By.CSS_SELECTOR, f"{row} form[action$='/{action}'] button").click()
            return True
        except (StaleElementReferenceException, NoSuchElementException):
            return False

    wait_until(lambda: press("pause"), what="the pause button")
    wait_until(lambda: visible_text(browser, f"{row} .status") == ["paused"], what="the job to pause")
    wait_until(lambda: press("resume"), what="the resume button")
    wait_until(lambda: visible_text(browser, f"{row} .status") == ["completed"], what="the job to complete")
    assert f"created {PAGES}" in visible_text(browser, f"{row} .why")[0]


def test_a_job_row_ends_on_the_latest_state_when_an_event_arrives_during_its_fetch(
    browser: Any, module_daemon: Any
) -> None:
    """A row's fetch that read the job before its last change must not swallow the event of that change: the row is
    fetched once more after it (a slow fetch is simulated by holding every answer back for three seconds)."""
    folder = module_daemon.home.root / "web-race"
    folder.mkdir()
    for i in range(2000):
        (folder / f"page-{i}.md").write_text(f"# Page {i}\n\n" + f"The north gate log, line {i}. " * 30 + "\n")
    browser.get(module_daemon.address + "/jobs")
    wait_until(lambda: "Live:" in " ".join(visible_text(browser, "#live")), what="the event stream")
    with module_daemon.http() as http:
        job_id = http.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": "web-race"}).json()[
            "job"
        ]["id"]
        row = f"#job-{job_id}"
        wait_until(lambda: visible_text(browser, f"{row} .status") == ["running"], what="the running job's row")
        browser.execute_script(
            "var real = window.fetch;"
            "window.fetch = function (url, options) {"
            "  return real(url, options).then(function (answer) { return answer.text().then(function (body) {"
            "    return new Promise(function (done) { setTimeout(function () {"
            "      done(new Response(body, {status: answer.status})); }, 3000); }); }); }); };"
        )
        http.post(f"/api/jobs/{job_id}/pause", json={}).raise_for_status()
        wait_until(lambda: http.get(f"/api/jobs/{job_id}").json()["status"] == "paused", what="the pause")
        wait_until(lambda: visible_text(browser, f"{row} .status") == ["paused"], what="the row to show the pause")
        http.post(f"/api/jobs/{job_id}/cancel", json={}).raise_for_status()


def test_a_form_without_the_csrf_token_is_refused(module_daemon: Any) -> None:
    with httpx.Client(base_url=module_daemon.address, trust_env=False, timeout=CEILING) as http:
        page = http.get("/jobs")
        assert page.status_code == 200 and "memcastle_csrf" in page.headers.get("set-cookie", "")
        forged = http.post("/jobs/anything/cancel", data={"csrf": "guess"})
        assert forged.status_code == 403
        foreign = http.post("/jobs/anything/cancel", data={"csrf": "x"}, headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403 and foreign.json()["code"] == "forbidden_origin"


def test_a_drawer_is_forgotten_from_its_page_after_a_preview_and_a_confirmation(
    browser: Any, module_daemon: Any
) -> None:
    with module_daemon.http() as http:
        note = http.post("/api/notes", json={"content": "The vault combination is 31-7-44.", "wing": "web-forget"})
        drawer_id = note.json()["drawer"]["id"]
    browser.get(f"{module_daemon.address}/drawer/{drawer_id}")
    browser.find_element(By.LINK_TEXT, "Forget this drawer…").click()
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "form.confirm"), what="the preview")
    assert "31-7-44" in browser.find_element(By.CSS_SELECTOR, "ul.drawers").text, "the preview shows what goes"
    button = browser.find_element(By.CSS_SELECTOR, "form.confirm button")
    button.click()  # the confirmation box is required: nothing happens without it
    assert browser.find_elements(By.CSS_SELECTOR, "form.confirm")
    browser.find_element(By.CSS_SELECTOR, "form.confirm input[name=confirm]").click()
    browser.find_element(By.CSS_SELECTOR, "form.confirm button").click()
    wait_until(lambda: "Forgotten for good" in " ".join(visible_text(browser, "main")), what="the forget")
    with module_daemon.http() as http:
        assert http.get(f"/api/drawers/{drawer_id}").status_code == 404
        hits = http.post("/api/search", json={"query": "vault combination", "wing": "web-forget"}).json()["hits"]
        assert hits == []


def test_with_auth_on_the_page_asks_for_the_token_and_keeps_it_in_a_strict_cookie(
    browser: Any, daemon: Any, tmp_path: Path
) -> None:
    from memcastle.runtime.tokens import TokenStore

    palace = tmp_path / "secured-web"
    token = TokenStore(palace).create("browser")
    served = daemon(palace, extra_env={"MEMCASTLE_AUTH_ENABLED": "true"})
    browser.delete_all_cookies()
    browser.get(served.address + "/jobs")
    wait_until(lambda: "/login" in browser.current_url, what="the login form")
    field = browser.find_element(By.ID, "token")
    field.send_keys("not-the-token", Keys.ENTER)
    # The refusal is a page of its own: wait for it whole (its message and its field) before typing again; on a
    # loaded machine the message can be found while the field is not there yet.
    wait_until(
        lambda: browser.find_elements(By.CSS_SELECTOR, ".error") and browser.find_elements(By.ID, "token"),
        what="the refusal",
    )
    browser.find_element(By.ID, "token").send_keys(token, Keys.ENTER)
    wait_until(lambda: urlsplit(browser.current_url).path == "/jobs", what="back to the page asked for")
    cookie = browser.get_cookie("memcastle_token")
    assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert "Live:" in browser.find_element(By.ID, "live").text or browser.find_elements(By.ID, "job-rows")
    with httpx.Client(base_url=served.address, trust_env=False, timeout=CEILING) as http:
        assert http.get("/api/status").status_code == 401, "the API still needs the token"
        assert http.get("/", follow_redirects=False).status_code == 303
    browser.find_element(By.CSS_SELECTOR, "form.logout button").click()
    wait_until(lambda: "/login" in browser.current_url, what="logged out")
    browser.get(served.address + "/jobs")
    wait_until(lambda: "/login" in browser.current_url, what="the login form again")


def test_the_facts_page_shows_a_conflict_with_its_preferred_fact_and_preferences_their_layers(
    browser: Any, daemon: Any, tmp_path: Path
) -> None:
    palace = tmp_path / "preferring-web"
    palace.mkdir()
    (palace / "preferences.toml").write_text('[preferences.sources.notes]\nlevel = "high"\n')
    served = daemon(palace)
    with served.http() as http:
        for city in ("Berlin", "Paris"):
            made = http.post("/api/facts", json={"subject": "Ada", "predicate": "located_in", "object": city})
            assert made.status_code == 201, made.text
    browser.get(served.address + "/facts")
    (card,) = browser.find_elements(By.CSS_SELECTOR, "section.conflict")
    assert card.find_element(By.TAG_NAME, "h2").text == "Ada · located in: 2 sources disagree"
    claims = card.find_elements(By.CSS_SELECTOR, "ol.claims > li")
    assert len(claims) == 2 and "preferred" in claims[0].text and "Shown first:" in claims[0].text
    assert "preferred" not in claims[1].text
    claims[1].find_element(By.TAG_NAME, "a").click()
    wait_until(lambda: "History" in " ".join(visible_text(browser, "main")), what="the fact's page")
    standing = browser.find_element(By.CSS_SELECTOR, "ul.standing").text
    assert "another claim is preferred" in standing and "{" not in standing, "the lifecycle in words, not JSON"
    browser.get(served.address + "/preferences")
    text = browser.find_element(By.TAG_NAME, "main").text
    assert "notes" in text and "high" in text and "preferences.toml" in text
    assert "The files are valid and are what the daemon ranks with." in text
    (palace / "preferences.toml").write_text('[preferences.sources.notes]\nlevel = "loud"\n')
    browser.refresh()
    assert "no longer read" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text
    (palace / "preferences.toml").write_text('[preferences.sources.notes]\nlevel = "low"\n')
    browser.refresh()
    assert "restart it" in browser.find_element(By.CSS_SELECTOR, "[role=status]").text


def test_the_facts_page_opens_on_the_current_facts_when_none_is_in_conflict(daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        empty = http.get("/facts").text
        made = http.post("/api/facts", json={"subject": "Ada", "predicate": "works_on", "object": "Lantern"})
        assert made.status_code == 201, made.text
        opened = http.get("/facts").text
        asked = http.get("/facts", params={"state": "conflicting"}).text
    assert "the conflict shows here" in empty, "an empty palace says what the page is for"
    assert "No facts are in conflict: these are the current ones." in opened and "Lantern" in opened
    assert "Lantern" not in asked and "the conflict shows here" in asked, "asked for conflicts: conflicts"
