"""A palace embedded by one builtin model, opened with the other configured: searches by meaning keep ranking by the
old model's vectors (the old model embedding the queries) while the embed job fills the new model's, switch in one
step once every drawer has them, and only then are the old vectors dropped. Nothing is mined again."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from clocks import DistinctClock

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.model.requests import SearchRequest
from memcastle.search.embeddings import BUILTIN_MODEL
from memcastle.search.multilingual import MULTILINGUAL_MODEL
from memcastle.search.quantized import QUANTIZED_MODEL

NOTES = [
    "The harbour office in Lisbon opens at eight and closes at noon on Saturdays.",
    "Our deploy pipeline runs the migrations before it swaps the containers.",
    "Ana prefers green tea; Bruno drinks his coffee black.",
    "The lighthouse keeper logs every ship that passes after dark.",
]


def palace_with(palace_dir: Path, model: str) -> Palace:
    settings = load_settings(
        flags={"palace": str(palace_dir), "embeddings.provider": "builtin", "embeddings.model": model},
        env={},
        config_file=None,
    )
    return build(settings, now=DistinctClock())


def embedded(palace: Palace, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    palace.services.jobs.request_embedding()
    while True:
        jobs = palace.services.jobs.list_jobs(None, "embed", 5)
        if not palace.services.status.embedding_status().pending and all(j.is_finished for j in jobs):
            return
        assert time.monotonic() < deadline, "the embed job did not finish"
        time.sleep(0.05)


def by_meaning(palace: Palace, text: str) -> list[str]:
    found = palace.services.search.search(SearchRequest(query=text, ranking="semantic", limit=2))
    return [hit.drawer.content for hit in found.hits]


def ranks_by(palace: Palace) -> str:
    index = palace.services.status.status().embeddings.index
    assert index is not None
    return str(index["ranks_by"])


@pytest.mark.parametrize(
    ("old", "new"),
    [(BUILTIN_MODEL, QUANTIZED_MODEL), (BUILTIN_MODEL, MULTILINGUAL_MODEL), (MULTILINGUAL_MODEL, BUILTIN_MODEL)],
)
def test_searches_rank_by_the_old_model_until_the_new_one_is_complete(
    xdg_home: Any, palace_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, old: str, new: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = palace_with(palace_dir, old)
    first.start()
    try:
        for note in NOTES:
            first.services.drawers.save_note(note, wing="w")
        embedded(first)
        assert first.store.embeddings.embedded_models() == {f"builtin:{old}": len(NOTES)}
    finally:
        first.stop()

    second = palace_with(palace_dir, new)
    try:
        # Not started: no embed job has run for the new model, and searches rank by the old one's vectors.
        assert ranks_by(second) == f"builtin:{old}"
        assert by_meaning(second, "which drinks do people like")[0].startswith("Ana prefers green tea")
        second.start()
        embedded(second)
        assert ranks_by(second) == f"builtin:{new}", "switched once complete"
        assert second.store.embeddings.embedded_models() == {f"builtin:{new}": len(NOTES)}, (
            "the old vectors are dropped after the switch"
        )
        assert by_meaning(second, "which drinks do people like")[0].startswith("Ana prefers green tea")
        assert not list((palace_dir / "vectors").glob(f"*{old}*")), "the old model's graph file is gone"
    finally:
        second.stop()
