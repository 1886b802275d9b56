"""A question's answer in the note written after it (ADR 0056): the hybrid ranking finds the answer by the words
beside it and says so on every interface; the lexical ranking answers the words a drawer holds itself."""

from __future__ import annotations

import sys
from pathlib import Path

from search.test_search_service import EMBEDDER, settle

from memcastle.app import build
from memcastle.cli.render import explain_signals
from memcastle.config import load_settings
from memcastle.services import SearchRequest
from memcastle.services.views import hit_view

CHAT = (
    "Ines: Which port did we settle on for the staging proxy after the clash?",
    "Sam: 9443, since 8443 is taken by the metrics exporter on that host.",
    "Ines: Good. The certificate renews itself through the ACME job on Sundays.",
)


def test_the_reply_to_a_question_is_found_beside_it_and_says_so(tmp_path: Path) -> None:
    flags = {
        "palace": str(tmp_path / "palace"),
        "embeddings.provider": "command",
        "embeddings.model": "bow",  # the bag-of-words test embedder: the reply shares no word with the query
        "embeddings.command": [sys.executable, EMBEDDER],
    }
    palace = build(load_settings(flags=flags, env={}))
    palace.start()
    try:
        question, reply, later = (palace.services.drawers.save_note(text, wing="ops").drawer for text in CHAT)
        settle(palace)

        def search(ranking: str) -> list[tuple[str, dict[str, object]]]:
            hits = palace.services.search.search(SearchRequest(query="staging proxy port", ranking=ranking)).hits
            return [(hit.drawer.id, dict(hit.signals)) for hit in hits]

        found = search("hybrid")
        assert [drawer for drawer, _ in found][:2] == [question.id, reply.id]
        beside = found[1][1]
        assert "neighbours" in beside and "lexical" not in beside, "the reply holds none of the words itself"
        assert later.id not in {drawer for drawer, _ in found}, "two notes away is not beside"
        assert [drawer for drawer, _ in search("lexical")] == [question.id], "the lexical ranking: its own words"

        hit = palace.services.search.search(SearchRequest(query="staging proxy port", ranking="hybrid")).hits[1]
        assert "neighbours" in hit_view(hit)["signals"], "the compact view an agent reads says so"
        assert "beside the words: neighbours" in explain_signals(hit.to_json()), "and the terminal"
    finally:
        palace.stop()
