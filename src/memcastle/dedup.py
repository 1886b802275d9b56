"""Drawer dedup (SPEC §4): exact, normalized and near copies within a room are linked, never merged.

Two independent sources saying the same thing are two pieces of evidence, so mined drawers are always stored and
linked (`similar_to`). Near copies are found among lexical candidates from the same room and confirmed by the
Jaccard similarity of character 5-grams of the normalized text.
"""

from __future__ import annotations

from memcastle.clock import utc_now
from memcastle.model import Drawer, DrawerLink, Scope, normalize_text
from memcastle.search.lexical import match_expression, query_terms
from memcastle.store import Store

NEAR_MIN_CHARS = 12
SHINGLE = 5
CANDIDATES = 10
PROBE_TERMS = 12


def shingles(text: str) -> set[str]:
    normal = normalize_text(text)
    if len(normal) <= SHINGLE:
        return {normal}
    return {normal[i : i + SHINGLE] for i in range(len(normal) - SHINGLE + 1)}


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of character 5-gram sets of the normalized texts."""
    left, right = shingles(a), shingles(b)
    union = len(left | right)
    return len(left & right) / union if union else 1.0


class DuplicateFinder:
    """Finds the current drawers of the same room that say the same as a given drawer."""

    def __init__(self, store: Store, near_threshold: float) -> None:
        self._store = store
        self._threshold = near_threshold

    def links_for(self, drawer: Drawer) -> list[DrawerLink]:
        now = utc_now()
        found: dict[str, DrawerLink] = {}
        for other, verdict in self._store.similar_in_room(drawer.wing, drawer.room, drawer.content_hash,
                                                          drawer.fingerprint, exclude=[drawer.id]):
            found[other] = DrawerLink(drawer.id, other, verdict, 1.0, now)
        if len(normalize_text(drawer.content)) >= NEAR_MIN_CHARS:
            for other in self._near(drawer):
                if other.id not in found:
                    score = similarity(drawer.content, other.content)
                    if score >= self._threshold:
                        found[other.id] = DrawerLink(drawer.id, other.id, "near", round(score, 4), now)
        return list(found.values())

    def _near(self, drawer: Drawer) -> list[Drawer]:
        terms = sorted(query_terms(drawer.content), key=len, reverse=True)[:PROBE_TERMS]
        expression = match_expression(terms, require_all=False)
        if expression is None:
            return []
        candidates = self._store.lexical_candidates(expression, Scope(wing=drawer.wing, room=drawer.room), None,
                                                    False, CANDIDATES + 1)
        ids = [c.drawer_id for c in candidates if c.drawer_id != drawer.id][:CANDIDATES]
        return list(self._store.get_drawers(ids).values())

    def link(self, drawer: Drawer) -> int:
        """Record the links of `drawer`; returns how many it has."""
        links = self.links_for(drawer)
        if links:
            self._store.add_drawer_links(links)
        return len(links)
