"""Snippets: the best-matching passage of a hit, with the query's terms marked as the full-text index matches them
(by stem), its place in the drawer and its lines in the document; through the engine, REST, MCP and the CLI."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search_service import make_palace, settle

from memcastle.app import Palace
from memcastle.search.passages import passage_spans
from memcastle.search.snippets import SNIPPET_CHARS, TermMatcher, snippet
from memcastle.services import SearchRequest

FILLER = "The archive keeps ledgers of grain, wool and timber for every season of the year. "


def marked(found: Any) -> list[str]:
    return [found.text[a:b] for a, b in found.matches]


def test_words_match_by_stem_as_the_index_matches_them() -> None:
    matcher = TermMatcher("Parsing the cookies")
    found = snippet("We parse cookies; the parser parsed a Cookie header. Parsley is not it.", matcher)
    assert marked(found) == ["parse", "cookies", "parsed", "Cookie"]
    assert marked(snippet("load_embeddings() and ÉCOLE", TermMatcher("embedding ecole"))) == ["embeddings", "ÉCOLE"]
    assert marked(snippet("The patient was dying.", TermMatcher("die"))) == ["dying"], "the English stemmer's forms"
    assert snippet("nothing here", TermMatcher("the of")).matches == (), "a query of stop words alone marks them only"


WORDS = [
    "parse",
    "Parsing",
    "über",
    "Über",
    "naïve",
    "dying",
    "die",
    "cookie",
    "COOKIES",
    "école",
    "ÉCOLE",
    "x_y",
    "Привет",
    "привет",
    "2026",
    "straße",
    "strasse",
    "ﬁle",
    "file",
    "İstanbul",
    "K",
    "kelvin",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=8)), max_size=40),
    st.lists(st.sampled_from([" ", "_", "-", "\n", "—", "…", "", "9"]), min_size=40, max_size=40),
)
def test_finding_terms_skips_no_word_that_stemming_would_match(
    query: list[str], words: list[str], gaps: list[str]
) -> None:
    """`find` looks only at words that start as a term's stem can: it must find exactly what stemming every word
    of the text finds."""
    from memcastle.search import snippets

    matcher = TermMatcher(" ".join(query))
    text = "".join(w + g for w, g in zip(words, gaps, strict=False))
    every = []
    for match in snippets._WORD.finditer(text):
        stems = snippets._stems(match.group())
        for index, term in enumerate(matcher._terms):
            if stems[0] == term[0] or stems[1] == term[1]:
                every.append((match.start(), match.end(), index))
                break
    assert matcher.find(text) == every


def test_the_passage_with_most_distinct_terms_wins_then_the_nearest_by_meaning() -> None:
    passages = [FILLER * 8, FILLER * 3 + "drawbridge " * 5 + FILLER * 3, FILLER * 3 + "drawbridge winch " + FILLER * 3]
    content = "\n".join(passages)
    assert len(passage_spans(content)) >= 3
    found = snippet(content, TermMatcher("drawbridge winch"))
    assert set(marked(found)) == {"drawbridge", "winch"}, "two distinct terms beat one term five times"
    assert len(found.text) <= SNIPPET_CHARS and content[found.start : found.end] == found.text
    # No term anywhere: the passage the semantic leg scored nearest.
    plain = "\n".join([FILLER * 8, "Oxen pull the heavy carts uphill. " * 10, FILLER * 8])
    spans = [s for s in passage_spans(plain) if not plain[s[0] : s[1]].isspace()]
    which = max(range(len(spans)), key=lambda i: plain[spans[i][0] : spans[i][1]].count("Oxen"))
    assert which > 0
    found = snippet(plain, TermMatcher("bovine traction"), nearest_passage=which)
    assert found.passage == which and "Oxen" in found.text and found.matches == ()
    assert spans[which][0] <= found.start < found.end <= spans[which][1]
    assert snippet(plain, TermMatcher("bovine traction")).passage == 0, "nothing to go by: the first passage"


def test_a_snippet_names_its_lines_and_keeps_the_first_lines_indentation() -> None:
    content = "".join(f"line {i}\n" for i in range(1, 60)) + "    indented target line\n" + "tail\n" * 40
    found = snippet(content, TermMatcher("target"), first_line=101)
    first, last = found.lines
    document = ["?"] * 100 + content.split("\n")
    assert "\n".join(document[first - 1 : last]) == found.text
    assert "    indented target line" in found.text.split("\n")


@settings(max_examples=150, deadline=None)
@given(
    content=st.lists(
        st.sampled_from(["a", "b ", " ", "\n", "\t", "_", "é", ".", "cat ", "cats\n", "dog "]), max_size=600
    ).map("".join),
    query=st.sampled_from(["cat", "dog cats", "a", "é"]),
)
def test_a_snippet_is_always_a_slice_of_the_drawer_with_matches_inside_it(content: str, query: str) -> None:
    found = snippet(content, TermMatcher(query), first_line=1, limit=200)
    assert content[found.start : found.end] == found.text
    assert len(found.text) <= (200 if found.matches else 700)
    assert all(0 <= a < b <= len(found.text) for a, b in found.matches)
    assert found.lines is not None and found.lines[0] == 1 + content.count("\n", 0, found.start)


# --- through the engine and the interfaces -------------------------------------------------------------------


@pytest.fixture
def palace(tmp_path: Path) -> Iterator[Palace]:
    built = make_palace(tmp_path / "palace")
    yield built
    built.stop()


def test_a_hit_by_meaning_alone_shows_its_nearest_passage(palace: Palace) -> None:
    # The test embedder maps "automobile" to "car": the drawer never says "car", its third passage means it.
    content = "\n".join([FILLER * 8, FILLER * 4, "The automobile waits in the courtyard, fuelled. " * 3, FILLER * 4])
    drawer = palace.services.drawers.save_note(content, wing="w").drawer
    settle(palace)
    (hit,) = palace.services.search.search(SearchRequest(query="car", ranking="semantic", limit=1)).hits
    assert hit.drawer.id == drawer.id and hit.snippet is not None
    assert "automobile" in hit.snippet.text and hit.snippet.passage > 0
    lexical = palace.services.search.search(SearchRequest(query="courtyard fuelled", ranking="lexical")).hits[0]
    assert lexical.snippet is not None and {"courtyard", "fuelled"} <= set(marked(lexical.snippet))


def test_rest_mcp_and_cli_give_the_snippet_the_lines_and_the_whole_drawer(daemon: Any, tmp_path: Path) -> None:
    project = tmp_path / "castle"
    project.mkdir()
    lines = [f"# step {i}: carry stones to the wall" for i in range(1, 120)]
    lines[90] = "def raise_portcullis(chain):  # the portcullis winch"
    (project / "gate.py").write_text("\n".join(lines) + "\n")
    served = daemon()
    done = served.cli("mine", "directory", str(project), "--wing", "castle", "--wait", "--json")
    assert done.returncode == 0, done.stderr
    with served.http() as http:
        answer = http.post("/api/search", json={"query": "portcullis winch", "wing": "castle"})
    assert answer.status_code == 200, answer.text
    hit = answer.json()["hits"][0]
    first, last = hit["origin"]["lines"]
    assert first <= 91 <= last
    shown = hit["snippet"]
    assert hit["drawer"]["content"][shown["start"] : shown["end"]] == shown["text"], "the verbatim drawer beside it"
    assert [shown["text"][a:b] for a, b in shown["matches"]] == ["portcullis", "portcullis", "winch"]
    assert shown["lines"][0] <= 91 <= shown["lines"][1]
    piped = served.cli("search", "portcullis winch", "--wing", "castle", "--json")
    assert json.loads(piped.stdout)["hits"][0]["snippet"]["text"] == shown["text"]
    assert f"gate.py, lines {first}–{last}" in _terminal(served, "search", "portcullis winch", "--wing", "castle")
    terminal = _terminal(served, "search", "portcullis winch", "--wing", "castle")
    assert "raise_portcullis" in terminal
    length = len(hit["drawer"]["content"])
    assert f"[lines {shown['lines'][0]}-{shown['lines'][1]} shown · {length:,} characters in all" in terminal
    assert len(terminal.split("\n")) < 25, "a snippet, not the whole chunk"
    full = _terminal(served, "search", "portcullis winch", "--wing", "castle", "--full")
    assert hit["drawer"]["content"].rstrip("\n").split("\n")[0] in full


def _terminal(served: Any, *args: str) -> str:
    """A CLI command rendered as for a person (standard output taken for a terminal), escapes stripped."""
    import re
    import subprocess

    script = (
        "import io, sys\n"
        "class Terminal(io.TextIOWrapper):\n"
        "    def isatty(self):\n"
        "        return True\n"
        "sys.stdout = Terminal(sys.stdout.buffer, encoding='utf-8', line_buffering=True)\n"
        "from memcastle.cli.main import run\n"
        "sys.argv = ['memcastle'] + sys.argv[1:]\n"
        "run()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "--palace", str(served.palace), *args],
        env=served.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
