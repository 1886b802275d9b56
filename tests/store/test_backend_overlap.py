"""The two SQL backends share their rules through `store/sql/`, not by copy: a measure that keeps it so.

The measure (ADR 0008): the code lines of each backend's package (blank and comment lines dropped, PostgreSQL's
`%s`/`%b` placeholders read as `?`), aligned in order with difflib's sequence matcher; the lines in matching blocks
are the lines the two backends still share. Before `store/sql/` existed it was 455 of SQLite's 921 code lines.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import memcastle.store

STORE = Path(memcastle.store.__file__).parent
MAX_SHARED = 100


def code_lines(package: Path) -> list[str]:
    lines = []
    for path in sorted(package.glob("*.py")):
        for line in path.read_text(encoding="utf-8").splitlines():
            text = line.strip()
            if text and not text.startswith("#"):
                lines.append(text.replace("%s", "?").replace("%b", "?"))
    return lines


def shared_lines(a: list[str], b: list[str]) -> int:
    return sum(block.size for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())


def test_the_backends_share_fewer_than_100_lines_of_code() -> None:
    shared = shared_lines(code_lines(STORE / "sqlite"), code_lines(STORE / "postgres"))
    assert shared < MAX_SHARED, (
        f"{shared} lines of the SQLite backend reappear in the PostgreSQL one; move the rule into memcastle/store/sql/"
    )


def test_the_measure_sees_a_copied_rule() -> None:
    rule = [f"line {i} of a rule" for i in range(MAX_SHARED)]
    assert shared_lines(["a", *rule, "b"], ["c", *rule, "d"]) == MAX_SHARED
