"""The search form and its address agree, in a real browser: the URL an htmx search pushes carries only the fields
that were set, Back and Forward bring the query box back with the results it asked for, and "forget what matches…"
erases exactly what the search matched — every filter kept, not only the words and the wing."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from waiting import wait_until

pytestmark = pytest.mark.usefixtures("browser_available")


def hits(browser: Any) -> list[str]:
    """The hits shown now; read again when htmx swapped the results in while they were being read."""
    for _ in range(20):
        try:
            return [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#results .hit")]
        except StaleElementReferenceException:
            continue
    return []


def meta(browser: Any, css: str = "#results .meta") -> str:
    """The text of what matches now; read again when the page changed under the read."""
    for _ in range(20):
        try:
            return " ".join(e.text for e in browser.find_elements(By.CSS_SELECTOR, css))
        except StaleElementReferenceException:
            continue
    return ""


def search(browser: Any, words: str) -> None:
    box = browser.find_element(By.ID, "query")
    box.clear()
    box.send_keys(words, Keys.ENTER)
    wait_until(lambda: hits(browser) and all(words.split()[0] in h.lower() for h in hits(browser)), what=words)


def test_the_pushed_address_holds_only_what_was_set_and_back_restores_the_box(browser: Any, daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        for text in ("The moat valve sticks in winter.", "Bread is baked on Fridays in the tower."):
            http.post("/api/notes", json={"content": text, "wing": "form"})
    browser.get(served.address + "/")
    search(browser, "valve")
    assert parse_qsl(urlsplit(browser.current_url).query) == [("query", "valve")], browser.current_url
    search(browser, "bread")
    browser.back()
    wait_until(lambda: browser.find_element(By.ID, "query").get_attribute("value") == "valve", what="the old query")
    wait_until(lambda: hits(browser) and "valve" in hits(browser)[0], what="the old results")
    browser.forward()
    wait_until(lambda: browser.find_element(By.ID, "query").get_attribute("value") == "bread", what="the newer query")


def test_forget_what_matches_keeps_every_filter_of_the_search(browser: Any, daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        places = (("castle", "east", ["pump"]), ("castle", "east", []), ("castle", "west", ["pump"]),
                  ("village", "east", ["pump"]))  # fmt: skip
        for n, (wing, room, tags) in enumerate(places):
            note = {"content": f"The {wing} {room} pump leaks (note {n}).", "wing": wing, "room": room, "tags": tags}
            assert http.post("/api/notes", json=note).status_code == 201
    browser.get(served.address + "/?query=pump+leaks&wing=castle&room=east&tags=pump&ranking=lexical")
    wait_until(lambda: len(hits(browser)) == 1, what="the one drawer all filters match")
    browser.find_element(By.LINK_TEXT, "forget what matches…").click()
    wait_until(lambda: "/forget" in browser.current_url, what="the forget page")
    kept = dict(parse_qsl(urlsplit(browser.current_url).query))
    assert kept == {"query": "pump leaks", "wing": "castle", "room": "east", "tags": "pump", "ranking": "lexical"}
    counts = browser.find_element(By.CSS_SELECTOR, "dl.counts").text
    assert "drawers\n1" in counts, counts
    browser.find_element(By.CSS_SELECTOR, "input[name=confirm]").click()
    browser.find_element(By.CSS_SELECTOR, "form.confirm button").click()
    wait_until(lambda: "Forgotten for good" in meta(browser, "main"), what="the erase")
    with served.http() as http:
        left = http.post("/api/search", json={"query": "pump leaks", "ranking": "lexical", "limit": 20}).json()["hits"]
    assert len(left) == 3, "only the drawer the search matched is gone"


def test_hits_come_in_pages_of_the_size_the_form_asks(browser: Any, daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        for n in range(25):
            http.post("/api/notes", json={"content": f"Lantern {n:02d} hangs in the {n}th window.", "wing": "pages"})
    browser.get(served.address + "/?query=lantern+window&ranking=lexical")
    wait_until(lambda: len(hits(browser)) == 10, what="the first page")
    assert meta(browser).startswith("hits 1–10") and "25 drawers hold every word" in meta(browser)
    first = hits(browser)
    browser.find_element(By.CSS_SELECTOR, "nav.pager a[rel=next]").click()
    wait_until(lambda: "hits 11–20" in meta(browser), what="page 2")
    assert dict(parse_qsl(urlsplit(browser.current_url).query))["page"] == "2"
    assert not set(hits(browser)) & set(first), "a page holds the hits after the one before it"
    browser.find_element(By.CSS_SELECTOR, "nav.pager a[rel=next]").click()
    wait_until(lambda: len(hits(browser)) == 5, what="the last page")
    assert not browser.find_elements(By.CSS_SELECTOR, "nav.pager a[rel=next]"), "no page past the last hit"
    browser.get(served.address + "/?query=lantern+window&ranking=lexical&limit=20")
    wait_until(lambda: len(hits(browser)) == 20, what="twenty to a page")
    assert browser.find_element(By.CSS_SELECTOR, "select[name=limit]").get_attribute("value") == "20"
