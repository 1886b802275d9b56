"""Deterministic chunking counted in characters (SPEC §2.2).

A document is its segments joined by blank lines. Chunks are exact slices of that text, so joining them gives the
document back (whitespace-only chunks aside, which are dropped). Segments are packed whole and greedily; a segment
too long on its own is cut after the last blank line in the second half of the window, else after the last newline
there, else hard at the limit. Appending to a document therefore changes only its last chunk(s).
"""

from __future__ import annotations

from collections.abc import Sequence

SEPARATOR = "\n\n"


def document_text(segments: Sequence[str]) -> str:
    return SEPARATOR.join(segments)


def chunk_segments(segments: Sequence[str], limit: int) -> list[str]:
    """Cut a document into chunks of at most `limit` characters."""
    text = document_text(segments)
    return [text[a:b] for a, b in chunk_spans(segments, limit)]


def chunk_spans(segments: Sequence[str], limit: int) -> list[tuple[int, int]]:
    """Where `chunk_segments` cuts: each chunk's [start, end) in the document text."""
    if limit < 2:
        raise ValueError("limit must be at least 2")
    text = document_text(segments)
    if len(text) <= limit:
        return [(0, len(text))] if text.strip() else []
    spans: list[tuple[int, int]] = []
    position = 0
    for index, segment in enumerate(segments):
        end = position + len(segment) + (len(SEPARATOR) if index < len(segments) - 1 else 0)
        spans.append((position, end))
        position = end

    bounds: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for start, end in spans:
        if current is not None and end - current[0] <= limit:
            current = (current[0], end)
            continue
        if current is not None:
            bounds.append(current)
        if end - start <= limit:
            current = (start, end)
            continue
        pieces = _split_long(text, start, end, limit)
        bounds.extend(pieces[:-1])
        current = pieces[-1]
    if current is not None:
        bounds.append(current)
    return [(a, b) for a, b in bounds if text[a:b].strip()]


def line_ranges(text: str, spans: Sequence[tuple[int, int]], first_line: int) -> list[tuple[int, int]]:
    """Each span's first and last line, counting the text's first line as `first_line`; a span's trailing line
    breaks (the blank lines that separate it from the next) are not lines of it. Spans come in document order."""
    ranges: list[tuple[int, int]] = []
    line, at = first_line, 0
    for start, end in spans:
        line += text.count("\n", at, start)
        at = start
        last = len(text[start:end].rstrip("\r\n"))
        ranges.append((line, line + text.count("\n", start, start + last)))
    return ranges


def _split_long(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    pieces = []
    position = start
    while end - position > limit:
        window_end = position + limit
        half = position + limit // 2
        cut = text.rfind("\n\n", half, window_end)
        if cut != -1:
            cut += 2
        else:
            cut = text.rfind("\n", half, window_end)
            cut = cut + 1 if cut != -1 else window_end
        pieces.append((position, cut))
        position = cut
    pieces.append((position, end))
    return pieces
