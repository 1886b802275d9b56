"""The expiry trigger asks for the erase job at start and then every period, and survives a failed request."""

from __future__ import annotations

import threading

from waiting import wait_until

from memcastle.triggers.expiry import ExpiryTimer


def test_the_timer_asks_at_start_then_every_period_and_stops() -> None:
    asked = threading.Semaphore(0)
    calls: list[int] = []

    def request() -> None:
        calls.append(1)
        asked.release()
        if len(calls) == 2:
            raise RuntimeError("the queue is busy")  # logged; the next period asks again

    timer = ExpiryTimer(request, period=0.01)
    timer.start()
    try:
        wait_until(lambda: len(calls) >= 3, what="three requests, one of them failing")
    finally:
        timer.stop()
    seen = len(calls)
    assert not timer._thread or not timer._thread.is_alive()
    assert len(calls) == seen, "nothing is asked once stopped"
