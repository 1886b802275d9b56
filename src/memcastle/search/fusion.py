"""Fusing the ranking legs and normalizing a pool: calibrated fusion (the default) or reciprocal rank fusion, min-max
relevance (docs/adr/0019-calibrated-fusion.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

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
    signals: dict[str, Any]  # the legs' scores (floats), and a contested fact's standing


def fuse(
    lexical: Sequence[ScoredDrawer],
    semantic: Sequence[ScoredDrawer],
    weights: FusionWeights,
    *,
    waiting: Callable[[str], bool] | None = None,
    exact: bool = False,
) -> list[Ranked]:
    """The legs fused by `weights.method`, best first, ties by drawer id. Each leg gives a drawer it found a share:

    - calibrated fusion (the default): weight × (the leg's score scaled between its best and its anchor,
      `_normalized`, at least 0) / Σ weights; a drawer a leg did not find, or ranks below its anchor, gets 0 from it
      (drawers that fuse to the same score are ordered by how far below the anchors they are, then by id). Unlike
      rank fusion it keeps how far apart the legs' scores are, so a strong match in one leg is not flattened to the
      rank of a weak one;
    - reciprocal rank fusion (`rrf`): weight / (k + rank), rank from 1.

    A drawer `waiting` for its vectors cannot be in the semantic leg, so it would lose to every drawer the embed job
    happened to reach first; instead its semantic share is taken to be its lexical one, as if the legs agreed, and
    the signals say so (`semantic_pending`). `exact`: the lexical leg found a drawer holding every term of the query
    (`_behind_the_waiting`)."""
    calibrated = weights.method != "rrf"
    total = (weights.lexical + weights.semantic) or 1.0

    def shares(candidates: Sequence[ScoredDrawer], weight: float) -> list[tuple[float, float]]:
        """Each candidate's share, and (calibrated) what its part under the anchor adds up to below it."""
        if calibrated:
            return [(weight * max(p, 0.0) / total, weight * min(p, 0.0) / total) for p in _normalized(candidates)]
        return [(weight / (weights.k + rank), 0.0) for rank in range(1, len(candidates) + 1)]

    signals: dict[str, dict[str, float]] = {}
    below: dict[str, float] = {}  # what the parts under the anchors add up to: orders the drawers fused to 0
    for leg, candidates, weight in (("lexical", lexical, weights.lexical), ("semantic", semantic, weights.semantic)):
        for candidate, (share, under) in zip(candidates, shares(candidates, weight), strict=True):
            entry = signals.setdefault(candidate.drawer_id, {"fusion": 0.0})
            entry[_signal(leg, candidate)] = candidate.signal
            entry["fusion"] += share
            below[candidate.drawer_id] = below.get(candidate.drawer_id, 0.0) + under
    if waiting is not None:
        for candidate, (share, _) in zip(lexical, shares(lexical, weights.semantic), strict=True):
            entry = signals[candidate.drawer_id]
            if "semantic" not in entry and waiting(candidate.drawer_id):
                entry["fusion"] += share
                entry["semantic_pending"] = 1.0
    held = _behind_the_waiting(signals) if exact else {}
    if calibrated:
        # The semantic part comes from float32 cosines: closer than that carries, two drawers are tied (and then
        # ordered by id, the same way on every backend). A drawer held behind the waiting ones stays behind them
        # where rounding ties it with the last of them, in the order its own score gave it.
        for entry in signals.values():
            entry["fusion"] = round(entry["fusion"], TIE_DIGITS)
        below.update({drawer_id: score - 1.0 for drawer_id, score in held.items()})
        below = {drawer_id: round(under, TIE_DIGITS) for drawer_id, under in below.items()}
    else:
        below = {drawer_id: held.get(drawer_id, 0.0) for drawer_id in signals}
    ranked = [Ranked(drawer_id, entry["fusion"], entry) for drawer_id, entry in signals.items()]
    ranked.sort(key=lambda r: (-r.base, r.drawer_id in held, -below[r.drawer_id], r.drawer_id))
    return ranked


# Calibrated fusion scales each leg between its best score and its `ANCHOR_RANK`-th best (or its last, when shorter):
# however deep a leg is fetched, the candidates it ranks highest fuse to the same scores, and the ones below the
# anchor add nothing from that leg (docs/adr/0024-one-pool-whatever-the-limit.md).
ANCHOR_RANK = 20
# A drawer found by meaning alone scores at most this share of the lowest drawer waiting for its vectors.
BACKLOG_SHARE = 0.999


def _normalized(candidates: Sequence[ScoredDrawer]) -> list[float]:
    """A leg's scores scaled between its best (1) and its `ANCHOR_RANK`-th best or last (0), unclipped: below the
    anchor they are negative (all equal: 1)."""
    if not candidates:
        return []
    ordered = sorted((c.signal for c in candidates), reverse=True)
    high, low = ordered[0], ordered[min(ANCHOR_RANK, len(ordered)) - 1]
    if high == low:
        return [1.0 if c.signal >= low else 0.0 for c in candidates]
    return [(c.signal - low) / (high - low) for c in candidates]


def _behind_the_waiting(signals: dict[str, dict[str, float]]) -> dict[str, float]:
    """During a backlog, when the lexical leg found an exact match (a drawer holding every term), the drawers only the
    semantic leg found (none of the query's words) come after every drawer the lexical leg found that is waiting for
    its vectors — the exact match's neighbours: the semantic leg compared them with what it could see, not with the
    waiting ones, which may well be nearer. A query with no exact match (a paraphrase) is left to the legs as they
    are: there the meaning-only drawers are often the answer.

    Their fused scores are scaled by one factor to just below the lowest waiting one (`BACKLOG_SHARE`), or to 0 when
    that one fused to 0 (then they fused to 0 too: the legs had nothing to tell them apart by), and they are marked
    `semantic_backlog`; the sort keeps them behind the waiting ones where rounding ties them, in their own order:
    returned are their scores before, by drawer. Without a waiting drawer nothing changes."""
    waiting = [e["fusion"] for e in signals.values() if "semantic_pending" in e]
    if not waiting:
        return {}
    floor = min(waiting)
    only_meaning = {drawer_id: e for drawer_id, e in signals.items() if "lexical" not in e}
    before = {drawer_id: e["fusion"] for drawer_id, e in only_meaning.items()}
    top = max(before.values(), default=0.0)
    for entry in only_meaning.values():
        entry["semantic_backlog"] = 1.0
        if top >= floor:
            entry["fusion"] = entry["fusion"] * BACKLOG_SHARE * floor / top if top > 0 else 0.0
    return before


def _signal(leg: str, candidate: ScoredDrawer) -> str:
    """The signal a leg's score is shown as: the lexical leg's is `neighbours` for a drawer that holds none of the
    query's words itself and was found by the words of the drawers beside it (ADR 0056). Such a drawer counts as
    found by meaning alone behind the drawers waiting for their vectors (`_behind_the_waiting`)."""
    return "neighbours" if leg == "lexical" and not candidate.own else leg


def pool_relevance(signals: Sequence[float]) -> list[float]:
    """Min-max normalize base signals within the pool to [0, 1]; all equal → 1.0."""
    if not signals:
        return []
    low, high = min(signals), max(signals)
    if high == low:
        return [1.0] * len(signals)
    return [(s - low) / (high - low) for s in signals]
