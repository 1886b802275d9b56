"""A correction sticks (docs/adr/0044-corrections-that-stick.md): a mined drawer an agent superseded stays superseded
when its source file is edited, appended to, renamed or deleted. The source's new text is filed beside the
correction as a closed candidate update, linked to it; the correction keeps the mined origin and its preference."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_pipeline import mine

from memcastle.app import Palace
from memcastle.services import SearchRequest
from memcastle.services.reader import Reader, reading_as

NOTE = "# Staging\n\nThe staging port is 8080.\n"
CORRECTED = "# Staging\n\nThe staging port is 8443 since the TLS move.\n"
PREFERENCES = '[preferences.sources.notes]\nlevel = "high"\n'


@pytest.fixture
def corrected(palace: Palace, tmp_path: Path) -> tuple[Palace, Path, str, str]:
    """A note mined, then corrected by an agent over MCP: (palace, notes folder, the mined id, the correction's)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "staging.md").write_text(NOTE, encoding="utf-8")
    mine(palace, "notes", folder, wing="harbor")
    [mined] = current(palace)
    with reading_as(Reader(interface="mcp", client="claude-code")):
        fixed = palace.services.drawers.supersede_drawer(mined.id, CORRECTED, reason="the port moved")
    return palace, folder, mined.id, fixed.id


def current(palace: Palace) -> list[Any]:
    return list(palace.services.drawers.list_drawers("harbor", None, 50, None).items)


def first_hit(palace: Palace, query: str) -> str:
    hits = palace.services.search.search(SearchRequest(query=query, ranking="lexical", wing="harbor")).hits
    return hits[0].drawer.id


def test_the_correction_keeps_the_origin_and_names_its_author(corrected: tuple[Palace, Path, str, str]) -> None:
    palace, _, mined_id, fixed_id = corrected
    mined = palace.services.drawers.get_drawer(mined_id)
    fixed = palace.services.drawers.get_drawer(fixed_id)
    assert fixed.source.origin is not None and mined.source.origin is not None
    assert fixed.source.origin.connector == "notes"
    assert fixed.source.origin.document == mined.source.origin.document
    assert fixed.source.origin.lines == mined.source.origin.lines
    assert fixed.source.agent == "claude-code"
    assert fixed.provenance.requested_by != "job" and fixed.provenance.reason == "the port moved"


EDITS: dict[str, Callable[[Path], None]] = {
    "edit": lambda f: (f / "staging.md").write_text(NOTE.replace("8080", "8081"), encoding="utf-8"),
    "append": lambda f: (f / "staging.md").write_text(NOTE + "\nAsk Ines for the VPN key.\n", encoding="utf-8"),
    "rename": lambda f: (f / "staging.md").rename(f / "staging-env.md"),
    "delete": lambda f: (f / "staging.md").unlink(),
}


@pytest.mark.parametrize("change", list(EDITS))
def test_a_change_at_the_source_keeps_the_correction_current(
    corrected: tuple[Palace, Path, str, str], change: str
) -> None:
    palace, folder, mined_id, fixed_id = corrected
    EDITS[change](folder)
    result = mine(palace, "notes", folder, wing="harbor")
    assert [d.id for d in current(palace)] == [fixed_id], f"{change}: only the correction is current ({result})"
    assert first_hit(palace, "staging port") == fixed_id
    history = palace.services.drawers.drawer_history(fixed_id)
    assert history[0].id == mined_id and history[1].id == fixed_id
    if change in ("edit", "append"):
        assert result["candidates"] == 1 and result["created"] == 0, result
        candidate = history[-1]
        assert candidate.id not in (mined_id, fixed_id) and not candidate.is_current
        assert candidate.superseded_by == fixed_id and "candidate update" in (candidate.closed_reason or "")
        assert ("8081" if change == "edit" else "VPN key") in candidate.content
        links = palace.store.near.drawer_links(fixed_id)
        assert [(link.from_id, link.verdict) for link in links] == [(candidate.id, "candidate")]
        # A re-mine of the unchanged file files nothing more.
        again = mine(palace, "notes", folder, wing="harbor")
        assert again["candidates"] == 0 and again["created"] == 0, again
    else:  # renamed: the same text under a new name is what was corrected; deleted: the source said nothing new
        assert result["created"] == 0 and result["candidates"] == 0, result
        assert len(history) == 2


def test_the_correction_keeps_the_preference_of_its_source(palace_dir: Path, tmp_path: Path) -> None:
    from clocks import DistinctClock

    from memcastle.app import build
    from memcastle.config import load_settings

    palace_dir.mkdir(parents=True)
    (palace_dir / "preferences.toml").write_text(PREFERENCES, encoding="utf-8")
    settings = load_settings(flags={"palace": str(palace_dir), "embeddings.provider": "none"}, env={}, config_file=None)
    palace = build(settings, now=DistinctClock())
    palace.start()
    try:
        folder = tmp_path / "notes"
        folder.mkdir()
        (folder / "staging.md").write_text(NOTE, encoding="utf-8")
        (folder / "copy.md").write_text("# Copy\n\nThe staging port is 8080, says the runbook.\n", encoding="utf-8")
        mine(palace, "notes", folder, wing="harbor")
        mined = next(
            d for d in current(palace) if "staging.md" in (d.source.origin.document if d.source.origin else "")
        )
        fixed = palace.services.drawers.supersede_drawer(mined.id, CORRECTED)
        hits = palace.services.search.search(SearchRequest(query="staging port", ranking="lexical")).hits
        levels = {h.drawer.id: h.signals["preference"]["level"] for h in hits}
        assert levels[fixed.id] == "high", levels
    finally:
        palace.stop()
