"""axe-core (4.14.1, vendored in `tests/web/vendor/` with its MPL-2.0 licence; never fetched) on every page of a palace
with something on each, in light and in dark mode: no violation of any rule axe runs by default (WCAG 2 A and AA,
best practices)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

pytestmark = pytest.mark.usefixtures("browser_available")

AXE = (Path(__file__).parent / "vendor" / "axe-core-4.14.1.min.js").read_text(encoding="utf-8")


def violations(browser: Any) -> list[str]:
    browser.execute_script(AXE)
    found = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations.map(v =>"
        " v.id + ': ' + v.help + ' — ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '))))"
        ".catch(e => done(['axe failed: ' + e]));"
    )
    return list(found)


@pytest.fixture
def furnished(daemon: Any) -> Any:
    served = daemon()
    folder = served.home.root / "notes"
    folder.mkdir()
    for i in range(3):
        (folder / f"note-{i}.md").write_text(f"---\nowner: Ada\ntags: [ops]\n---\n# Note {i}\n\nThe quay pump {i}.\n")
    with served.http() as http:
        job = http.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": "quay"}).json()
        wait_until(lambda: http.get(f"/api/jobs/{job['job']['id']}").json()["status"] == "completed", what="a mine")
        for city in ("Madrid", "Lisbon"):
            http.post("/api/facts", json={"subject": "Atlas", "predicate": "located_in", "object": city})
        http.post("/api/diary", json={"agent": "claude", "content": "Checked the quay pumps."})
        drawer = http.post("/api/search", json={"query": "quay pump", "ranking": "lexical"}).json()["hits"][0]
        fact = http.get("/api/facts", params={"subject": "Atlas"}).json()["facts"][0]
    served.cli("miner", "add", "quay", "notes", str(folder))
    return served, drawer["drawer"]["id"], fact["id"]


def test_every_page_has_no_axe_violation_in_light_and_dark(browser: Any, furnished: Any) -> None:
    served, drawer, fact = furnished
    pages = ["/overview", "/", "/?query=quay+pump", f"/drawer/{drawer}", "/browse?wing=quay&room=notes", "/facts",
             f"/facts/{fact}", "/graph?entity=Atlas", "/preferences", "/jobs", "/mine?connector=notes", "/miners",
             "/diaries?agent=claude", "/maintenance", "/audit", "/settings", f"/forget?drawer={drawer}",
             "/no/such/page"]  # fmt: skip
    found: dict[str, list[str]] = {}
    try:
        for scheme in ("light", "dark"):
            browser.execute_cdp_cmd(
                "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
            )
            for path in pages:
                browser.get(served.address + path)
                problems = violations(browser)
                if problems:
                    found[f"{scheme} {path}"] = problems
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert not found, "\n".join(f"{page}: {p}" for page, problems in found.items() for p in problems)
