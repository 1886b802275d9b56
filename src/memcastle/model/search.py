"""Search requests and answers: scope (with its time), the lexical query, candidates, hits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from memcastle.model.drawers import JSON, Drawer
from memcastle.model.time import CURRENT, When


@dataclass(frozen=True)
class LexicalQuery:
    """What the lexical leg asks a store for: these terms, every one required or any one enough.

    Each backend turns it into its own full-text dialect; user text never reaches the engine as syntax."""

    terms: tuple[str, ...]
    require_all: bool = True
    # An any-term query may match on its rarest terms alone, as many as are found in at most this many drawers
    # together (the rarest always): the drawers holding only commoner terms are left out, and what is found is
    # scored by the terms matched. None: every term (exact). Bounds the work of the hybrid leg's fill (ADR 0015).
    max_rows: int | None = None
    # How much a term found in a drawer's neighbours' words (its full-text context, ADR 0056) counts beside one in its
    # own text, which counts 1; 0 matches its own text alone.
    context_weight: float = 0.0

    def matches_nothing(self, rows: Sequence[int], drawers: int) -> bool:
        """A bounded query (`max_rows`) none of whose terms can rank: each is in half the palace or more (`is_common`)
        and even the rarest is in more than `max_rows` drawers. Matching it would make the full-text index score that
        many rows for terms whose weight BM25 floors at 1e-6, so the hybrid leg leaves its lexical side empty and the
        semantic leg ranks (ADR 0032). An exact query (no `max_rows`) always matches."""
        if self.max_rows is None or not rows:
            return False
        return min(rows) > self.max_rows and all(is_common(n, drawers) for n in rows)

    def within_budget(self, rows: Sequence[int]) -> tuple[int, ...]:
        """Which terms (by position, in the query's order) an any-term query matches on, given each term's drawer
        count: all of them without `max_rows`, else the rarest while their counts together stay within it (the
        rarest one always)."""
        if self.max_rows is None or self.require_all:
            return tuple(range(len(self.terms)))
        taken: list[int] = []
        total = 0
        for index in sorted(range(len(self.terms)), key=lambda i: (rows[i], i)):
            if taken and total + rows[index] > self.max_rows:
                break
            taken.append(index)
            total += rows[index]
        return tuple(sorted(taken))


def is_common(rows: int, drawers: int) -> bool:
    """A term in `rows` of the palace's `drawers` that BM25 cannot rank by: in half of them or more, where FTS5's
    inverse document frequency, ln((N - n + 0.5) / (n + 0.5)), is no longer positive and is floored at 1e-6 (the
    PostgreSQL backend computes FTS5's formula)."""
    return drawers > 0 and (drawers - rows + 0.5) / (rows + 0.5) <= 1.0


@dataclass(frozen=True)
class TermStatistics:
    """What BM25 weighs words with: the drawers the full-text index holds, their mean length in tokens, and per word
    how many of them it is found in."""

    drawers: int
    average_length: float
    frequencies: tuple[int, ...]


class DrawerPlace(NamedTuple):
    """Where a drawer lives and what mined it: fixed for the drawer's whole life."""

    wing: str
    room: str
    source_kind: str
    connector: str | None


@dataclass(frozen=True)
class Scope:
    """Filters applied inside the query, before any limit: where a drawer lives, what it came from, and when it
    must hold (`memcastle.model.time`)."""

    wing: str | None = None
    room: str | None = None
    tags: tuple[str, ...] = ()
    source_kind: str | None = None
    connector: str | None = None
    agent: str | None = None
    when: When = CURRENT
    hidden: bool = False  # include the drawers a person hid
    # The places a scoped client may read: wings, or (wing, room) pairs (None: all; `model.visibility`).
    places: tuple[tuple[str, str | None], ...] | None = None


@dataclass(frozen=True)
class SearchQuery:
    """A validated search request (SPEC §3)."""

    text: str
    limit: int = 10
    scope: Scope = field(default_factory=Scope)
    ranking: str = "auto"
    expand: bool = False
    preferences: bool = True
    vector: tuple[float, ...] | None = None  # a caller-supplied query vector: the semantic leg embeds nothing
    rerank: str | None = None  # the second stage: off, on or auto; None: the palace's search.rerank


@dataclass(frozen=True)
class ScoredDrawer:
    """A drawer id with its base signal from one ranking leg (higher is better)."""

    drawer_id: str
    signal: float
    # False: the drawer holds none of the query's words itself and matched through its neighbours' (ADR 0056).
    own: bool = True


@dataclass(frozen=True)
class Snippet:
    """The part of a hit's drawer that matched best: `text` is `content[start:end]` of the verbatim drawer, `matches`
    the query terms found in it as [start, end) offsets into `text` (in code points), `passage` the drawer's passage
    it lies in (as embedded), `lines` its first and last line in the document when the origin records lines."""

    text: str
    start: int
    end: int
    matches: tuple[tuple[int, int], ...] = ()
    passage: int = 0
    lines: tuple[int, int] | None = None
    terms_found: int = 0  # how many of the query's distinct terms the whole drawer holds (not part of the answer)

    def to_json(self) -> JSON:
        return {
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "matches": [list(m) for m in self.matches],
            "passage": self.passage,
            "lines": list(self.lines) if self.lines else None,
        }


@dataclass(frozen=True)
class Hit:
    drawer: Drawer
    score: float
    signals: Mapping[str, Any]
    via: tuple[str, ...] | None = None
    snippet: Snippet | None = None

    def to_json(self) -> JSON:
        out: JSON = {
            "drawer": self.drawer.to_json(),
            "score": self.score,
            "signals": dict(self.signals),
            "origin": self.drawer.source.origin.to_json() if self.drawer.source.origin else None,
            "snippet": self.snippet.to_json() if self.snippet else None,
        }
        if self.via is not None:
            out["via"] = list(self.via)
        return out


@dataclass(frozen=True)
class SearchResult:
    hits: tuple[Hit, ...]
    ranking: str
    warnings: tuple[str, ...] = ()
    pinned: tuple[Drawer, ...] = ()  # a recall's pinned drawers of its scope that are not among the hits

    def to_json(self) -> JSON:
        out: dict[str, Any] = {"hits": [h.to_json() for h in self.hits], "ranking": self.ranking,
                               "warnings": list(self.warnings)}  # fmt: skip
        if self.pinned:
            out["pinned"] = [d.to_json() for d in self.pinned]
        return out


# The only ways a job's status may change (SPEC §1); anything else is refused.
