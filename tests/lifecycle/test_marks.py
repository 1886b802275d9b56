"""Pin and hide (docs/lifecycle.md) through REST and the web page: a hidden drawer is left out of search, recall and
wake-up unless asked for, a pinned one always enters its wing's wake-up and recall, both say so when read, and both
survive an export and import."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient
from knowledge.support import wait_for_job

from memcastle.app import Palace


def ids(answer: dict[str, object], key: str = "hits") -> list[str]:
    items = answer.get(key) or []
    assert isinstance(items, list)
    return [item["drawer"]["id"] if "drawer" in item else item["id"] for item in items]


def test_hidden_and_pinned_drawers_through_rest(client: TestClient) -> None:
    def note(content: str, **more: object) -> str:
        answer = client.post("/api/notes", json={"content": content, "wing": "keep", **more})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["drawer"]["id"])

    secret = note("the cellar lantern hides the spare key")
    plain = note("the cellar lantern needs oil")
    rule = note("house rule: always lock the door", agent="agent-x")

    hidden = client.post(f"/api/drawers/{secret[:8]}/marks", json={"hidden": True})
    assert hidden.status_code == 200 and hidden.json()["hidden"] is True, hidden.text
    search = client.post("/api/search", json={"query": "cellar lantern", "wing": "keep", "limit": 1}).json()
    assert ids(search) == [plain], "left out inside the query, before the limit"
    both = client.post("/api/search", json={"query": "cellar lantern", "wing": "keep", "include_hidden": True}).json()
    assert set(ids(both)) == {secret, plain}
    assert client.get(f"/api/drawers/{secret}").json()["hidden"] is True, "read by its id, it says so"

    pinned = client.post(f"/api/drawers/{rule}/marks", json={"pinned": True})
    assert pinned.json()["pinned"] is True
    recall = client.post("/api/recall", json={"query": "lantern oil", "wing": "keep"}).json()
    assert ids(recall) == [plain] and ids(recall, "pinned") == [rule], "the wing's pinned drawer joins the recall"
    found = client.post("/api/recall", json={"query": "lock rule", "wing": "keep"}).json()
    assert ids(found) == [rule] and "pinned" not in found, "found by the search, it is a hit, not listed again"
    assert found["hits"][0]["drawer"]["pinned"] is True
    compact = client.post("/api/recall", json={"query": "lantern oil", "wing": "keep", "full": False}).json()
    assert compact["pinned"][0]["id"] == rule and compact["pinned"][0]["pinned"] is True

    wake = client.get("/api/wake-up", params={"agent": "someone-else", "wing": "keep"}).json()
    assert [d["id"] for d in wake["pinned"]] == [rule], "pinned drawers enter every agent's wake-up of the wing"
    client.post(f"/api/drawers/{rule}/marks", json={"hidden": True})
    wake = client.get("/api/wake-up", params={"agent": "someone-else", "wing": "keep"}).json()
    assert wake["pinned"] == [], "hidden wins over pinned"

    superseded = client.post(f"/api/drawers/{secret}/supersede", json={"content": "the spare key moved"})
    assert superseded.json()["hidden"] is True, "a new version keeps the marks"
    refused = client.post(f"/api/drawers/{plain}/marks", json={})
    assert refused.status_code == 400 and refused.json()["field"] == "pinned"
    unknown = client.post(f"/api/drawers/{plain}/marks", json={"pinned": True, "starred": True})
    assert unknown.status_code == 400 and "starred" in unknown.json()["field"]
    assert client.post("/api/drawers/nothing-here/marks", json={"pinned": True}).status_code == 404


def test_the_drawer_page_marks_and_says_so(client: TestClient) -> None:
    drawer = client.post("/api/notes", json={"content": "the attic window sticks"}).json()["drawer"]["id"]
    page = client.get(f"/drawer/{drawer}")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token is not None and "Hidden:" not in page.text
    marked = client.post(f"/drawer/{drawer}/marks", data={"csrf": token.group(1), "hidden": "true"},
                         follow_redirects=False)  # fmt: skip
    assert marked.status_code == 303, marked.text
    page = client.get(f"/drawer/{drawer}")
    assert "Hidden:" in page.text and "Show again" in page.text
    assert f"/drawer/{drawer}" not in client.get("/", params={"query": "attic window"}).text
    shown = client.get("/", params={"query": "attic window", "include_hidden": "true"})
    assert f"/drawer/{drawer}" in shown.text
    forged = client.post(f"/drawer/{drawer}/marks", data={"csrf": "forged", "pinned": "true"})
    assert forged.status_code == 403 and "CSRF" in forged.text


def test_marks_survive_export_and_import(palace: Palace, tmp_path: Path) -> None:
    from store.test_palace_copy import open_palace

    kept = palace.services.drawers.save_note("pinned across palaces", wing="move").drawer
    gone = palace.services.drawers.save_note("hidden across palaces", wing="move").drawer
    palace.services.drawers.mark(kept.id, pinned=True)
    palace.services.drawers.mark(gone.id, hidden=True)
    job = palace.services.archives.export(str(tmp_path / "marks.zip"))
    assert wait_for_job(palace, job.id, timeout=60).status.value == "completed"
    other = open_palace(tmp_path / "other")
    try:
        loaded = other.services.archives.import_archive(str(tmp_path / "marks.zip"))
        assert wait_for_job(other, loaded.id, timeout=60).status.value == "completed"
        assert other.store.drawers.get_drawer(kept.id).pinned and not other.store.drawers.get_drawer(kept.id).hidden
        assert other.store.drawers.get_drawer(gone.id).hidden
    finally:
        other.stop()
