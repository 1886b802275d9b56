"""Background work is linear: every query a sweep or a paged job runs per batch walks an index from a cursor; none
scans or sorts the whole palace. The statements are captured at the `Tx` seam while the store does the real work,
then explained on the same backend (SQLite: `EXPLAIN QUERY PLAN`; PostgreSQL: `EXPLAIN` with sequential scans and
sorts priced out, so a plan that still needs one has no index to walk).

The once-per-job counts (`count_to_extract`, `count_missing_embeddings`, the drawer total of `verify`) are left out on
purpose: a count is one pass, taken when a job starts, not per batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from memcastle.model import Assertion, Between, LexicalQuery, NearKeys, NewDrawer, Scope, key_variants
from memcastle.store import Store

from .conftest import BackendPalace


class Recording:
    """A `Tx` that remembers every SELECT it runs."""

    def __init__(self, tx: Any, seen: list[tuple[str, tuple[Any, ...]]]) -> None:
        self._tx, self._seen = tx, seen

    def _note(self, sql: str, params: Any) -> None:
        if sql.lstrip().upper().startswith("SELECT"):
            self._seen.append((sql, tuple(params)))

    def one(self, sql: str, params: Any = ()) -> Any:
        self._note(sql, params)
        return self._tx.one(sql, params)

    def all(self, sql: str, params: Any = ()) -> Any:
        self._note(sql, params)
        return self._tx.all(sql, params)

    def run(self, sql: str, params: Any = ()) -> Any:
        return self._tx.run(sql, params)

    @property
    def conn(self) -> Any:
        """The connection, for the queries a backend runs on a cursor of its own (PostgreSQL's binary vectors)."""
        recording = self

        class Connection:
            def __getattr__(self, name: str) -> Any:
                return getattr(recording._tx.conn, name)

            @contextmanager
            def cursor(self, **options: Any) -> Iterator[Any]:
                with recording._tx.conn.cursor(**options) as cursor:

                    class Cursor:
                        def __getattr__(self, name: str) -> Any:
                            return getattr(cursor, name)

                        def execute(self, sql: str, params: Any = ()) -> Any:
                            recording._note(sql.replace("%s", "?"), params)
                            return cursor.execute(sql, params)

                    yield Cursor()

        return Connection()

    def many(self, sql: str, rows: Any) -> Any:
        return self._tx.many(sql, rows)


def recorded(store: Store, work: Callable[[], object]) -> list[tuple[str, tuple[Any, ...]]]:
    seen: list[tuple[str, tuple[Any, ...]]] = []
    original = store._read  # type: ignore[attr-defined]

    @contextmanager
    def read() -> Iterator[Recording]:
        with original() as tx:
            yield Recording(tx, seen)

    store._read = read  # type: ignore[attr-defined]
    try:
        work()
    finally:
        store._read = original  # type: ignore[attr-defined]
    return seen


def plan_of(store: Store, sql: str, params: tuple[Any, ...]) -> list[str]:
    with store._read() as tx:  # type: ignore[attr-defined]
        if store.backend == "sqlite":
            return [str(row["detail"]) for row in tx.all("EXPLAIN QUERY PLAN " + sql, params)]
        # A read is not a transaction block here, so the settings are the session's and are put back after.
        tx.run("SET enable_seqscan = off")
        tx.run("SET enable_sort = off")
        try:
            return [str(next(iter(row.values()))) for row in tx.all("EXPLAIN " + sql, params)]
        finally:
            tx.run("RESET enable_seqscan")
            tx.run("RESET enable_sort")


def whole_palace_work(store: Store, sql: str, plan: list[str]) -> list[str]:
    """The plan lines that cost the whole palace: a sort, a sequential scan of a table (SQLite's `SCAN d` of a walk in
    key order with a LIMIT stops early, and is allowed, as is the oldest end of the near-duplicate queue, `SCAN p`)."""
    walk = "ORDER BY d.seq" in sql and "LIMIT" in sql
    queue = "ORDER BY p.drawer_seq LIMIT" in sql
    # The full-text head is the best k of the matches: SQLite's sorter with a LIMIT keeps k rows as FTS5 yields them
    # (FTS5's own `ORDER BY rank` sorts every match instead, out of EXPLAIN's sight).
    head = "drawer_fts MATCH ?" in sql and "ORDER BY score LIMIT ?" in sql
    # Near-duplicate candidates are counted per (subject, drawer) pair: the grouping sorts the rows one batch of
    # subjects joined through their band keys, looked up by key — a batch's work, not the palace's.
    pairs = "GROUP BY s.drawer_seq, d.seq" in sql
    bad = []
    for line in plan:
        if store.backend == "sqlite":
            index_walk = (walk and line.startswith("SCAN d")) or (queue and line.startswith("SCAN p"))
            full_text = "VIRTUAL TABLE INDEX" in line  # FTS5 answers MATCH from its own index
            sorts = "TEMP B-TREE" in line and not (head and "ORDER BY" in line) and not (pairs and "GROUP BY" in line)
            # Every current drawer, reached through the validity index: a scan in all but name.
            all_current = line.endswith("USING INDEX drawer_valid (valid_to=?)") and not walk
            if sorts or all_current or (line.startswith("SCAN ") and not (index_walk or full_text)):
                bad.append(line)
        elif "Sort" in line or "Seq Scan on" in line:
            bad.append(line)
    return bad


@pytest.fixture
def filled(palace_backend: BackendPalace) -> tuple[Store, list[str]]:
    store = palace_backend.open()
    ids = [
        store.drawers.add_drawer(NewDrawer(wing="w", room=f"r{i % 4}", content=f"drawer {i} about ducks")).id
        for i in range(120)
    ]
    store.embeddings.put_embeddings("m", [(ids[0], np.ones((1, 8), dtype=np.float32))])
    store.near.add_keys([NearKeys(i, (n, n + 1), b"signature") for n, i in enumerate(ids[:5])])
    return store, ids


def test_every_batch_query_of_the_background_jobs_walks_an_index(filled: tuple[Store, list[str]]) -> None:
    store, ids = filled
    claim = Assertion(
        id="f-new",
        subject="e-ana",
        predicate="located_in",
        object="e-paris",
        confidence=0.8,
        valid_from="2026-01-01T00:00:00.000000Z",
        valid_to=None,
        drawer_id=ids[4],
        extractor="heuristic",
        job_id=None,
        origin=None,
        explicit=False,
        created_at="2026-01-01T00:00:00.000000Z",
    )
    batches: dict[str, Callable[[], object]] = {
        "extract: the next unread drawers": lambda: store.graph.next_to_extract("heuristic", 16, after_seq=40),
        "embed: drawers filed during the sweep": lambda: store.embeddings.next_to_embed("m", 16, after=40),
        "embed: notes and documents filed during the sweep": lambda: store.embeddings.next_to_embed(
            "m", 16, after=40, stage="head", subset="prose"
        ),
        "embed: current drawers, newest first": lambda: store.embeddings.next_to_embed(
            "m", 16, before=80, current=True
        ),
        "embed: closed drawers": lambda: store.embeddings.next_to_embed("m", 16, before=80, current=False),
        "embed: first passages, newest first": lambda: store.embeddings.next_to_embed(
            "m", 16, before=80, current=True, stage="head"
        ),
        "embed: notes and documents first": lambda: store.embeddings.next_to_embed(
            "m", 16, before=80, current=True, stage="head", subset="prose"
        ),
        "embed: the other passages": lambda: store.embeddings.next_to_embed(
            "m", 16, before=80, current=True, stage="rest"
        ),
        "embed: the other passages, but tests'": lambda: store.embeddings.next_to_embed(
            "m", 16, before=80, current=True, stage="rest", subset="untested"
        ),
        "embed: the tests' other passages": lambda: store.embeddings.next_to_embed(
            "m", 16, before=80, current=True, stage="rest", subset="tests"
        ),
        "verify: the next page": lambda: store.drawers.list_drawers(None, None, 50, ids[30]),
        "verify: the first page": lambda: store.drawers.list_drawers(None, None, 50, None),
        "listing a room": lambda: store.drawers.list_drawers("w", "r1", 50, ids[30]),
        "dedup: candidates sharing bands": lambda: store.near.sharing_bands(range(400), 2),
        "dedup: signatures": lambda: store.near.signatures([1, 2, 3]),
        "dedup: texts to compare": lambda: store.near.contents([1, 2, 3]),
        "dedup: the queue": lambda: store.near.pending(256),
        "dedup: the queued among a batch": lambda: store.near.pending(256, ids[:5]),
        "dedup: copies in a room": lambda: store.near.copies(store.near.pending(256, ids[:5])),
        "mine: hydrate a batch": lambda: store.drawers.get_drawers(ids[:16]),
        "extract: a name or key": lambda: store.entities.entities_named("Ana Lopez", "ana lopez"),
        "extract: an alias": lambda: store.entities.entities_with_alias("ana lopez"),
        "extract: one-edit candidates": lambda: store.entities.entities_sharing_variants(
            sorted(key_variants("ana lopez"))
        ),
        "extract: facts a new fact may link to": lambda: store.facts.facts_to_link(
            claim, predecessor_drawer=ids[3], rivals=True, limit=8
        ),
        "extract: decisions among those facts": lambda: store.facts.explicit_links_of(["f-1", "f-2"]),
        # A session-start hook calls wake-up: its reads must cost what they answer, at 100 drawers as at a million.
        "wake-up: an agent's latest checkpoints": lambda: store.drawers.latest_drawers(
            Scope(agent="claude", tags=("checkpoint",)), 20
        ),
        "wake-up: in its project's wing": lambda: store.drawers.latest_drawers(
            Scope(wing="w", agent="claude", tags=("checkpoint",)), 20
        ),
        "wake-up: its diary": lambda: store.drawers.latest_drawers(Scope(agent="claude", tags=("diary",)), 1),
        "wake-up: its project's decisions": lambda: store.drawers.latest_drawers(
            Scope(wing="w", tags=("checkpoint", "decision")), 10
        ),
    }
    failures: dict[str, list[tuple[str, list[str]]]] = {}
    for name, work in batches.items():
        statements = recorded(store, work)
        assert statements, name
        for sql, params in statements:
            bad = whole_palace_work(store, sql, plan_of(store, sql, params))
            if bad:
                failures.setdefault(name, []).append((sql, bad))
    for name, found in failures.items():
        print("\n##", name)
        for sql, bad in found:
            print(sql[:200], bad)
    assert not failures, failures


def explained_failures(store: Store, work: dict[str, Callable[[], object]]) -> dict[str, list[tuple[str, list[str]]]]:
    failures: dict[str, list[tuple[str, list[str]]]] = {}
    for name, call in work.items():
        statements = recorded(store, call)
        assert statements, name
        for sql, params in statements:
            bad = whole_palace_work(store, sql, plan_of(store, sql, params))
            if bad:
                failures.setdefault(name, []).append((sql, bad))
    return failures


def test_every_query_on_the_search_path_walks_an_index(filled: tuple[Store, list[str]]) -> None:
    """What one search costs the store: nothing new to load is one probe past the last row; eligibility, places and
    hydration look up the candidates by key; the lexical leg ranks inside the full-text index, then joins only
    its head; expansion reads the graph by entity."""
    store, ids = filled
    loaded = store.embeddings.load_embeddings("m", 0, 8, limit=100)
    last = loaded.last_id
    window = Between("2020-01-01T00:00:00.000000Z", "2030-01-01T00:00:00.000000Z")
    lexical = LexicalQuery(("ducks", "drawer"), require_all=True)
    work: dict[str, Callable[[], object]] = {
        "semantic: refresh with nothing new": lambda: store.embeddings.load_embeddings("m", last, 8, limit=8192),
        "semantic: places of new rows": lambda: store.search.drawer_places(ids[:16]),
        "semantic: exact vectors of the graph's rows": lambda: store.embeddings.vectors_of_rows(loaded.row_ids[:64], 8),
        "semantic: eligibility of the best": lambda: store.search.eligible_ids(ids[:64], Scope()),
        "semantic: eligibility in a wing and window": lambda: store.search.eligible_ids(
            ids[:64], Scope(wing="w", room="r1", when=window)
        ),
        "hydrate the hits": lambda: store.drawers.get_drawers(ids[:20]),
        "lexical: the text of long candidates": lambda: store.search.long_contents(ids[:40], 10),
        "expansion: entities of the hits": lambda: store.entities.entities_of_drawers(ids[:10]),
        "expansion: facts of the entities": lambda: store.facts.assertions_touching(["e-1", "e-2"]),
        "expansion: their links": lambda: store.facts.links_of(["f-1", "f-2"]),
        "expansion: drawers mentioning them": lambda: store.entities.drawers_mentioning(["e-1", "e-2"], 200),
    }
    work["lexical: every term, a wing"] = lambda: store.search.lexical_candidates(lexical, Scope(wing="w"), 10)
    work["lexical: any term"] = lambda: store.search.lexical_candidates(
        LexicalQuery(("ducks", "geese"), require_all=False), Scope(), 40
    )
    if store.backend == "postgres":
        # The BM25 statistics are read once, then only forward (store/postgres/corpus.py): warm them first. (The
        # nearest passages run in a transaction of their own: tests/store/test_postgres.py explains them.)
        store.search.lexical_candidates(LexicalQuery(("ducks", "geese", "drawer"), require_all=False), Scope(), 1)
    failures = explained_failures(store, work)
    for name, found in failures.items():
        print("\n##", name)
        for sql, bad in found:
            print(sql[:200], bad)
    assert not failures, failures


def test_the_check_fails_on_a_query_that_sorts_the_whole_palace(filled: tuple[Store, list[str]]) -> None:
    store, _ = filled
    sql = "SELECT d.id FROM drawer d WHERE d.valid_to IS NULL ORDER BY length(d.content) LIMIT 5"
    assert whole_palace_work(store, sql, plan_of(store, sql, ()))
