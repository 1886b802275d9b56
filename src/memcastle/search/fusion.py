"""Fusing the ranking legs and normalizing a pool: calibrated fusion (the default) or reciprocal rank fusion, min-max
relevance (docs/adr/0019-calibrated-fusion.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memcastle.model import ScoredDrawer

FUSIONS = ("calibrated", "rrf")
TIE_DIGITS = 6  # decimals of a calibrated score that count (float32 cosines carry about seven significant digits)


@dataclass(frozen=True)
class FusionWeights:
    """How the legs are fused: `rrf` (reciprocal rank fusion with constant `k`) or `calibrated` (a weighted sum of
    each leg's min-max normalized scores), and the weight of each leg."""

    k: int = 60
    lexical: float = 0.6
    semantic: float = 0.4
    method: str = "calibrated"


@dataclass(frozen=True)
class Ranked:
    """One candidate of the final pool with every signal that ranked it."""

    drawer_id: str
    base: float
    signals: dict[str, float]


def fuse(
    lexical: Sequence[ScoredDrawer],
    semantic: Sequence[ScoredDrawer],
    weights: FusionWeights,
    *,
    waiting: Callable[[str], bool] | None = None,
) -> list[Ranked]:
    """The legs fused by `weights.method`, best first, ties by drawer id."""
    if weights.method == "rrf":
        return fuse_ranks(lexical, semantic, weights, waiting=waiting)
    return fuse_scores(lexical, semantic, weights, waiting=waiting)


def _normalized(candidates: Sequence[ScoredDrawer]) -> list[float]:
    """A leg's scores min-max normalized within the leg: its best 1, its worst 0 (all equal: 1)."""
    return pool_relevance([c.signal for c in candidates])


def fuse_scores(
    lexical: Sequence[ScoredDrawer],
    semantic: Sequence[ScoredDrawer],
    weights: FusionWeights,
    *,
    waiting: Callable[[str], bool] | None = None,
) -> list[Ranked]:
    """Calibrated fusion: Σ weight × (the leg's score min-max normalized within the leg) / Σ weights; a drawer a leg
    did not find gets 0 from it. Unlike rank fusion it keeps how far apart the legs' scores are, so a strong match
    in one leg is not flattened to the rank of a weak one. Ties by drawer id.

    A drawer `waiting` for its vectors cannot be in the semantic leg; its semantic part is taken to be its lexical
    part, as if the legs agreed (`semantic_pending`), so it is not pushed down by drawers embedded first."""
    total = (weights.lexical + weights.semantic) or 1.0
    signals: dict[str, dict[str, float]] = {}
    for leg, candidates, weight in (("lexical", lexical, weights.lexical), ("semantic", semantic, weights.semantic)):
        for candidate, part in zip(candidates, _normalized(candidates), strict=True):
            entry = signals.setdefault(candidate.drawer_id, {"fusion": 0.0})
            entry[leg] = candidate.signal
            entry["fusion"] += weight * part / total
    if waiting is not None:
        for candidate, part in zip(lexical, _normalized(lexical), strict=True):
            entry = signals[candidate.drawer_id]
            if "semantic" not in entry and waiting(candidate.drawer_id):
                entry["fusion"] += weights.semantic * part / total
                entry["semantic_pending"] = 1.0
    for entry in signals.values():
        # The semantic part comes from float32 cosines: closer than that carries, two drawers are tied (and then
        # ordered by id, the same way on every backend).
        entry["fusion"] = round(entry["fusion"], TIE_DIGITS)
    ranked = [Ranked(drawer_id, entry["fusion"], entry) for drawer_id, entry in signals.items()]
    ranked.sort(key=lambda r: (-r.base, r.drawer_id))
    return ranked


def fuse_ranks(
    lexical: Sequence[ScoredDrawer],
    semantic: Sequence[ScoredDrawer],
    weights: FusionWeights,
    *,
    waiting: Callable[[str], bool] | None = None,
) -> list[Ranked]:
    """Reciprocal rank fusion: Σ weight / (k + rank), rank from 1; ties by drawer id.

    `waiting(drawer_id)` says a drawer has no vectors yet. Such a drawer cannot be in the semantic leg, so it would
    lose to every drawer the embed job happened to reach first; instead its semantic rank is taken to be its lexical
    rank, as if the legs agreed, and the signals say so (`semantic_pending`)."""
    signals: dict[str, dict[str, float]] = {}
    for leg, candidates, weight in (("lexical", lexical, weights.lexical), ("semantic", semantic, weights.semantic)):
        for rank, candidate in enumerate(candidates, start=1):
            entry = signals.setdefault(candidate.drawer_id, {"fusion": 0.0})
            entry[leg] = candidate.signal
            entry["fusion"] += weight / (weights.k + rank)
    if waiting is not None:
        for rank, candidate in enumerate(lexical, start=1):
            entry = signals[candidate.drawer_id]
            if "semantic" not in entry and waiting(candidate.drawer_id):
                entry["fusion"] += weights.semantic / (weights.k + rank)
                entry["semantic_pending"] = 1.0
    ranked = [Ranked(drawer_id, entry["fusion"], entry) for drawer_id, entry in signals.items()]
    ranked.sort(key=lambda r: (-r.base, r.drawer_id))
    return ranked


def pool_relevance(signals: Sequence[float]) -> list[float]:
    """Min-max normalize base signals within the pool to [0, 1]; all equal → 1.0."""
    if not signals:
        return []
    low, high = min(signals), max(signals)
    if high == low:
        return [1.0] * len(signals)
    return [(s - low) / (high - low) for s in signals]
