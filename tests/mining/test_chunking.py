from hypothesis import given, settings
from hypothesis import strategies as st

from memcastle.mining.chunking import chunk_segments, document_text

segment_text = st.text(alphabet=st.sampled_from(list("abc xyz\n\n\t.é")), min_size=0, max_size=400)
segments = st.lists(segment_text, min_size=1, max_size=12)
limits = st.integers(min_value=20, max_value=500)


def _without_blank_chunks(text: str, chunks: list[str]) -> bool:
    """Chunks are consecutive slices: joined, they give the document minus whitespace-only pieces."""
    position = 0
    for chunk in chunks:
        found = text.find(chunk, position)
        if found == -1 or text[position:found].strip():
            return False
        position = found + len(chunk)
    return not text[position:].strip()


@given(segments, limits)
@settings(max_examples=300, deadline=None)
def test_no_chunk_exceeds_the_limit(parts: list[str], limit: int) -> None:
    assert all(len(chunk) <= limit for chunk in chunk_segments(parts, limit))


@given(segments, limits)
@settings(max_examples=300, deadline=None)
def test_chunks_reassemble_the_document_apart_from_whitespace_only_chunks(parts: list[str], limit: int) -> None:
    text = document_text(parts)
    chunks = chunk_segments(parts, limit)
    assert all(chunk.strip() for chunk in chunks)
    assert _without_blank_chunks(text, chunks)
    assert "".join(chunks).replace(" ", "").replace("\n", "").replace("\t", "") == text.replace(" ", "").replace(
        "\n", ""
    ).replace("\t", "")


@given(segments, segments, limits)
@settings(max_examples=300, deadline=None)
def test_appending_changes_only_the_last_chunks(parts: list[str], more: list[str], limit: int) -> None:
    before = chunk_segments(parts, limit)
    after = chunk_segments(parts + more, limit)
    # Every chunk but the last of the shorter document survives the append unchanged.
    assert after[: max(0, len(before) - 1)] == before[: max(0, len(before) - 1)]


def test_a_short_document_is_one_chunk() -> None:
    assert chunk_segments(["alpha", "beta"], 100) == ["alpha\n\nbeta"]


def test_whitespace_only_document_has_no_chunks() -> None:
    assert chunk_segments(["  ", "\n"], 100) == []


def test_a_long_segment_is_cut_after_a_blank_line_in_the_second_half() -> None:
    text = "a" * 60 + "\n\n" + "b" * 60
    chunks = chunk_segments([text], 100)
    assert chunks == ["a" * 60 + "\n\n", "b" * 60]


def test_without_blank_lines_a_long_segment_is_cut_after_a_newline() -> None:
    text = "a" * 70 + "\n" + "b" * 70
    assert chunk_segments([text], 100) == ["a" * 70 + "\n", "b" * 70]


def test_without_any_newline_a_long_segment_is_cut_hard_at_the_limit() -> None:
    assert chunk_segments(["x" * 250], 100) == ["x" * 100, "x" * 100, "x" * 50]


def test_segments_are_packed_whole_and_greedily() -> None:
    parts = ["a" * 40, "b" * 40, "c" * 40]
    assert chunk_segments(parts, 90) == ["a" * 40 + "\n\n" + "b" * 40 + "\n\n", "c" * 40]
