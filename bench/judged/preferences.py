"""The ADR 048 preference set: each case's expected order under the bounded adjustment."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bench.judged.data import EPSILON, DocRef, PreferenceCase, PreferenceSet
from bench.judged.palace import MinedPalace
from memcastle.model import Hit
from memcastle.preferences import BOUND


@dataclass(frozen=True)
class PreferenceOutcome:
    case: PreferenceCase
    ranking: str
    problems: tuple[str, ...]  # every rule broken, the bound included
    bound: tuple[str, ...]  # hits breaking |score - relevance| <= 0.08 or lacking the signals
    top: str  # the first hit, as document key (+ level)
    neutral_top: str  # the first hit with preferences off
    neutral_tie: bool  # with preferences off, the first two hits tie or have the same text (drawer ids decide)
    hits: int

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def known_failure(self) -> str | None:
        """Why the engine is known to fail this case under this ranking, if it is."""
        return self.case.known_failures.get(self.ranking)

    @property
    def flipped(self) -> bool:
        """True when the preference changed which document ranks first (a tie without it counts as changed)."""
        return self.neutral_tie or self.top.split(" ")[0] != self.neutral_top.split(" ")[0]


def _describe(mined: MinedPalace, hit: Hit | None) -> str:
    if hit is None:
        return "(no hits)"
    preference = hit.signals.get("preference") or {}
    level = preference.get("level", "-") if isinstance(preference, Mapping) else "-"
    return f"{mined.doc_key(hit.drawer)} [{level}]"


def run_preference_case(mined: MinedPalace, case: PreferenceCase, ranking: str) -> PreferenceOutcome:
    """Check a case's rules exactly: who ranks first, the bound on every hit, the expected resolutions."""
    result = mined.search(mined.request(case.text, case.filters, ranking))
    neutral = mined.search(mined.request(case.text, case.filters, ranking, preferences="off"))
    hits = list(result.hits)
    problems: list[str] = []
    if ranking in ("hybrid", "auto") and result.ranking != "hybrid":
        problems.append(f"ranked {result.ranking}, not hybrid: {list(result.warnings)}")

    def position(ref: DocRef) -> int | None:
        return next((i for i, h in enumerate(hits) if ref.matches(mined.doc_key(h.drawer), h.drawer)), None)

    bound: list[str] = []
    for index, hit in enumerate(hits):
        relevance = hit.signals.get("relevance")
        if not isinstance(relevance, (int, float)) or "preference" not in hit.signals:
            bound.append(f"hit {index + 1} lacks relevance or preference signals")
        elif abs(hit.score - relevance) > BOUND + EPSILON:
            bound.append(f"hit {index + 1}: |score - relevance| = {abs(hit.score - relevance):.4f} > {BOUND}")
    problems.extend(bound)
    first = position(case.first)
    if first != 0:
        problems.append(
            f"{case.first.label} ranks {'absent' if first is None else first + 1}, not first; "
            f"first is {_describe(mined, hits[0] if hits else None)}"
        )
    if case.over is not None:
        other = position(case.over)
        if other is None:
            problems.append(f"{case.over.label} is not among the hits: not a near tie")
        elif first is not None and other < first:
            problems.append(f"{case.over.label} ranks above {case.first.label}")
    if case.kind == "low_stays_first" and first is not None:
        level = hits[first].signals["preference"]["level"]
        if level != "low":
            problems.append(f"{case.first.label} resolves to {level!r}, but the case is about a low drawer")
    for ref, level, criterion in case.expect:
        at = position(ref)
        if at is None:
            problems.append(f"expected {ref.label} among the hits")
            continue
        found = hits[at].signals["preference"]
        path = (found.get("criterion") or {}).get("path")
        if found["level"] != level or path != criterion:
            problems.append(
                f"{ref.label} resolves to {found['level']!r} via {path!r}; expected {level!r} via {criterion!r}"
            )
    return PreferenceOutcome(
        case=case,
        ranking=ranking,
        problems=tuple(problems),
        bound=tuple(bound),
        top=_describe(mined, hits[0] if hits else None),
        neutral_top=_describe(mined, neutral.hits[0] if neutral.hits else None),
        neutral_tie=len(neutral.hits) > 1
        and (
            neutral.hits[0].score == neutral.hits[1].score
            or neutral.hits[0].drawer.content_hash == neutral.hits[1].drawer.content_hash
        ),
        hits=len(hits),
    )


def run_preferences(mined: MinedPalace, preferences: PreferenceSet) -> list[PreferenceOutcome]:
    return [run_preference_case(mined, case, ranking) for case in preferences.cases for ranking in case.rankings]
