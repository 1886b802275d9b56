"""Passages: how a drawer is cut for its vectors (and its snippets found), at word breaks, by characters."""

from __future__ import annotations

import re
from typing import NamedTuple

# Measured with the shipped tokenizer: English prose runs ~5 characters per word piece and technical text ~3.3, so a
# 700-character passage (~140-210 pieces) fits the 256-piece window whole. Passages do not overlap: on LoCoMo sessions
# and the judged set, 700 characters without overlap ranked hybrid search as well as or better than 500 with 100 of
# overlap, for a fifth fewer tokens to embed (ADR 0013).
PASSAGE_WINDOW_CHARS = 700
PASSAGE_OVERLAP_CHARS = 0
# A drawer this short or shorter also gets a vector per sentence (ADR 0057): a chatty turn's one vector is an average,
# a sentence's matches the one fact a question asks for.
SENTENCE_DRAWER_CHARS = 700


class PassageShape(NamedTuple):
    """How drawers are split into passages: the window and overlap (`embeddings.passage_chars`, `passage_overlap`)
    and the longest conversational drawer split by sentence instead (`embeddings.sentence_chars`)."""

    window: int = PASSAGE_WINDOW_CHARS
    overlap: int = PASSAGE_OVERLAP_CHARS
    sentence: int = SENTENCE_DRAWER_CHARS


DEFAULT_PASSAGES = PassageShape()


MIN_SENTENCE_CHARS = 12  # shorter pieces ("Yes.", "Wow, great!") say nothing a question asks for
# "Caroline: …", "User: …": the speaker (or any short label) a line opens with, carried onto each of its sentences.
_LABEL = re.compile(r"^([^\s:#][^:\n]{0,39}):\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=\S)")


def passage_spans(
    text: str, window_chars: int = PASSAGE_WINDOW_CHARS, overlap_chars: int = PASSAGE_OVERLAP_CHARS
) -> list[tuple[int, int]]:
    """Overlapping [start, end) slices, each at most `window_chars` long, that together cover `text` in order."""
    if window_chars < 1 or not 0 <= overlap_chars < window_chars:
        raise ValueError(
            f"need window_chars >= 1 and 0 <= overlap_chars < window_chars, got {window_chars} and {overlap_chars}"
        )
    spans: list[tuple[int, int]] = []
    start = covered = 0
    while start < len(text):
        if len(text) - start <= window_chars:
            spans.append((start, len(text)))
            break
        # Ending past the previous passage keeps every passage useful; start + window is always past it.
        floor = max(start + max(1, window_chars // 2), covered + 1)
        end = covered = _word_break_before(text, start + window_chars, floor=floor)
        spans.append((start, end))
        # Starting strictly later guarantees progress even when the overlap is most of the window.
        start = max(start + 1, _word_start_after(text, end - overlap_chars, ceiling=end - overlap_chars // 2))
    return spans


def split_passages(
    text: str, window_chars: int = PASSAGE_WINDOW_CHARS, overlap_chars: int = PASSAGE_OVERLAP_CHARS
) -> list[str]:
    """Cut a drawer into overlapping passages that fit the model's input, so its end is as findable as its start."""
    passages = (text[start:end] for start, end in passage_spans(text, window_chars, overlap_chars))
    return [passage for passage in passages if not passage.isspace()]


def sentence_passages(text: str, longest: int = SENTENCE_DRAWER_CHARS) -> list[str]:
    """A short drawer's sentences, each prefixed by the label of its line (a speaker) or the heading above it, for
    vectors of their own beside the drawer's; none for a drawer longer than `longest` (0: never) or of one sentence."""
    if not longest or len(text) > longest:
        return []
    found: list[str] = []
    heading = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
            heading = f"{heading}: " if heading else ""
            continue
        labelled = _LABEL.match(stripped)
        label, body = (labelled.group(0), stripped[labelled.end() :]) if labelled else (heading, stripped)
        found.extend(label + sentence for sentence in _SENTENCE_END.split(body) if len(sentence) >= MIN_SENTENCE_CHARS)
    return found if len(found) >= 2 else []


def drawer_passages(
    text: str,
    window_chars: int = PASSAGE_WINDOW_CHARS,
    overlap_chars: int = PASSAGE_OVERLAP_CHARS,
    sentence_chars: int = SENTENCE_DRAWER_CHARS,
) -> list[str]:
    """What a drawer is embedded as: its passages (`split_passages`), then, for a short one, its sentences
    (`sentence_passages`). The first passage is embedded first (`memcastle.search.backfill`): a drawer is findable by
    meaning before its sentences are."""
    return split_passages(text, window_chars, overlap_chars) + sentence_passages(text, sentence_chars)


def _word_break_before(text: str, hard: int, *, floor: int) -> int:
    """The last cut in [floor, hard] that falls beside whitespace, else `hard` (a word longer than half a window)."""
    for cut in range(hard, floor - 1, -1):
        if text[cut - 1].isspace() or text[cut].isspace():
            return cut
    return hard


def _word_start_after(text: str, lowest: int, *, ceiling: int) -> int:
    """The first position in [lowest, ceiling] that starts a word, else `lowest`."""
    for at in range(lowest, ceiling + 1):
        if at == 0 or text[at - 1].isspace():
            return at
    return lowest
