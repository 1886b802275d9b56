"""Idempotency keys behave the same on both backends: one claim wins, a finished request is replayed, an abandoned
claim is taken over, a release lets the key go, and a day-old key expires."""

from __future__ import annotations

import threading

from memcastle.store import Store

T0, T1, T2, T3 = "2026-11-01T10:00:00Z", "2026-11-01T10:05:00Z", "2026-11-01T10:30:00Z", "2026-11-03T10:00:00Z"
BEFORE = "2026-10-01T00:00:00Z"


def claim(store: Store, key: str, now: str, *, stale_before: str = BEFORE, expire_before: str = BEFORE) -> object:
    return store.request_keys.claim_request_key(
        key, "note", "digest", now=now, stale_before=stale_before, expire_before=expire_before
    )


def test_the_first_claim_wins_and_the_finished_result_is_returned_after(store: Store) -> None:
    assert claim(store, "k", T0) is None
    pending = claim(store, "k", T1)
    assert pending is not None and pending.state == "pending" and pending.result is None  # type: ignore[attr-defined]
    store.request_keys.complete_request_key("k", {"drawer_ids": ["d1"], "created": True})
    done = claim(store, "k", T1)
    assert done is not None and done.state == "done"  # type: ignore[attr-defined]
    assert done.result == {"drawer_ids": ["d1"], "created": True}  # type: ignore[attr-defined]


def test_an_abandoned_claim_is_taken_over_and_a_released_one_is_free(store: Store) -> None:
    assert claim(store, "a", T0) is None
    assert claim(store, "a", T2, stale_before=T1) is None  # claimed at T0, older than T1: taken over
    store.request_keys.release_request_key("a")
    assert claim(store, "a", T2) is None


def test_keys_older_than_the_expiry_are_forgotten(store: Store) -> None:
    assert claim(store, "old", T0) is None
    store.request_keys.complete_request_key("old", {"drawer_ids": []})
    assert claim(store, "old", T3, expire_before=T2) is None


def test_concurrent_claims_of_one_key_have_one_winner(store: Store) -> None:
    results: list[object] = []
    lock = threading.Lock()

    def attempt() -> None:
        outcome = claim(store, "race", T0)
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=attempt) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(1 for r in results if r is None) == 1
