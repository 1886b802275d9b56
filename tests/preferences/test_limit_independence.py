"""The top k of a search is the same at any limit from k up to the largest allowed (200): the limit cuts the ranking,
it does not change it — lexical and hybrid, with a preference policy and without, across the fixed pools a large
limit ranks one after the other (docs/adr/0024-one-pool-whatever-the-limit.md).

A pool that grew with the limit (clamp(4·limit, 20, 200) with a policy, the limit itself without) ranked different
candidates at different limits: min-max relevance, fusion ranks and the preference's lift all moved with it."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcastle.services import SearchRequest
from memcastle.services.validation import MAX_LIMIT

if TYPE_CHECKING:
    from preferences.conftest import Bench

WORDS = [f"w{i:02d}" for i in range(40)]

# A command embeddings provider (the process edge): words hashed into 16 dimensions, so nearness follows shared words.
HASHED_WORDS = """
import json, sys, zlib
texts = json.load(sys.stdin)["texts"]
rows = []
for text in texts:
    row = [0.0] * 16
    for word in text.lower().split():
        row[zlib.crc32(word.encode()) % 16] += 1.0
    row[0] += 0.01
    rows.append(row)
json.dump({"embeddings": rows}, sys.stdout)
"""

POLICY = '[[preferences.sources.notes.criteria]]\npath = "team"\nequals = "a"\nlevel = "high"\n'


@pytest.fixture
def palaces(bench: Bench, tmp_path: Path, poll: Any) -> dict[str, Any]:
    """Two palaces of the same 240 notes of random words (one with a policy that favours team "a"), embedded."""
    script = tmp_path / "hashed_words.py"
    script.write_text(HASHED_WORDS)
    flags = {
        "embeddings.provider": "command",
        "embeddings.model": "hashed-16",
        "embeddings.command": [sys.executable, str(script)],
    }
    rng = random.Random(7)
    notes = {
        f"n{i:03d}.md": ({"team": rng.choice("ab")}, " ".join(rng.choices(WORDS, k=rng.randint(3, 12))))
        for i in range(240)
    }
    folder = bench.notes("random", notes)
    made = {}
    for name, preferences in (("plain", None), ("preferring", POLICY)):
        palace = bench.open(name, preferences=preferences, flags=flags)
        bench.mine(palace, "notes", folder, wing="w", timeout=60)
        poll(lambda p=palace: p.services.status.embedding_status().pending == 0, timeout=60, what="embeddings")
        made[name] = palace
    return made


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    ranking=st.sampled_from(["lexical", "hybrid"]),
    which=st.sampled_from(["plain", "preferring"]),
    k=st.one_of(st.integers(1, 20), st.integers(21, 150)),
    more=st.integers(0, MAX_LIMIT),
)
def test_the_top_k_is_the_same_at_any_limit_above_it(
    palaces: dict[str, Any], words: list[str], ranking: str, which: str, k: int, more: int
) -> None:
    limit = min(MAX_LIMIT, k + more)
    search = palaces[which].services.search.search

    def top(n: int) -> list[tuple[str, float]]:
        result = search(SearchRequest(query=" ".join(words), ranking=ranking, wing="w", limit=n))
        assert result.ranking == ranking
        return [(hit.drawer.id, hit.score) for hit in result.hits]

    short, long = top(k), top(limit)
    assert short == long[:k], f"limit {k} vs {limit}"
