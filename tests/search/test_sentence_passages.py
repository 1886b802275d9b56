"""A short drawer's sentences get vectors of their own beside the drawer's (ADR 0057): each carries its line's
speaker or the heading above it, the drawer's whole text is embedded first, and it scores by its best passage."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from clocks import DistinctClock

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.search.backfill import EmbeddingBackfill, model_key
from memcastle.search.embeddings import BuiltinProvider
from memcastle.search.passages import MIN_SENTENCE_CHARS, drawer_passages, sentence_passages
from memcastle.services import SearchRequest


@pytest.fixture
def unstarted(xdg_home: Any, palace_dir: Path) -> Iterator[Palace]:
    """A palace with the builtin model whose workers never start: the test runs the embed job itself."""
    settings = load_settings(flags={"palace": str(palace_dir), "embeddings.provider": "builtin"}, env={})
    palace = build(settings, now=DistinctClock())
    try:
        yield palace
    finally:
        palace.stop()


def test_each_sentence_of_a_turn_carries_its_speaker() -> None:
    turn = "Caroline: I went to a support group yesterday. It was so powerful! Wow."
    assert sentence_passages(turn) == [
        "Caroline: I went to a support group yesterday.",
        "Caroline: It was so powerful!",
    ]
    assert drawer_passages(turn) == [turn, *sentence_passages(turn)], "the whole drawer first"


def test_a_note_under_a_heading_carries_the_heading() -> None:
    note = "# Backups\nThe vault is copied every night. Copies older than a month go.\n\n# Keys\nRotated each Monday."
    assert sentence_passages(note) == [
        "Backups: The vault is copied every night.",
        "Backups: Copies older than a month go.",
        "Keys: Rotated each Monday.",
    ]


def test_no_sentences_for_one_sentence_a_long_drawer_or_when_switched_off() -> None:
    assert sentence_passages("User: restart the worker please") == []
    long = "A sentence that says something. " * 40
    assert (
        len(long) > 700 and sentence_passages(long) == [] and drawer_passages(long) == drawer_passages(long, 700, 0, 0)
    )
    assert sentence_passages("Two sentences here. And another one.", longest=0) == []
    assert all(len(s) >= MIN_SENTENCE_CHARS for s in sentence_passages("Ok. Sure. We ship on Friday. Then rest."))


def test_a_turn_is_found_by_meaning_through_the_sentence_that_answers(unstarted: Palace) -> None:
    chatty = (
        "Melanie: Oh that's lovely, thanks for asking! We had a busy week with the kids and the dog. "
        "By the way, I finally signed up for the pottery class downtown. Anyway, how was your trip?"
    )
    other = unstarted.services.drawers.save_note("Caroline: The weather was grey all week long.", wing="w")
    turn = unstarted.services.drawers.save_note(chatty, wing="w")
    sweep = EmbeddingBackfill(unstarted.store.embeddings, BuiltinProvider(), batch_size=8)
    result: Any = sweep.run(_Context())  # type: ignore[arg-type]
    assert result["embedded"] == 2 and result["passages"] == 1 + 1 + len(sentence_passages(chatty))
    hits = unstarted.services.search.search(
        SearchRequest(query="what class did Melanie sign up for", ranking="semantic")
    )
    assert hits.hits[0].drawer.id == turn.drawer.id and other.drawer.id != hits.hits[0].drawer.id
    vectors = unstarted.store.embeddings.count_missing_embeddings(model_key(BuiltinProvider()))
    assert vectors == 0


class _Context:
    """What the job engine hands a handler (its checkpoints kept nowhere)."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.job_id = "job-under-test"

    def checkpoint(
        self, state: Mapping[str, Any], current: int, total: int | None = None, message: str | None = None
    ) -> None:
        self.state = dict(state)
