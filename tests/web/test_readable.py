"""The page reads as text, not as data: a drawer's preference explanation and metadata snapshot as a person writes
them (never JSON-escaped), its tags, times without microseconds, every part of a long file named in Browse, a
manual note's preference said in words, and a browser that asks for a missing page or a malformed one gets the error
page with a title, not raw JSON — in a real browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from waiting import wait_until

pytestmark = pytest.mark.usefixtures("browser_available")

NOTE = """---
owner: Ada & Bob <ops@example.org>
status: it's "final"
reviewers: [Ada, Bob]
tags: [deploy, runbook]
---
# Deploy runbook

The blue pipeline deploys on Thursdays.
"""


@pytest.fixture
def served(daemon: Any, tmp_path: Path) -> Any:
    root = tmp_path
    palace = root / "palace"
    palace.mkdir()
    (palace / "preferences.toml").write_text(
        '[preferences.sources.notes]\nlevel = "high"\n'
        '[[preferences.sources.notes.criteria]]\npath = "status"\nequals = "draft"\nlevel = "low"\n'
    )
    notes = root / "notes"
    notes.mkdir()
    (notes / "runbook.md").write_text(NOTE)
    (notes / "long.md").write_text("# Long\n\n" + "\n\n".join(f"Paragraph {n}: " + "words " * 60 for n in range(60)))
    process = daemon(palace, extra_env={"MEMCASTLE_MINING_CHUNK_CHARS": "2000"})
    with process.http() as http:
        job = http.post("/api/mine", json={"connector": "notes", "locator": str(notes)}).json()["job"]
        wait_until(lambda: http.get(f"/api/jobs/{job['id']}").json()["status"] == "completed", what="the mine")
        http.post("/api/notes", json={"content": "The float valve sticks in winter.", "wing": "readable"})
    return process


def drawer_id(served: Any, words: str) -> str:
    with served.http() as http:
        hits = http.post("/api/search", json={"query": words, "ranking": "lexical"}).json()["hits"]
    return str(hits[0]["drawer"]["id"])


def test_the_explanation_and_the_metadata_read_as_text(browser: Any, served: Any) -> None:
    browser.get(f"{served.address}/drawer/{drawer_id(served, 'blue pipeline Thursdays')}")
    main = browser.find_element(By.TAG_NAME, "main").text
    assert "connector 'notes' level 'high'" in main and "\\u0027" not in main
    snapshot = {
        dt.text: dd.text
        for dt, dd in zip(
            browser.find_elements(By.CSS_SELECTOR, "dl.snapshot dt"),
            browser.find_elements(By.CSS_SELECTOR, "dl.snapshot dd"),
            strict=True,
        )
    }
    assert snapshot["owner"] == "Ada & Bob <ops@example.org>"
    assert snapshot["status"] == 'it\'s "final"' and snapshot["reviewers"] == "Ada, Bob"
    criteria = browser.find_element(By.CSS_SELECTOR, "table.criteria").text
    assert "status" in criteria and "draft" in criteria and "no match" in criteria
    assert [t.text for t in browser.find_elements(By.CSS_SELECTOR, "ul.tags li")] == ["deploy", "runbook"]
    provenance = browser.find_element(By.CSS_SELECTOR, ".provenance").text
    assert "UTC" in provenance and not any(part.count(".") and part[-7:].isdigit() for part in provenance.split())
    assert ".000000" not in main


def test_browse_names_every_part_of_a_long_file(browser: Any, served: Any) -> None:
    browser.get(f"{served.address}/browse?wing=notes&room=notes")
    labels = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "ul.drawers li a")]
    parts = [label for label in labels if label.startswith("long.md")]
    assert len(parts) > 2 and any("part 2" in label for label in parts), labels
    assert all(label for label in labels), "no drawer without a name"


def test_a_manual_note_says_its_preference_in_words(browser: Any, served: Any) -> None:
    browser.get(f"{served.address}/?query=float+valve+winter&wing=readable")
    preference = wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "#results .preference"), what="a hit")
    assert "None" not in preference[0].text and "a manual write" in preference[0].text


def test_a_missing_or_malformed_page_is_the_error_page_to_a_browser_and_json_to_a_client(
    browser: Any, served: Any
) -> None:
    browser.get(f"{served.address}/no/such/page")
    assert browser.title == "Not found · MemCastle"
    assert "/no/such/page" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text
    browser.get(f"{served.address}/?query=valve&limit=abc")
    assert browser.title == "Invalid request · MemCastle"
    assert "limit" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text
    with httpx.Client(base_url=served.address, trust_env=False) as http:
        assert http.get("/no/such/page").json()["code"] == "not_found", "a client without Accept: text/html"
        api = http.get("/api/nothing", headers={"Accept": "text/html"})
        assert api.status_code == 404 and api.json()["code"] == "not_found", "the API answers JSON to everyone"
        icon = browser.find_element(By.CSS_SELECTOR, "link[rel=icon]").get_attribute("href")
        assert icon and http.get(icon).status_code == 200, "no favicon 404 on a first visit"


def test_times_on_the_page_never_carry_microseconds() -> None:
    from memcastle.web.pages import readable, when

    assert when("2026-03-05T10:00:00.123456Z") == "2026-03-05 10:00 UTC"
    assert when("2026-03-05T10:00:00.123456Z", "day") == "2026-03-05" and when(None) == "—"
    assert readable({"a": [1, "x"], "b": None, "c": True}) == "a: 1, x; b: —; c: yes"


def test_the_page_source_holds_no_escaped_json(served: Any, tmp_path: Path) -> None:
    with httpx.Client(base_url=served.address, trust_env=False) as http:
        html = http.get(f"/drawer/{drawer_id(served, 'blue pipeline Thursdays')}").text
    assert "\\u0027" not in html and "&#34;owner&#34;" not in html and '"owner":' not in html


def test_a_conflict_is_one_card_and_a_facts_links_are_sentences(browser: Any, daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        made = {}
        for city in ("Madrid", "Frankfurt", "Dublin"):
            answer = http.post("/api/facts", json={"subject": "Atlas", "predicate": "located_in", "object": city})
            assert answer.status_code == 201, answer.text
            made[city] = answer.json()["id"]
        link = {"to": made["Dublin"], "kind": "contradicts", "reason": "one headquarters"}
        assert http.post(f"/api/facts/{made['Madrid']}/link", json=link).status_code in (200, 201)
    browser.get(served.address + "/facts")
    cards = browser.find_elements(By.CSS_SELECTOR, "section.conflict")
    assert len(cards) == 1, [c.text for c in cards]
    assert cards[0].find_element(By.TAG_NAME, "h2").text == "Atlas · located in: 3 sources disagree"
    claims = [c.text for c in cards[0].find_elements(By.CSS_SELECTOR, "ol.claims > li")]
    assert "preferred" in claims[0] and "Shown first:" in claims[0]
    assert sorted(c.split("\n")[0].split()[0] for c in claims) == ["Dublin", "Frankfurt", "Madrid"]
    assert all("stated explicitly" in c and "level" in c for c in claims)
    browser.get(f"{served.address}/facts/{made['Madrid']}")
    standing = browser.find_element(By.CSS_SELECTOR, "ul.standing").text
    assert "This fact contradicts Atlas · located in · Dublin" in standing and "one headquarters" in standing
    browser.get(f"{served.address}/facts/{made['Dublin']}")
    standing = browser.find_element(By.CSS_SELECTOR, "ul.standing").text
    assert "Atlas · located in · Madrid contradicts this fact" in standing


def test_no_page_scrolls_sideways_on_a_360_pixel_screen(browser: Any, served: Any) -> None:
    with served.http() as http:
        http.post("/api/facts", json={"subject": "Atlas", "predicate": "located_in", "object": "Madrid"})
        http.post("/api/facts", json={"subject": "Atlas", "predicate": "located_in", "object": "Frankfurt"})
    drawer = drawer_id(served, "blue pipeline Thursdays")
    pages = ["/", "/?query=pipeline", f"/drawer/{drawer}", "/browse?wing=notes&room=notes", "/jobs", "/facts",
             "/preferences", "/audit", f"/forget?drawer={drawer}", "/no/such/page", "/overview", "/miners",
             "/settings", "/mine?connector=notes", "/maintenance", "/diaries", "/graph?entity=Atlas"]  # fmt: skip
    size = browser.get_window_size()
    browser.set_window_size(360, 800)
    try:
        for path in pages:
            browser.get(served.address + path)
            wide = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
            past = browser.execute_script(
                "return Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right"
                " > window.innerWidth + 1 || e.scrollWidth > window.innerWidth).map(e => e.tagName + '.' + e.className"
                " + ':' + e.scrollWidth).slice(0, 8)"
            )
            assert wide[0] <= wide[1], f"{path} is {wide[0]} px wide on a {wide[1]} px screen: {past}"
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_a_drawer_and_every_part_of_a_file_are_titled_by_their_document(browser: Any, served: Any) -> None:
    browser.get(f"{served.address}/drawer/{drawer_id(served, 'blue pipeline Thursdays')}")
    assert "runbook.md" in browser.title and "runbook.md" in browser.find_element(By.TAG_NAME, "h1").text
    main = browser.find_element(By.TAG_NAME, "main").text
    assert main.index("Origin") < main.index("Verbatim"), "where it comes from, before the whole text"
    browser.get(f"{served.address}/?query=Paragraph+words&ranking=lexical&limit=5")
    titles = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#results .hit h3")]
    assert len(titles) == 5 and all(title.startswith("long.md") for title in titles), titles
    assert len(set(titles)) == 5, "each part says which lines of the file it holds"


# Each word of the headers and statuses, as the browser laid it out: a word on more than one line was broken.
BROKEN_WORDS = """
const broken = [];
for (const cell of document.querySelectorAll('th, .status')) {
  const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    for (const word of node.textContent.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      const lines = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
      if (lines.size > 1) broken.push(word[0]);
    }
  }
}
return broken;
"""


def test_no_header_or_status_breaks_inside_a_word(browser: Any, served: Any) -> None:
    drawer = drawer_id(served, "blue pipeline Thursdays")
    pages = ["/jobs", f"/drawer/{drawer}", "/preferences", "/overview", "/miners", "/facts", "/maintenance"]
    size = browser.get_window_size()
    try:
        for width in (1280, 390):
            browser.set_window_size(width, 900)
            for path in pages:
                browser.get(served.address + path)
                assert browser.execute_script(BROKEN_WORDS) == [], f"{path} at {width} px"
    finally:
        browser.set_window_size(size["width"], size["height"])


def test_an_empty_palace_says_what_its_pages_are_for(browser: Any, daemon: Any) -> None:
    served = daemon()
    for path, words in (("/browse", "No wings yet"), ("/overview", "No wings yet"), ("/miners", "No miners yet"),
                        ("/diaries", "No agent has written a diary yet"), ("/facts", "the conflict shows here"),
                        ("/maintenance", "No audit has run yet")):  # fmt: skip
        browser.get(served.address + path)
        assert words in browser.find_element(By.TAG_NAME, "main").text, path


def test_graph_expansion_brings_drawers_through_a_specific_entity_not_a_generic_one(browser: Any, daemon: Any) -> None:
    served = daemon()
    with served.http() as http:

        def note(text: str, *entities: str) -> str:
            made = http.post("/api/notes", json={"content": text, "wing": "expand"}).json()["drawer"]["id"]
            for entity in entities:
                assert http.post(f"/api/drawers/{made}/mentions", json={"entity": entity}).status_code in (200, 201)
            return made

        note("The lighthouse lamp was replaced in March.", "Atlas", "Files")
        note("Atlas keeps its spare bulbs in the north shed.", "Atlas")
        for n in range(30):  # an entity all over the palace names no topic
            note(f"Inventory sheet {n} lists rope and tar.", "Files")
    browser.get(served.address + "/?query=lighthouse+lamp&wing=expand&expand=true&ranking=lexical")
    related = wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "ol.hits.related .hit"), what="related hits")
    texts = [r.text for r in related]
    assert len(texts) == 1 and "spare bulbs" in texts[0] and "via Atlas" in texts[0], texts
    assert not any("Inventory sheet" in t for t in texts), "nothing came through the generic entity"
