"""The second stage: the top of the fused pool re-scored by reading the query and each candidate's text together
(docs/adr/0047-second-stage.md).

No cross-encoder ships inside a package from PyPI (the survey is in the ADR), so the stage scores what the two
legs cannot see from their single numbers: how many of the query's words a candidate holds (BM25 sums rare words;
a short passage that holds every word of the question beats one that repeats the rarest), and how close together
it holds them. For a file, half the bound reads its path (the query's words in it: the module a behaviour names),
and a test or a doc file gives up half when the query asks for neither, so the code that implements a behaviour
comes before what tests and describes it.

The added score is bounded (`weight`, on top of the fused relevance normalized over the re-scored candidates to
[0, 1]), so the stage reorders the candidates the fusion put near each other and cannot lift one from the bottom
of the pool over the clear winner; the preference adjustment and freshness bound what it produces, exactly as they
bound the fusion's relevance (ADR 048 C9). The candidates below `depth` keep the fusion's order, below every
re-scored one."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memcastle.search.fusion import Ranked, pool_relevance
from memcastle.search.snippets import TermMatcher

DEPTH = 40  # candidates re-scored by default: the union of both legs' top 20 holds the evidence (bench/RESULTS.md)
WEIGHT = 0.3  # the most the stage adds to a candidate's fused relevance (which spans [0, 1] among the re-scored)
PROXIMITY_SHARE = 0.3  # of the stage's score: how close the words stand; the rest is how many of them are there
PATH_SHARE = 0.5  # of the stage's bound, for a file: the query's words in its path (the module named by a behaviour)
SUPPORT_SHARE = 0.5  # of the stage's bound, taken from a test or a doc file when the query asks for neither
# `auto` leaves a pool alone when its candidates are short drawers — conversation turns, one-line notes — where the
# stage did not help (LoCoMo's turns did not move), and re-scores code, documents and history, where it did (ADR 0054).
CONVERSATIONAL_CHARS = 400  # the median candidate under this many characters makes a pool conversational
_WORDS = re.compile(r"\w+")
_SEPARATORS = re.compile(r"[/\\._\-]+")
# A path segment that makes a file a test or documentation rather than the code that implements a behaviour.
_SUPPORT = re.compile(r"(?:^|/)(?:tests?|testing|docs?|documentation|examples?)(?:/|$)|(?:^|/)test_[^/]*$|"
                      r"_tests?\.[a-z]+$|\.(?:md|rst|txt|adoc)$", re.IGNORECASE)  # fmt: skip
_ASKS_SUPPORT = re.compile(r"\b(?:tests?|testing|tested|docs?|documentation|documented|readme|examples?)\b", re.I)


@dataclass(frozen=True)
class StagedText:
    """What the stage reads of a candidate: its text, and for a file its path (relative to what was mined)."""

    text: str
    path: str | None = None


@dataclass(frozen=True)
class SecondStage:
    """How the stage runs: `mode` off (the fusion's order), on, or auto (on for queries of at least two words, where
    which words a candidate holds can differ); `depth` candidates re-scored; `weight` its bound."""

    mode: str = "off"
    depth: int = DEPTH
    weight: float = WEIGHT

    def applies(self, query_text: str, asked: str | None = None) -> bool:
        mode = asked or self.mode
        if mode == "off":
            return False
        return mode == "on" or len(TermMatcher(query_text).words) >= 2

    def rescore(
        self,
        query_text: str,
        pooled: Sequence[Ranked],
        read: Callable[[Sequence[str]], Mapping[str, StagedText]],
        weigh: Callable[[Sequence[str]], Sequence[float]] | None = None,
        *,
        asked: str | None = None,
        measure: Callable[[Sequence[str]], Mapping[str, int]] | None = None,
        matcher: TermMatcher | None = None,
    ) -> list[Ranked]:
        """`pooled` (best first) with its first `depth` candidates re-scored and re-ordered; `read` gives their
        texts, `weigh` the query words' weights (their IDF in the palace: a rare word held counts more). Each
        re-scored candidate's signals keep the fusion's score (`fused`) and add the stage's (`rerank`:
        coverage, proximity, the bounded score added). In `auto` (the mode `asked`, else the stage's), a pool of
        short drawers is left in the fusion's order, each of its first candidates saying so (`rerank.skipped`);
        `measure` gives the candidates' lengths without their texts, which are then read only for a pool re-scored."""
        matcher = matcher if matcher is not None else TermMatcher(query_text)
        top, rest = list(pooled[: self.depth]), list(pooled[self.depth :])
        if not matcher or len(top) < 2:
            return list(pooled)
        ids = [r.drawer_id for r in top]
        found: Mapping[str, StagedText] | None = None
        if (asked or self.mode) == "auto":
            if measure is not None:
                sizes = measure(ids)
            else:
                found = read(ids)
                sizes = {drawer_id: len(candidate.text) for drawer_id, candidate in found.items()}
            lengths = sorted(sizes[r.drawer_id] for r in top if r.drawer_id in sizes)
            typical = lengths[len(lengths) // 2] if lengths else 0
            if typical < CONVERSATIONAL_CHARS:
                why = {"skipped": f"auto: short drawers (median {typical} characters)"}
                return [Ranked(r.drawer_id, r.base, {**r.signals, "rerank": why}) for r in top] + rest
        if found is None:
            found = read(ids)
        weights = list(weigh(matcher.words)) if weigh is not None else [1.0] * len(matcher.words)
        relevance = pool_relevance([r.base for r in top])
        asks_support = bool(_ASKS_SUPPORT.search(query_text))
        scored: list[tuple[float, int, Ranked]] = []
        for position, (ranked, rel) in enumerate(zip(top, relevance, strict=True)):
            candidate = found.get(ranked.drawer_id, StagedText(""))
            coverage, proximity = term_evidence(matcher, candidate.text, weights)
            words = (1 - PROXIMITY_SHARE) * coverage + PROXIMITY_SHARE * proximity
            stage: dict[str, Any] = {"coverage": round(coverage, 3), "proximity": round(proximity, 3)}
            if candidate.path is None:
                added = self.weight * words
            else:
                named = path_evidence(matcher, candidate.path, weights)
                support = not asks_support and bool(_SUPPORT.search(candidate.path))
                added = self.weight * ((1 - PATH_SHARE) * words + PATH_SHARE * named - SUPPORT_SHARE * support)
                stage["path"] = round(named, 3)
                if support:
                    stage["support"] = True  # a test or a doc, when the query asked for the code
            stage["added"] = round(added, 4)
            score = rel + added
            signals = {**ranked.signals, "fused": ranked.base, "rerank": stage}
            scored.append((score, position, Ranked(ranked.drawer_id, score, signals)))
        scored.sort(key=lambda item: (-item[0], item[1]))
        floor = min(score for score, _, _ in scored)
        # Below every re-scored candidate, in the fusion's order: their base is moved under the lowest re-scored
        # one, so the pool's relevance (normalized over the whole pool later) keeps them there.
        below = pool_relevance([r.base for r in rest]) if rest else []
        tail = [
            Ranked(r.drawer_id, floor - 1.0 + 0.999 * rel, {**r.signals, "fused": r.base})
            for r, rel in zip(rest, below, strict=True)
        ]
        return [ranked for _, _, ranked in scored] + tail


NO_SECOND_STAGE = SecondStage()


def path_evidence(matcher: TermMatcher, path: str, weights: Sequence[float]) -> float:
    """How much of the query's words a file's path holds (0–1, by weight): `json/encoder.py` for "how does json
    encode floats"."""
    total = sum(weights)
    if total <= 0:
        return 0.0
    held = {term for _, _, term in matcher.find(_SEPARATORS.sub(" ", path))}
    return sum(weights[term] for term in held) / total


def term_evidence(matcher: TermMatcher, text: str, weights: Sequence[float]) -> tuple[float, float]:
    """How much of the query's words `text` holds (0–1, each word by its weight), and how close together: the
    number of distinct words in the tightest window holding as many of them as the text does, over that window's
    length in words (0–1; 0 when it holds fewer than two)."""
    found = matcher.find(text)
    distinct = {term for _, _, term in found}
    total = sum(weights)
    coverage = sum(weights[term] for term in distinct) / total if total > 0 else 0.0
    if len(distinct) < 2:
        return coverage, 0.0
    # The tightest window over the matches holding every distinct term found (a sliding window over positions).
    need, best = len(distinct), None
    counts: dict[int, int] = {}
    left = 0
    for _, end, term in found:
        counts[term] = counts.get(term, 0) + 1
        while len(counts) == need:
            start = found[left][0]
            if best is None or end - start < best[1] - best[0]:
                best = (start, end)
            left_term = found[left][2]
            counts[left_term] -= 1
            if not counts[left_term]:
                del counts[left_term]
            left += 1
    assert best is not None
    words = len(_WORDS.findall(text, best[0], best[1]))
    return coverage, min(1.0, need / max(need, words))


def stage_candidates(rows: Mapping[str, tuple[str, str, str | None, str | None]]) -> dict[str, StagedText]:
    """Candidates from the store's `stage_texts` rows (text, source kind, URI, origin JSON)."""
    return {
        drawer_id: StagedText(text, path_of(kind, uri, json.loads(origin).get("metadata") if origin else None))
        for drawer_id, (text, kind, uri, origin) in rows.items()
    }


def path_of(kind: str, uri: str | None, metadata: object) -> str | None:
    """A mined file's path, relative to the folder mined where the connector says so (else its URI's path), from a
    drawer's source kind, URI and origin metadata; None for anything but a file."""
    if kind != "file":
        return None
    relative = metadata.get("relative_path") if isinstance(metadata, Mapping) else None
    if isinstance(relative, str) and relative:
        return relative
    return (uri or "").removeprefix("file://") or None
