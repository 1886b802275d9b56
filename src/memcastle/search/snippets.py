"""A hit's evidence in a few lines: the passage that matched best, the query's terms found in it, and its lines.

Terms are matched as the full-text index matches them: words (letters and digits; `_` separates, as in FTS5's
`unicode61`), case and diacritics folded, compared by stem. SQLite's index stems with Porter's algorithm and
PostgreSQL's with the English Snowball stemmer, so a word matches when either stem agrees; both come from
`snowballstemmer`. The passage is the one the semantic leg scored (the drawer cut as the embed job cuts it): the one
holding most distinct query terms, then the one the semantic leg found nearest, then the one with most matches.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Sequence
from typing import Any

from memcastle.model import Snippet
from memcastle.model.scripts import has_unspaced
from memcastle.search.lexical import query_terms
from memcastle.search.passages import PASSAGE_OVERLAP_CHARS, PASSAGE_WINDOW_CHARS, passage_spans

SNIPPET_CHARS = 360  # about six lines of prose or code: enough to judge a hit, short enough to scan ten
_CONTEXT_CHARS = 60  # how far before its first match a snippet may start, to begin at a line or a word
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


_LOCAL = threading.local()


def _stemmers() -> tuple[Any, Any]:
    """Porter (SQLite's FTS5) and English Snowball (PostgreSQL's), one pair per thread: a Snowball stemmer keeps the
    word it works on in itself, so two searches sharing one stem each other's words (or crash with an IndexError).
    Loaded by the first snippet of a thread, not at start-up."""
    found: tuple[Any, Any] | None = getattr(_LOCAL, "stemmers", None)
    if found is None:
        import snowballstemmer

        found = _LOCAL.stemmers = (snowballstemmer.stemmer("porter"), snowballstemmer.stemmer("english"))
    return found


def warm() -> None:
    """Import the stemmers now (snowballstemmer imports every language it has: 50 ms), so that a daemon's first
    search does not; a daemon's start does it on a thread a moment after it answers."""
    _stems("warm")


@functools.lru_cache(maxsize=65_536)
def _stems(word: str) -> tuple[str, str]:
    """The word's Porter and English Snowball stems, after folding case and diacritics."""
    folded = word.casefold()
    if not folded.isascii():
        folded = "".join(c for c in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(c))
    porter, english = _stemmers()
    return porter.stemWord(folded), english.stemWord(folded)


class TermMatcher:
    """The query's words (stop words dropped, as the lexical leg drops them), matched by stem."""

    def __init__(self, query: str) -> None:
        self._terms: list[tuple[str, str]] = []
        self.words: list[str] = []  # one word per term, in the terms' order
        # A pair of characters of a script written without spaces (`memcastle.model.scripts`) is found where it
        # stands, inside a run of them, as the index finds it: by position, not as a word.
        self._unspaced: list[tuple[str, int]] = []
        for term in query_terms(query):
            if has_unspaced(term):
                if term not in self.words:
                    self._unspaced.append((term, len(self._terms)))
                    self._terms.append(("\x00" + term, "\x00" + term))  # no word's stems
                    self.words.append(term)
                continue
            for word in _WORD.findall(term):
                stems = _stems(word)
                if stems not in self._terms:
                    self._terms.append(stems)
                    self.words.append(word)
        # Stemming touches a word's ending (and the English stemmer a few whole words: "dying" is "die"), never its
        # first letter, and folding changes only letters outside ASCII: a word can match only when it starts with
        # the first letter of a term's stem (in either case) or with a letter outside ASCII. The regular expression
        # finds just those words, so the others are never stemmed, nor even looked at in Python.
        self._candidates = _candidate_words({stem[:1] for pair in self._terms for stem in pair if stem[:1] != "\x00"})
        self._seen: set[str] = set()  # the candidate words judged so far
        self._hits: dict[str, int] = {}  # those that match a term, with its index
        self._found: dict[str, list[tuple[int, int, int]]] = {}  # what `find` found, by text

    def __bool__(self) -> bool:
        return bool(self._terms)

    def _matching(self, words: set[str]) -> dict[str, int]:
        """The words that match a term, with its index; each word judged once per matcher (set operations after)."""
        fresh = words - self._seen
        for word in fresh:
            porter, english = _stems(word)
            for index, (term_porter, term_english) in enumerate(self._terms):
                if porter == term_porter or english == term_english:
                    self._hits[word] = index
                    break
        self._seen |= fresh
        return {word: self._hits[word] for word in words & self._hits.keys()}

    def find(self, text: str) -> list[tuple[int, int, int]]:
        """Every word of `text` that matches a term: (start, end, which term), in order. A text is read once per
        matcher (a search's stages read the same drawers): the list returned is shared, not to be changed."""
        if not self._terms:
            return []
        known = self._found.get(text)
        if known is not None:
            return known
        found = self._find(text)
        self._found[text] = found
        return found

    def _find(self, text: str) -> list[tuple[int, int, int]]:
        # The distinct candidate words first (one pass, no match objects), each judged once per matcher; then only
        # the words that match are looked for where they stand: most candidates match no term.
        matching = self._matching(set(self._candidates.findall(text)))
        found = []
        if matching:
            for match in _exact_words(tuple(sorted(matching, key=lambda w: (-len(w), w)))).finditer(text):
                found.append((match.start(), match.end(), matching[match.group()]))
        if self._unspaced:
            for term, index in self._unspaced:
                at = text.find(term)
                while at >= 0:
                    found.append((at, at + len(term), index))
                    at = text.find(term, at + 1)
            found.sort()
        return found


