"""The test clock the palaces of the suite are built with."""

from __future__ import annotations

import threading

from clocks import DistinctClock


def test_readings_are_strictly_increasing_even_across_threads() -> None:
    clock = DistinctClock()
    readings: list[str] = []

    def read() -> None:
        readings.extend(clock() for _ in range(500))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(readings)) == len(readings) == 2000
