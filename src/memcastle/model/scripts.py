"""Scripts written without spaces between words — Chinese, Japanese, Korean, Thai, Lao, Khmer, Myanmar — in the
full-text indexes.

Both indexes split text into words at spaces and punctuation, so a sentence in such a script is one long "word" and a
word inside it cannot be found. Here every character of those scripts is indexed as a word of its own
(`index_text`: a space on either side), and a query's run of them is asked as its overlapping pairs of characters,
each a phrase of two single-character words — found wherever those two characters stand side by side
(`split_word`). That is the bigram search long used for these languages, on an index of single characters: no
dictionary, no segmenter, and a one-character word is found too.

The same character class is spelled for Python's `re` and PostgreSQL's regular expressions. (Not for SQLite's
`GLOB`: a bracket class of these ranges costs it ~0.6 ms per 2.6 KB text, four times the insert it would guard.)
"""

from __future__ import annotations

import re

# Unicode ranges, as (first, last) code points: Hangul Jamo, Thai, Lao, Myanmar, Khmer, Hiragana, Katakana (and its
# phonetic extensions), Hangul compatibility Jamo, CJK Unified Ideographs (extension A, the main block, extension B),
# CJK compatibility ideographs, Hangul syllables.
RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0E7F),
    (0x0E80, 0x0EFF),
    (0x1000, 0x109F),
    (0x1100, 0x11FF),
    (0x1780, 0x17FF),
    (0x3040, 0x309F),
    (0x30A0, 0x30FF),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
)
CLASS = "".join(f"{chr(first)}-{chr(last)}" for first, last in RANGES)  # the inside of a [...] in all three dialects
_ONE = re.compile(f"[{CLASS}]")
_RUN = re.compile(f"[{CLASS}]+")
# In PostgreSQL a regular expression: a text holding one such character.
POSTGRES_PATTERN = f"[{CLASS}]"


def has_unspaced(text: str) -> bool:
    """Whether the text holds a character of a script written without spaces (an ASCII text, most of them, is told
    without a search)."""
    return not text.isascii() and _ONE.search(text) is not None


def index_text(text: str) -> str:
    """The text as the full-text indexes read it: each such character between spaces (the text itself when it has
    none, as almost every text)."""
    if not has_unspaced(text):
        return text
    return _ONE.sub(lambda m: f" {m.group()} ", text)


def split_word(word: str) -> list[str]:
    """A query's word as terms: itself, or — holding such characters — its other parts as words and each run of them
    as its overlapping pairs of characters (a single character alone), in order."""
    if not has_unspaced(word):
        return [word]
    terms: list[str] = []
    at = 0
    for run in _RUN.finditer(word):
        if run.start() > at:
            terms.append(word[at : run.start()])
        chars = run.group()
        terms.extend([chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)])
        at = run.end()
    if at < len(word):
        terms.append(word[at:])
    return terms
