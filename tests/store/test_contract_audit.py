"""The read audit's records behave the same on both backends: ids in order, listed newest first by token, client,
item and time, pruned by age and count, and a forgotten drawer's id erased from them."""

from __future__ import annotations

from memcastle.model import DrawerScope, NewDrawer
from memcastle.model.audit import ReadQuery, ReadRecord
from memcastle.store import Store

T0, T1, T2 = "2026-11-01T10:00:00.000000Z", "2026-11-02T10:00:00.000000Z", "2026-11-03T10:00:00.000000Z"


def test_records_are_listed_newest_first_and_filtered(store: Store) -> None:
    store.audit.record_reads(
        [
            ReadRecord(at=T0, interface="http", operation="search", token="laptop", query="q", drawer_ids=("b", "a")),
            ReadRecord(at=T1, interface="mcp", operation="drawer", client="agent", session="s1", drawer_ids=("a",)),
            ReadRecord(at=T2, interface="web", operation="fact", fact_ids=("f1",), drawer_ids=("c",)),
        ]
    )
    found = store.audit.reads(ReadQuery(limit=10))
    assert [r.operation for r in found] == ["fact", "drawer", "search"]
    assert found[2].drawer_ids == ("b", "a"), "in the order the answer returned them"
    assert found[0].fact_ids == ("f1",) and found[1].session == "s1" and found[2].token == "laptop"
    assert [r.operation for r in store.audit.reads(ReadQuery(item="a"))] == ["drawer", "search"]
    assert [r.operation for r in store.audit.reads(ReadQuery(client="agent"))] == ["drawer"]
    assert [r.operation for r in store.audit.reads(ReadQuery(token="laptop"))] == ["search"]
    assert [r.operation for r in store.audit.reads(ReadQuery(since=T1))] == ["fact", "drawer"]
    assert [r.operation for r in store.audit.reads(ReadQuery(limit=1))] == ["fact"]


def test_pruning_by_age_and_by_count(store: Store) -> None:
    store.audit.record_reads([ReadRecord(at=at, interface="http", operation="search") for at in (T0, T1, T2, T2)])
    assert store.audit.prune_reads(T1, 1000) == 1
    assert store.audit.prune_reads(T0, 2) == 1, "the oldest beyond the newest two"
    assert [r.at for r in store.audit.reads(ReadQuery())] == [T2, T2]


def test_a_forgotten_drawer_leaves_the_records_that_returned_it(store: Store) -> None:
    gone = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="forget me"))
    kept = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="keep me"))
    store.audit.record_reads([ReadRecord(at=T0, interface="http", operation="search", drawer_ids=(gone.id, kept.id))])
    store.forgetting.forget(DrawerScope(drawer_id=gone.id), dry_run=False, requested_by="cli")
    (record,) = store.audit.reads(ReadQuery())
    assert record.drawer_ids == (kept.id,)
    assert store.audit.reads(ReadQuery(item=gone.id)) == []
