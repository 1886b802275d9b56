"""The lexical leg's query in FTS5's dialect: every term quoted, so no operator in user text is ever interpreted."""

from __future__ import annotations

from memcastle.model import LexicalQuery
from memcastle.model.scripts import index_text


def quote_term(term: str) -> str:
    """One term as an FTS5 string literal: a phrase of single characters for a script written without spaces, as
    the index holds them (`memcastle.model.scripts`)."""
    return '"' + index_text(term).strip().replace('"', '""') + '"'


def fts5_match(query: LexicalQuery) -> str | None:
    """An FTS5 MATCH expression over the quoted terms (AND when all are required, else OR); None for no terms."""
    if not query.terms:
        return None
    return (" AND " if query.require_all else " OR ").join(quote_term(t) for t in query.terms)
