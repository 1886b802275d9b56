"""Full-text search on PostgreSQL: a `LexicalQuery`'s terms as tsquery phrases, ranked by BM25 as FTS5 ranks.

The terms reach PostgreSQL only as bound parameters, never as SQL text. Both sides of a match go through
`search_text` first (case folding, diacritics removed, every run of non-alphanumerics a single space — what FTS5's
`unicode61 remove_diacritics 2` does), so the database's parser only ever sees plain words, whatever its locale; the
`memcastle_english` configuration then stems them with the english snowball stemmer and keeps stop words, as FTS5
with the porter tokenizer does.
"""

from __future__ import annotations

import re
import unicodedata

from memcastle.model.scripts import index_text

CONFIG = "memcastle_english"

# FTS5's bm25() constants, so the two backends' lexical signals are alike in size.
K1 = 1.2
B = 0.75

_ASCII_SEPARATORS = re.compile(r"[^a-z0-9]+")


def search_text(text: str) -> str:
    """Words of `text` as the full-text index sees them: case-folded, without diacritics, single-space separated."""
    folded = text.casefold()
    if folded.isascii():
        return _ASCII_SEPARATORS.sub(" ", folded).strip()
    out: list[str] = []
    for char in unicodedata.normalize("NFKD", folded):
        if char.isalnum():
            out.append(char)
        elif unicodedata.category(char).startswith("M"):
            if not unicodedata.combining(char):
                out.append(char)  # a spacing mark (Indic vowel signs) is part of its word; diacritics are dropped
        else:
            out.append(" ")
    # A script written without spaces is indexed a character at a time (`memcastle.model.scripts`).
    return " ".join(index_text("".join(out)).split())


def token_count(words: str) -> int:
    """The document length BM25 normalizes by."""
    return len(words.split())


def bm25_sql(term_count: int, match_count: int, require_all: bool, where: str, context_weight: float = 0.0) -> str:
    """BM25 of the drawers that match, filtered by `where`, best `limit` first, scored over all `term_count` terms with
    the statistics given (see `memcastle.store.postgres.corpus`): FTS5's formula, a phrase counting its rarest word,
    a drawer's length its own words and its neighbours' (ADR 0056). With `context_weight`, a term also matches in the
    drawer's context, where an occurrence counts that much (FTS5's column weights).

    Parameters, in order: the terms' words (text[]); their IDFs (float8[]); the words of the `match_count` terms a
    drawer must have all of (`require_all`) or any of (`match_params`); the `where` parameters; the average drawer
    length; the limit.
    """
    phrase = f"phraseto_tsquery('{CONFIG}', ?)"
    if not context_weight:
        glue = " && " if require_all else " || "
        match = f"d.search @@ ({glue.join([phrase] * match_count)})"
    elif require_all:
        match = " AND ".join([f"(d.search @@ {phrase} OR c.search @@ {phrase})"] * match_count)
    else:
        anyone = " || ".join([phrase] * match_count)
        match = f"(d.search @@ ({anyone}) OR c.search @@ ({anyone}))"
    kept = "(SELECT array_agg(DISTINCT l) FROM term, unnest(term.lexemes) AS l)"
    weight = float(context_weight)
    return f"""
WITH term AS (
    SELECT t.ord, t.idf, phraseto_tsquery('{CONFIG}', t.words) AS query,
           tsvector_to_array(to_tsvector('{CONFIG}', t.words)) AS lexemes
    FROM unnest(?::text[], ?::float8[]) WITH ORDINALITY AS t(words, idf, ord)
), hit AS (
    -- Only the query's lexemes (with their positions) are kept per drawer, so term frequencies are read from a
    -- vector of a few entries instead of unnesting the whole document.
    SELECT d.id, d.token_count + coalesce(c.token_count, 0) AS token_count,
           ts_filter(setweight(d.search, 'A', {kept}), '{{a}}') AS terms,
           ts_filter(setweight(coalesce(c.search, ''::tsvector), 'A', {kept}), '{{a}}') AS near
    FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id
    LEFT JOIN drawer_context c ON c.seq = d.seq
    WHERE {match}{where}
)
SELECT hit.id,
       -- Summed in the terms' order: two drawers with the same statistics get the very same score, so the id breaks
       -- the tie (as on SQLite), not the last bit of a sum taken in another order.
       sum(term.idf * tf.n * {K1 + 1} / (tf.n + {K1} * ({1 - B} + {B} * hit.token_count / ?::float8))
           ORDER BY term.ord) AS score
FROM hit CROSS JOIN term
CROSS JOIN LATERAL (
    -- A term that matches has all its words in the drawer; a phrase counts its rarest word.
    SELECT {_occurrences("hit.terms")} + {weight!r} * {_occurrences("hit.near")} AS n
) AS tf
GROUP BY hit.id
ORDER BY score DESC, hit.id
LIMIT ?
"""


def match_params(words: list[str], require_all: bool, context_weight: float) -> list[str]:
    """The words `bm25_sql`'s match takes, in its order: each once, or with a context weight, once per column."""
    if not context_weight:
        return words
    if require_all:
        return [w for word in words for w in (word, word)]
    return [*words, *words]


def _occurrences(terms: str) -> str:
    """How often `term` occurs in `terms` (a vector of the query's lexemes): a phrase counts its rarest word."""
    return (
        f"(CASE WHEN {terms} @@ term.query THEN (SELECT min(array_length(u.positions, 1)) FROM unnest({terms}) AS u "
        "WHERE u.lexeme = ANY(term.lexemes)) ELSE 0 END)"
    )


def term_bound(idf: float) -> float:
    """The most one term adds to a drawer's BM25 score, whatever its frequency and the drawer's length."""
    return idf * (K1 + 1)
