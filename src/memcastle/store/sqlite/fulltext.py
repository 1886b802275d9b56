"""The lexical leg's query in FTS5's dialect: every term quoted, so no operator in user text is ever interpreted."""

from __future__ import annotations

from memcastle.model import LexicalQuery


def quote_term(term: str) -> str:
    """One term as an FTS5 string literal."""
    return '"' + term.replace('"', '""') + '"'


def fts5_match(query: LexicalQuery) -> str | None:
    """An FTS5 MATCH expression over the quoted terms (AND when all are required, else OR); None for no terms."""
    if not query.terms:
        return None
    return (" AND " if query.require_all else " OR ").join(quote_term(t) for t in query.terms)
