"""Checks of the judged data itself: every relevant document exists and is findable at all."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from bench.judged.data import DocRef, PreferenceSet, Query
from bench.judged.palace import MinedPalace
from memcastle.model import Drawer
from memcastle.search.lexical import query_terms


def _fts_shares_terms(text: str, terms: Iterable[str]) -> list[str]:
    """The query terms that the full-text index (same tokenizer as the palace) finds in `text`."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize = 'porter unicode61 remove_diacritics 2')")
        db.execute("INSERT INTO t(content) VALUES (?)", (text,))
        shared = []
        for term in terms:
            if db.execute("SELECT 1 FROM t WHERE t MATCH ?", ('"' + term.replace('"', '""') + '"',)).fetchone():
                shared.append(term)
        return shared
    finally:
        db.close()


def validate(mined: MinedPalace, queries: Sequence[Query], preferences: PreferenceSet | None = None) -> list[str]:
    """Problems with the judged data itself: names that match no drawer, markers that do not single out one
    revision, paraphrases that share a content word with their answer, scoped queries whose distractor does not
    outrank the answer when the filter is dropped, graph-ready sets that miss a mention."""
    drawers = mined.all_drawers()
    keyed = [(mined.doc_key(d), d) for d in drawers]
    problems: list[str] = []

    def check_ref(owner: str, ref: DocRef) -> list[Drawer]:
        found = [d for k, d in keyed if ref.matches(k, d)]
        if not found:
            problems.append(f"{owner}: {ref.label} matches no drawer")
        elif ref.contains is not None and len(found) > 1:
            problems.append(f"{owner}: {ref.label} matches {len(found)} drawers; the marker must pick one revision")
        return found

    for query in queries:
        matched = [d for ref in query.relevant for d in check_ref(query.id, ref)]
        for ref in query.relevant:
            if not any(mined.is_eligible(d, query.filters) for k, d in keyed if ref.matches(k, d)):
                problems.append(f"{query.id}: no revision of {ref.label} is in the query's scope and time")
        if query.distractor is not None:
            outside = [d for d in check_ref(query.id, query.distractor) if not mined.in_scope(d, query.filters)]
            if not outside:
                problems.append(f"{query.id}: the distractor {query.distractor.label} is inside the filter")
        if query.category == "paraphrase":
            terms = query_terms(query.text)
            for drawer in matched:
                shared = _fts_shares_terms(drawer.content, terms)
                if shared:
                    problems.append(f"{query.id}: shares {shared} with {mined.doc_key(drawer)}")
        if query.category == "scoped":
            if query.distractor is None:
                problems.append(f"{query.id}: a scoped query names its distractor")
            else:
                unscoped = {
                    k: v
                    for k, v in query.filters.items()
                    if k in ("as_of_step", "from_step", "until_step", "include_historical")
                }
                hits = mined.search(mined.request(query.text, unscoped, "lexical")).hits
                ranked = [(mined.doc_key(h.drawer), h.drawer) for h in hits]
                top = next((i for i, (k, d) in enumerate(ranked) if query.distractor.matches(k, d)), None)
                best = min(
                    (i for i, (k, d) in enumerate(ranked) for r in query.relevant if r.matches(k, d)), default=None
                )
                if top is None or (best is not None and best < top):
                    problems.append(
                        f"{query.id}: without the filter the distractor does not outrank the answer "
                        f"(lexical ranks: distractor {top}, best answer {best})"
                    )
                for ref in query.relevant:
                    if query.distractor.doc == ref.doc:
                        problems.append(f"{query.id}: the distractor is a relevant document")
        if query.entity:
            current = {
                k for k, d in keyed if d.valid_to is None and any(e.lower() in d.content.lower() for e in query.entity)
            }
            judged = {r.doc for r in query.relevant}
            if current != judged:
                problems.append(
                    f"{query.id}: documents mentioning {list(query.entity)}: missing from relevant "
                    f"{sorted(current - judged)}, judged but not mentioning {sorted(judged - current)}"
                )
    if preferences is not None:
        for case in preferences.cases:
            for ref in (case.first, case.over, *(e[0] for e in case.expect)):
                if ref is not None:
                    check_ref(case.id, ref)
    return problems
