"""The event bus: publishing never waits for a subscriber, a slow one is dropped, a reconnect resumes after the last
event it saw (a `reset` first when some were missed), and a forget purges the kept events that named its drawers."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from memcastle import events
from memcastle.events import Event, EventBus


async def take(stream: object, count: int) -> list[Event]:
    got: list[Event] = []
    async for event in stream:  # type: ignore[attr-defined]
        got.append(event)
        if len(got) == count:
            break
    return got


def test_events_published_from_another_thread_arrive_in_order() -> None:
    bus = EventBus()

    async def scenario() -> list[Event]:
        stream = bus.subscribe()
        reading = asyncio.ensure_future(take(stream, 50))
        await asyncio.sleep(0)  # the subscriber is registered once the generator starts
        while bus.subscribers == 0:
            await asyncio.sleep(0.001)
        writer = threading.Thread(target=lambda: [bus.publish("job", {"n": i}) for i in range(50)])
        writer.start()
        got = await asyncio.wait_for(reading, 30)
        writer.join()
        return got

    got = asyncio.run(scenario())
    assert [e.data["n"] for e in got] == list(range(50))
    assert len({e.id for e in got}) == 50 and all(e.id.startswith(bus.epoch + "-") for e in got)


def test_a_reconnect_resumes_after_the_last_event_seen() -> None:
    bus = EventBus()
    first = [bus.publish("job", {"n": i}) for i in range(5)]

    async def scenario() -> list[Event]:
        return await take(bus.subscribe(last_id=first[1].id), 3)

    assert [e.data["n"] for e in asyncio.run(scenario())] == [2, 3, 4]


def test_an_unknown_or_too_old_id_gets_a_reset_first() -> None:
    bus = EventBus(history=3)
    sent = [bus.publish("job", {"n": i}) for i in range(6)]

    async def scenario(last: str) -> list[Event]:
        return await take(bus.subscribe(last_id=last), 4)

    stale = asyncio.run(scenario(sent[0].id))  # events 1 and 2 fell out of the history
    assert stale[0].kind == "reset" and [e.data["n"] for e in stale[1:]] == [3, 4, 5]
    other = asyncio.run(scenario("1700000000000-4"))  # a daemon that has since restarted
    assert other[0].kind == "reset" and [e.data["n"] for e in other[1:]] == [3, 4, 5]


def test_a_subscriber_that_stops_reading_is_dropped_and_never_slows_publishing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "SUBSCRIBER_BUFFER", 8)
    bus = EventBus()

    async def scenario() -> tuple[list[Event], float]:
        stream = bus.subscribe()
        first = asyncio.ensure_future(take(stream, 1))
        while bus.subscribers == 0:
            await asyncio.sleep(0.001)
        bus.publish("job", {"n": -1})
        await first  # reading started, then stops: the subscriber now lags
        started = time.perf_counter()
        for i in range(10_000):
            bus.publish("job", {"n": i})
        spent = time.perf_counter() - started
        await asyncio.sleep(0.05)  # let the loop deliver what was queued to it
        rest = [e async for e in stream]  # ends: the subscriber was dropped
        return rest, spent

    rest, spent = asyncio.run(scenario())
    assert rest == [], "a dropped subscriber's stream ends instead of delivering a partial backlog"
    assert bus.dropped == 1 and bus.subscribers == 0
    assert spent < 10.0, "publishing does not wait for subscribers"


def test_kinds_filter_and_a_forget_purges_what_named_its_drawers() -> None:
    bus = EventBus()
    bus.publish("drawers", {"action": "filed", "drawers": [{"id": "a"}, {"id": "b"}]})
    kept = bus.publish("drawers", {"action": "filed", "drawers": [{"id": "c"}]})
    bus.publish("job", {"id": "j"})
    assert bus.purge(["b"]) == 1

    async def scenario() -> list[Event]:
        return await take(bus.subscribe(last_id=f"{bus.epoch}-0", kinds=frozenset({"drawers"})), 1)

    assert [e.id for e in asyncio.run(scenario())] == [kept.id]


def test_closing_the_bus_ends_every_stream_without_counting_a_drop() -> None:
    """A server that stops serving must not wait on open event streams (a browser's page holds one)."""
    bus = EventBus()

    async def follow() -> list[str]:
        seen = []
        async for event in bus.subscribe():
            seen.append(event.kind)
        return seen

    async def scenario() -> list[str]:
        task = asyncio.create_task(follow())
        while bus.subscribers == 0:
            await asyncio.sleep(0.001)
        bus.publish("job", {"id": "a"})
        await asyncio.sleep(0.01)
        threading.Thread(target=bus.close).start()  # from another thread, as a server's stop does
        return await asyncio.wait_for(task, 5.0)

    assert asyncio.run(scenario()) == ["job"]
    assert (bus.subscribers, bus.dropped) == (0, 0)
