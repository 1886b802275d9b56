"""The lexical leg's query in FTS5's dialect: every term quoted, so no operator in user text is ever interpreted."""

from __future__ import annotations

from memcastle.model import LexicalQuery
from memcastle.model.scripts import index_text


def quote_term(term: str) -> str:
    """One term as an FTS5 string literal: a phrase of single characters for a script written without spaces, as
    the index holds them (`memcastle.model.scripts`)."""
    return '"' + index_text(term).strip().replace('"', '""') + '"'


def fts5_match(query: LexicalQuery, *, column: str | None = None) -> str | None:
    """An FTS5 MATCH expression over the quoted terms (AND when all are required, else OR), in every column or in
    `column` alone; None for no terms."""
    if not query.terms:
        return None
    expression = (" AND " if query.require_all else " OR ").join(quote_term(t) for t in query.terms)
    return f"{column} : ({expression})" if column else expression
