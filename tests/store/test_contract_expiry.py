"""The store contract for expiry (docs/lifecycle.md, "Expiry"), on both backends: a drawer's own `expires_at` and
`[[lifecycle]]` rules end its eligibility inside the query, before any limit, evaluated when the palace is read; an
expired drawer reads as closed with the reason `expired` and stays reachable at an earlier time or any time."""

from __future__ import annotations

from memcastle.model import ANY_TIME, AsOf, Between, LexicalQuery, NewDrawer, Origin, Scope, Source
from memcastle.model.lifecycle import EXPIRED, ExpiryRule, Lifecycle
from memcastle.store import Store

PAST = "2020-01-01T00:00:00.000000Z"
FUTURE = "2999-01-01T00:00:00.000000Z"


def found(store: Store, scope: Scope, word: str = "harbour") -> set[str]:
    return {c.drawer_id for c in store.search.lexical_candidates(LexicalQuery((word,)), scope, 10)}


def test_a_drawers_own_expiry_ends_its_eligibility_and_reads_as_closed(store: Store) -> None:
    lasting = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="harbour lights stay", valid_from=PAST))
    gone = store.drawers.add_drawer(
        NewDrawer(
            wing="w", room="r", content="harbour ferry strike", valid_from=PAST, expires_at="2021-01-01T00:00:00Z"
        )
    )
    later = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="harbour fair", expires_at=FUTURE))
    assert found(store, Scope()) == {lasting.id, later.id}, "expired: left out of a current search"
    assert [c.drawer_id for c in store.search.lexical_candidates(LexicalQuery(("ferry",)), Scope(), 1)] == []
    assert gone.id in found(store, Scope(when=AsOf("2020-06-01T00:00:00.000000Z"))), "before it expired"
    assert gone.id not in found(store, Scope(when=AsOf("2021-01-01T00:00:00.000000Z"))), "expiry is exclusive"
    assert gone.id in found(store, Scope(when=Between("2020-12-01T00:00:00.000000Z", "2022-01-01T00:00:00.000000Z")))
    assert gone.id in found(store, Scope(when=ANY_TIME))
    read = store.drawers.get_drawer(gone.id)
    assert read.valid_to == "2021-01-01T00:00:00.000000Z" and read.closed_reason == EXPIRED and not read.is_current
    assert store.drawers.get_drawer(later.id).is_current and store.drawers.get_drawer(later.id).expires_at == FUTURE
    assert [d.id for d in store.drawers.latest_drawers(Scope(), 10)] == [later.id, lasting.id]
    assert store.search.eligible_ids([lasting.id, gone.id, later.id], Scope()) == {lasting.id, later.id}


def test_rules_expire_the_drawers_they_match_when_read(store: Store) -> None:
    origin = Origin(connector="claude", source_id="s", document="d", chunk=0, revision="r")
    transcript = store.drawers.add_drawer(
        NewDrawer(
            wing="w", room="r", content="harbour chat", valid_from=PAST, source=Source(kind="transcript", origin=origin)
        )
    )
    scratch = store.drawers.add_drawer(NewDrawer(wing="scratch", room="r", content="harbour scratch", valid_from=PAST))
    tagged = store.drawers.add_drawer(
        NewDrawer(wing="w", room="r", content="harbour temp", valid_from=PAST, tags=("temp",))
    )
    kept = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="harbour kept", valid_from=PAST))
    fresh = store.drawers.add_drawer(NewDrawer(wing="scratch", room="r", content="harbour fresh scratch"))
    assert len(found(store, Scope())) == 5, "no rules: nothing expires"
    store.lifecycle = Lifecycle(
        (
            ExpiryRule(after=30 * 86400, connector="claude"),
            ExpiryRule(after=86400, wing="scratch"),
            ExpiryRule(after=3600, tag="temp", room="r"),
        )
    )
    assert found(store, Scope()) == {kept.id, fresh.id}, "a rule change applies at once: nothing written again"
    assert store.drawers.get_drawer(scratch.id).closed_reason == EXPIRED
    assert store.drawers.get_drawer(transcript.id).valid_to == "2020-01-31T00:00:00.000000Z"
    assert store.drawers.get_drawer(fresh.id).is_current, "a day has not passed for the fresh one"
    assert tagged.id in found(store, Scope(when=ANY_TIME))
    store.lifecycle = Lifecycle()
    assert len(found(store, Scope())) == 5


def test_an_expired_copy_is_no_copy(store: Store) -> None:
    from memcastle.model import content_hash

    store.drawers.add_drawer(
        NewDrawer(wing="w", room="r", content="same words", valid_from=PAST, expires_at="2021-01-01T00:00:00Z")
    )
    assert store.drawers.find_current_copy("w", "r", content_hash("same words")) is None


def test_a_rule_may_match_a_metadata_value_type_strictly(store: Store) -> None:
    def mined(document: str, metadata: dict[str, object]) -> str:
        origin = Origin(connector="notes", source_id="s", document=document, chunk=0, revision="r", metadata=metadata)
        new = NewDrawer(wing="w", room="r", content=f"harbour {document}", valid_from=PAST,
                        source=Source(kind="note", origin=origin))  # fmt: skip
        return store.drawers.add_drawer(new).id

    draft = mined("draft", {"status": "draft", "meta": {"rank": 2, "final": False}})
    one = mined("one", {"status": "1", "meta": {"rank": 2.0, "final": True}})
    other = mined("other", {"status": "final"})
    written = store.drawers.add_drawer(NewDrawer(wing="w", room="r", content="harbour by hand", valid_from=PAST)).id
    everything = {draft, one, other, written}

    def expired_by(path: str, equals: object) -> set[str]:
        store.lifecycle = Lifecycle((ExpiryRule(after=86400, path=tuple(path.split(".")), equals=equals),))  # type: ignore[arg-type]
        try:
            gone = everything - found(store, Scope())
            assert gone == {d for d in everything if store.drawers.get_drawer(d).closed_reason == EXPIRED}, (
                "read as in SQL"
            )
            return gone
        finally:
            store.lifecycle = Lifecycle()

    assert expired_by("status", "draft") == {draft}
    assert expired_by("status", 1) == set(), "the string 1 is not the number 1"
    assert expired_by("meta.rank", 2) == {draft, one}, "2 == 2.0 as JSON numbers"
    assert expired_by("meta.final", False) == {draft}
    assert expired_by("meta.final", True) == {one}
    assert expired_by("meta.missing", "x") == set()
