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


def test_every_rfc_3339_form_is_read_and_stored_at_a_fixed_width() -> None:
    from memcastle.clock import parse_instant, to_datetime

    assert parse_instant("1990-12-31T23:59:60Z") == "1990-12-31T23:59:59.999999Z"  # a leap second
    assert parse_instant("0500-06-01t10:00:00z") == "0500-06-01T10:00:00.000000Z"
    # Offsets that cross year 1 or 9999 in UTC stop at the edge of time instead of failing.
    assert parse_instant("0001-01-01T00:00:00+01:00") == "0001-01-01T00:00:00.000000Z"
    assert parse_instant("9999-12-31T23:59:59-01:00") == "9999-12-31T23:59:59.999999Z"
    stamps = [parse_instant(s) for s in ("0999-01-01", "1000-01-01", "2026-01-31T12:00:00+02:00")]
    assert stamps == sorted(stamps) and len({len(s) for s in stamps}) == 1
    assert to_datetime(stamps[0]).year == 999
