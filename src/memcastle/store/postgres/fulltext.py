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
    return " ".join("".join(out).split())


def token_count(words: str) -> int:
    """The document length BM25 normalizes by."""
    return len(words.split())


def bm25_sql(term_count: int, require_all: bool, where: str) -> str:
    """Ranked matches of `term_count` terms (bound as an array, then once each), filtered by `where`.

    Parameters, in order: the terms' words as a text[]; each term's words again (for the match); the `where`
    parameters; the limit. The statistics follow FTS5: N and the average length over every drawer, a term's document
    frequency over every drawer, the IDF floored at 1e-6; a multi-word term (a phrase) counts its rarest word.
    """
    glue = " && " if require_all else " || "
    match = glue.join([f"phraseto_tsquery('{CONFIG}', ?)"] * term_count)
    return f"""
WITH term AS (
    SELECT t.ord, phraseto_tsquery('{CONFIG}', t.words) AS query,
           tsvector_to_array(to_tsvector('{CONFIG}', t.words)) AS lexemes
    FROM unnest(?::text[]) WITH ORDINALITY AS t(words, ord)
), corpus AS (
    SELECT count(*)::float8 AS n, coalesce(avg(token_count), 0)::float8 AS avgdl FROM drawer
), weight AS (
    SELECT term.ord, term.query, term.lexemes,
           greatest(ln((corpus.n - hits.n + 0.5) / (hits.n + 0.5)), 1e-6) AS idf
    FROM term CROSS JOIN corpus
    CROSS JOIN LATERAL (SELECT count(*)::float8 AS n FROM drawer x WHERE x.search @@ term.query) AS hits
), hit AS (
    -- Only the query's lexemes (with their positions) are kept per drawer, so term frequencies are read from a
    -- vector of a few entries instead of unnesting the whole document.
    SELECT d.id, d.token_count,
           ts_filter(setweight(d.search, 'A', (SELECT array_agg(DISTINCT l) FROM term, unnest(term.lexemes) AS l)),
                     '{{a}}') AS terms
    FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id
    WHERE d.search @@ ({match}){where}
)
SELECT hit.id,
       sum(weight.idf * tf.n * {K1 + 1} / (tf.n + {K1} * ({1 - B} + {B} * hit.token_count / corpus.avgdl))) AS score
FROM hit CROSS JOIN corpus CROSS JOIN weight
CROSS JOIN LATERAL (
    -- A term that matches has all its words in the drawer; a phrase counts its rarest word.
    SELECT CASE WHEN hit.terms @@ weight.query
                THEN (SELECT min(array_length(u.positions, 1)) FROM unnest(hit.terms) AS u
                      WHERE u.lexeme = ANY(weight.lexemes))
                ELSE 0 END AS n
) AS tf
GROUP BY hit.id
ORDER BY score DESC, hit.id
LIMIT ?
"""
