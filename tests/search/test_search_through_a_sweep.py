"""Searching while the embed sweep runs: an agent's first searches on a freshly mined palace meet a backlog of
drawers waiting for their vectors. Every search answers, on both backends, from the first vector to the last."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import DistinctClock
from postgres_support import PostgresServer, as_url

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.model.requests import SearchRequest

# Real prose: the docstrings of standard-library modules, one drawer a paragraph — many drawers share common words,
# so the legs rank some waiting drawers and some meaning-only ones below their anchors (both fuse to 0).
MODULES = ("argparse", "asyncio", "collections", "csv", "datetime", "email", "functools", "http.client", "json",
           "logging", "os", "pathlib", "pickle", "re", "shutil", "socket", "sqlite3", "string", "subprocess",
           "tarfile", "threading", "unittest", "urllib.parse", "uuid", "zipfile", "textwrap", "random")  # fmt: skip
QUERIES = ("HTTP cookie parsing", "parse command line arguments", "read a file", "the server socket connection",
           "date and time",
           "encode json", "run a subprocess", "log a message", "regular expression match", "a thread lock",
           "archive files", "path of the file", "random numbers", "how do I copy a directory tree",
           "test case", "the module", "object", "string formatting", "a list of values", "email message", "file",
           "return the value", "default", "name", "data", "function", "list", "time", "new", "type")  # fmt: skip


def paragraphs() -> list[str]:
    """The paragraphs of each module's docstring and of its public functions' and classes' docstrings."""
    found: dict[str, None] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        members = [getattr(module, attr, None) for attr in sorted(dir(module)) if not attr.startswith("_")]
        for doc in [module.__doc__, *(getattr(m, "__doc__", None) for m in members if callable(m))]:
            for paragraph in (doc or "").split("\n\n"):
                if len(paragraph.strip()) > 60:
                    found.setdefault(" ".join(paragraph.split()))
    return list(found)[:120]


# A topic many drawers share, in texts of many lengths (so the lexical leg's scores spread below its anchor), and
# drawers near it by meaning without its words: during the sweep the best meaning-only drawer and the lowest
# waiting one can both fuse to 0 — the division that once failed a search.
TOPIC = [f"HTTP cookie parsing, case {i}: " + " ".join(["the header value is split on semicolons"] * (1 + i % 7))
         for i in range(60)]  # fmt: skip
NEAR = [f"Browsers keep small session tokens the server set, sample {i}, and send them back." for i in range(20)]


@pytest.fixture(params=["sqlite", "postgres"])
def backlogged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Palace]:
    """A palace holding a few hundred notes with no vector yet; its workers (and so the embed sweep) start when the
    test says."""
    flags = {"palace": str(tmp_path / "palace"), "embeddings.provider": "builtin", "extraction.provider": "none"}
    conninfo = ""
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        conninfo = server.create_database()
        flags["store.url"] = as_url(conninfo)
    palace = build(load_settings(flags=flags, env={}, config_file=None), now=DistinctClock())
    try:
        yield palace
    finally:
        palace.stop()
        if conninfo:
            server.drop_database(conninfo)


def test_every_search_answers_through_a_whole_embed_sweep(backlogged: Palace) -> None:
    services = backlogged.services
    for i, text in enumerate([*TOPIC, *NEAR, *paragraphs()]):
        services.drawers.save_note(text, wing=f"w{i % 3}")
    total = services.status.embeddings_pending()
    assert total >= 180, total
    backlogged.start()  # the embed sweep begins
    searched, failures, seen_pending = 0, [], set()
    while True:
        pending = services.status.embeddings_pending()
        for query in QUERIES:
            for ranking in ("auto", "hybrid"):
                try:
                    services.search.search(SearchRequest(query=query, ranking=ranking, limit=10))
                except Exception as exc:  # noqa: BLE001 - counted and reported, the point of the test
                    failures.append((pending, query, ranking, repr(exc)))
                searched += 1
        seen_pending.add(pending)
        if pending == 0:
            break
    assert failures == [], f"{len(failures)} of {searched} searches failed: {failures[:5]}"
    assert len(seen_pending) >= 3, f"the searches saw the backlog at {sorted(seen_pending)} only"