@functools.lru_cache(maxsize=1024)
def _exact_words(words: tuple[str, ...]) -> re.Pattern[str]:
    """These words, each found only where it stands whole (as `_candidate_words` finds words)."""
    return re.compile(rf"(?<![^\W_])(?:{'|'.join(map(re.escape, words))})(?![^\W_])", re.UNICODE)


def _candidate_words(heads: set[str]) -> re.Pattern[str]:
    """Whole words (runs of `_WORD`) that start with one of the ASCII `heads`, in either case, or with a word
    character outside ASCII."""
    ascii_heads = sorted({c for head in heads for c in (head, head.upper()) if c.isascii() and c})
    first = f"[{re.escape(''.join(ascii_heads))}]|" if ascii_heads else ""
    return re.compile(rf"(?<![^\W_])(?:{first}(?=[^\x00-\x7f])[^\W_])[^\W_]*", re.UNICODE)


def snippet(
    content: str,
    matcher: TermMatcher,
    *,
    nearest_passage: int | None = None,
    first_line: int | None = None,
    passages: tuple[int, int] = (PASSAGE_WINDOW_CHARS, PASSAGE_OVERLAP_CHARS),
    limit: int = SNIPPET_CHARS,
) -> Snippet:
    """The best part of `content` for the query (see the module's docstring). `nearest_passage` is the passage the
    semantic leg scored highest, if it scored the drawer; `first_line` the document line the content starts on."""
    matches = matcher.find(content)
    spans = [(a, b) for a, b in passage_spans(content, *passages) if not content[a:b].isspace()] or [(0, len(content))]

    def merit(index: int) -> tuple[int, bool, int, int]:
        start, end = spans[index]
        inside = [m for m in matches if start <= m[0] and m[1] <= end]
        return len({m[2] for m in inside}), index == nearest_passage, len(inside), -index

    passage = max(range(len(spans)), key=merit)
    start, end = _window(content, spans[passage], matches, limit)
    # Blank lines around go; a first line that starts at a line start keeps its indentation, as code needs it.
    lead = start
    while lead < end and content[lead].isspace():
        lead += 1
        if content[lead - 1] == "\n":
            start = lead
    if lead == end or (start > 0 and content[start - 1] != "\n"):
        start = lead
    while end > start and content[end - 1].isspace():
        end -= 1
    lines = None
    if first_line is not None:
        top = first_line + content.count("\n", 0, start)
        lines = (top, top + content.count("\n", start, end))
    return Snippet(
        text=content[start:end],
        start=start,
        end=end,
        matches=_merged([(a - start, b - start) for a, b, _ in matches if start <= a and b <= end]),
        passage=passage,
        lines=lines,
        terms_found=len({term for _, _, term in matches}),
    )


def _window(
    content: str, span: tuple[int, int], matches: Sequence[tuple[int, int, int]], limit: int
) -> tuple[int, int]:
    """At most `limit` characters of the passage `span`: from a little before the match that opens the window holding
    most distinct terms (then most matches), cut at a line start or a word break; the whole passage without any."""
    low, high = span
    inside = [m for m in matches if low <= m[0] and m[1] <= high]
    if high - low <= limit or not inside:
        return low, high  # without a term to centre on, the whole passage the semantic leg scored
    best, best_merit = low, (-1, -1)
    for first in inside:
        at = _opening(content, max(low, first[0] - _CONTEXT_CHARS), first[0])
        covered = [m for m in inside if at <= m[0] and m[1] <= at + limit]
        merit = (len({m[2] for m in covered}), len(covered))
        if merit > best_merit:
            best, best_merit = at, merit
    return best, _closing(content, best, min(high, best + limit))


def _opening(content: str, lowest: int, match: int) -> int:
    """Where a window showing the match at `match` starts: the line it is on when that line starts after `lowest`,
    else the first word after `lowest`."""
    line = content.rfind("\n", lowest, match)
    if line != -1:
        return line + 1
    for at in range(lowest, match):
        if at == 0 or content[at - 1].isspace():
            return at
    return match


def _closing(content: str, start: int, hard: int) -> int:
    """A window's end at or before `hard`: after the last full line when one ends in its second half, else at a word
    break."""
    if hard >= len(content):
        return len(content)
    line = content.rfind("\n", start + (hard - start) // 2, hard)
    if line != -1:
        return line
    for cut in range(hard, start, -1):
        if content[cut - 1].isspace() or content[cut].isspace():
            return cut
    return hard


def _merged(spans: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Matches in order, those that overlap joined into one (consecutive pairs of characters of one run, "东京" and
    "京都" in "东京都", are one match to show)."""
    out: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if out and first < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return tuple(out)
