"""The store contract for a person's marks on a drawer, on both backends: hidden drawers are left out inside the
query (before any limit) unless the scope includes them, pinned drawers are listed by scope, and a new version keeps
both marks."""

from __future__ import annotations

import pytest

from memcastle.errors import NotFound
from memcastle.model import ANY_TIME, LexicalQuery, NewDrawer, Scope
from memcastle.store import Store


def note(content: str, *, wing: str = "w", room: str = "r") -> NewDrawer:
    return NewDrawer(wing=wing, room=room, content=content)


def found(store: Store, scope: Scope, word: str = "lantern") -> list[str]:
    return [c.drawer_id for c in store.search.lexical_candidates(LexicalQuery((word,)), scope, 10)]


def test_a_hidden_drawer_is_left_out_unless_the_scope_includes_it(store: Store) -> None:
    shown = store.drawers.add_drawer(note("the lantern is in the shed"))
    hidden = store.drawers.add_drawer(note("the lantern key is under the mat"))
    marked = store.drawers.mark_drawer(hidden.id, hidden=True)
    assert marked.hidden and not marked.pinned
    assert found(store, Scope()) == [shown.id], "before the limit: a limit of 1 still finds the shown one"
    assert [c.drawer_id for c in store.search.lexical_candidates(LexicalQuery(("lantern",)), Scope(), 1)] == [shown.id]
    assert set(found(store, Scope(hidden=True))) == {shown.id, hidden.id}
    assert store.search.eligible_ids([shown.id, hidden.id], Scope()) == {shown.id}
    assert store.search.all_eligible_ids(Scope(hidden=True)) == {shown.id, hidden.id}
    assert [d.id for d in store.drawers.latest_drawers(Scope(), 10)] == [shown.id]
    assert store.drawers.get_drawer(hidden.id).hidden, "read by its id, it says so"
    store.drawers.mark_drawer(hidden.id, hidden=False)
    assert set(found(store, Scope())) == {shown.id, hidden.id}


def test_pinned_drawers_are_listed_by_scope_and_time(store: Store) -> None:
    first = store.drawers.add_drawer(note("pinned in w", wing="w"))
    other = store.drawers.add_drawer(note("pinned in v", wing="v"))
    store.drawers.add_drawer(note("not pinned", wing="w"))
    for drawer in (first, other):
        store.drawers.mark_drawer(drawer.id, pinned=True)
    assert [d.id for d in store.drawers.pinned_drawers(Scope(wing="w"), 10)] == [first.id]
    assert [d.id for d in store.drawers.pinned_drawers(Scope(), 10)] == [other.id, first.id], "newest first"
    assert [d.id for d in store.drawers.pinned_drawers(Scope(), 1)] == [other.id]
    store.drawers.mark_drawer(other.id, hidden=True)
    assert [d.id for d in store.drawers.pinned_drawers(Scope(), 10)] == [first.id], "hidden wins over pinned"
    closed = store.drawers.invalidate_drawer(first.id)
    assert store.drawers.pinned_drawers(Scope(), 10) == [], "a closed version is no longer current"
    assert [d.id for d in store.drawers.pinned_drawers(Scope(when=ANY_TIME, hidden=True), 10)] == [other.id, closed.id]


def test_a_new_version_keeps_the_marks(store: Store) -> None:
    old = store.drawers.add_drawer(note("the lantern was red"))
    store.drawers.mark_drawer(old.id, pinned=True, hidden=True)
    new = store.drawers.supersede_drawer(old.id, note("the lantern is blue"))
    assert new.pinned and new.hidden
    store.drawers.mark_drawer(new.id, pinned=False)
    assert store.drawers.get_drawer(old.id).pinned, "each version holds its own marks"
    assert not store.drawers.get_drawer(new.id).pinned and store.drawers.get_drawer(new.id).hidden


def test_marking_an_unknown_drawer_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.drawers.mark_drawer("no-such-drawer", pinned=True)
