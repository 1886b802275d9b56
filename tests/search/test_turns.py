"""Turns: a bounded number of holders, waiters served in arrival order, never overtaken by a newcomer."""

from __future__ import annotations

import threading
import time

import pytest

from memcastle.search.turns import Turns


def _wait_until(condition, ceiling: float = 30.0) -> None:
    deadline = time.monotonic() + ceiling
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.001)


def test_waiters_are_served_in_arrival_order_and_a_newcomer_queues_behind_them() -> None:
    turns = Turns(1)
    order: list[int] = []
    threads: list[threading.Thread] = []

    def take(number: int) -> None:
        with turns:
            order.append(number)

    with turns:
        for number in range(6):
            thread = threading.Thread(target=take, args=(number,))
            thread.start()
            threads.append(thread)
            _wait_until(lambda n=number: turns.waiting == n + 1)  # queued before the next one comes
    # Released: the slot goes to waiter 0, not to the thread that asks right now.
    late = threading.Thread(target=take, args=(99,))
    late.start()
    threads.append(late)
    for thread in threads:
        thread.join(30)
    assert order == [0, 1, 2, 3, 4, 5, 99]


def test_no_more_than_the_slots_hold_a_turn_at_once() -> None:
    turns = Turns(2)
    inside = 0
    most = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal inside, most
        for _ in range(50):
            with turns:
                with lock:
                    inside += 1
                    most = max(most, inside)
                time.sleep(0.0002)
                with lock:
                    inside -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert most == 2
    assert turns.waiting == 0


def test_a_turn_is_given_back_when_the_work_fails() -> None:
    turns = Turns(1)
    with pytest.raises(RuntimeError), turns:
        raise RuntimeError("search failed")
    with turns:  # would hang if the failed holder kept its slot
        pass
    with pytest.raises(ValueError, match="one slot"):
        Turns(0)
