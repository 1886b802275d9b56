"""Lexical scoring by passage: a long drawer ranks by its best passage, as it does by meaning.

BM25 over whole drawers favours a long drawer that mentions each word once in different places over one whose
passage is about the query, and its length normalization pushes a long drawer down wherever its words are. The
lexical leg's candidates are therefore scored again here: each drawer cut into passages exactly as the embed job cuts
it, words matched as the full-text index matches them (`snippets.TermMatcher`), and each passage scored by the
full-text index's own BM25 (k1 1.2, b 0.75, its IDF and its mean drawer length); a drawer's score is its best
passage's. A drawer of one passage keeps the index's score: the same formula over the same text, so every candidate
stays on one scale.
"""

from __future__ import annotations

import bisect
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from memcastle.model import ScoredDrawer
from memcastle.search.passages import passage_spans
from memcastle.search.snippets import TermMatcher

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6  # FTS5's floor for a term in half the corpus or more
FILL_SHARE = 0.999  # an any-term drawer scores at most this share of the worst drawer holding every term
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def idf(drawers: int, frequencies: Sequence[int]) -> list[float]:
    """FTS5's IDF per term, floored."""
    return [max(math.log((drawers - df + 0.5) / (df + 0.5)), IDF_FLOOR) for df in frequencies]


def best_passage_scores(
    contents: Mapping[str, str],
    matcher: TermMatcher,
    weights: Sequence[float],
    average_length: float,
    passages: tuple[int, int],
) -> dict[str, float]:
    """The BM25 of each drawer's best passage (`weights`: the matcher's terms' IDF, in its order; `average_length`:
    the full-text index's mean drawer length in tokens, as it normalizes every drawer's score by)."""
    scores: dict[str, float] = {}
    average = average_length or 1.0
    for drawer_id, content in contents.items():
        found = matcher.find(content)
        starts = [m[0] for m in found]
        best = 0.0
        for low, high, length in _passages(drawer_id, content, passages):
            counts = [0] * len(weights)
            for _, _, term in found[bisect.bisect_left(starts, low) : bisect.bisect_left(starts, high)]:
                counts[term] += 1
            norm = K1 * (1 - B + B * length / average)
            best = max(best, sum(w * tf * (K1 + 1) / (tf + norm) for w, tf in zip(weights, counts, strict=True) if tf))
        scores[drawer_id] = best
    return scores


_CUT: OrderedDict[tuple[str, tuple[int, int]], list[tuple[int, int, int]]] = OrderedDict()
_CUT_SIZE = 4096
_CUT_LOCK = threading.Lock()


def _passages(drawer_id: str, content: str, passages: tuple[int, int]) -> list[tuple[int, int, int]]:
    """A drawer's passages as (start, end, length in tokens), kept for the drawers scored last: a drawer's text never
    changes, and counting its tokens is most of the cost of scoring it."""
    key = (drawer_id, passages)
    with _CUT_LOCK:
        cut = _CUT.get(key)
        if cut is not None:
            _CUT.move_to_end(key)
            return cut
    tokens = [m.start() for m in _TOKEN.finditer(content)]
    cut = [
        (low, high, bisect.bisect_left(tokens, high) - bisect.bisect_left(tokens, low))
        for low, high in passage_spans(content, *passages)
        if not content[low:high].isspace()
    ]
    with _CUT_LOCK:
        _CUT[key] = cut
        while len(_CUT) > _CUT_SIZE:
            _CUT.popitem(last=False)
    return cut


def rescored(candidates: Sequence[ScoredDrawer], scores: Mapping[str, float]) -> list[ScoredDrawer]:
    """The candidates by their passage scores, best first, ties by id (a drawer without a score keeps its own)."""
    out = [ScoredDrawer(c.drawer_id, scores.get(c.drawer_id, c.signal), c.own) for c in candidates]
    out.sort(key=lambda c: (-c.signal, c.drawer_id))
    return out


def fill_below(first: list[ScoredDrawer], more: list[ScoredDrawer], limit: int) -> list[ScoredDrawer]:
    """`first` then those of `more` it lacks, up to `limit`, with their own BM25 scores capped just below the lowest
    of `first`: a drawer with some of the words never outranks one with all of them, and keeps the distance BM25 puts
    between them (so a weak match normalizes near zero, not near the drawers it follows)."""
    held = {c.drawer_id for c in first}
    fill = [c for c in more if c.drawer_id not in held][: max(0, limit - len(first))]
    if not first or not fill:
        return first + fill
    cap = FILL_SHARE * first[-1].signal
    return first + [ScoredDrawer(c.drawer_id, min(c.signal, cap), c.own) for c in fill]
