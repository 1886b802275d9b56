"""The daemon's live events: job progress and state changes, trigger runs, drawer writes and forgets.

Any thread publishes; each subscriber (an event-stream client) reads from a bounded queue of its own, filled from
the publishing thread through its event loop, so publishing never waits for a client. A subscriber that falls
`SUBSCRIBER_BUFFER` events behind is dropped (its stream ends; a reconnect resumes). The last `HISTORY` events are
kept so that a client reconnecting with the id of the last event it saw gets what it missed; an id this daemon did
not give, or one older than the history, gets a `reset` event first, saying that it must read the state afresh.

Event ids are `<epoch>-<sequence>`: the epoch is the daemon's start, so an id from before a restart is recognized.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

HISTORY = 2048
SUBSCRIBER_BUFFER = 512
KINDS = ("job", "trigger", "drawers", "forget", "reset")


@dataclass(frozen=True)
class Event:
    id: str
    kind: str
    data: Mapping[str, Any]


class _Subscriber:
    def __init__(self, loop: asyncio.AbstractEventLoop, kinds: frozenset[str] | None) -> None:
        self.loop = loop
        self.kinds = kinds
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue(SUBSCRIBER_BUFFER)
        self.dropped = False

    def end(self) -> None:
        """On the subscriber's loop: no more events (what is queued is dropped, the stream finishes)."""
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(None)

    def offer(self, event: Event) -> None:
        """On the subscriber's loop: queue the event, or drop a subscriber that stopped reading."""
        if self.dropped:
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(None)


class EventBus:
    """Thread-safe publish; asynchronous subscribe (see the module's docstring)."""

    def __init__(self, *, history: int = HISTORY) -> None:
        self.epoch = str(int(time.time() * 1000))
        self._sequence = itertools.count(1)
        self._lock = threading.Lock()
        self._history: deque[Event] = deque(maxlen=history)
        self._evicted = 0  # the sequence number of the newest event that fell out of the history (0: none yet)
        self._subscribers: set[_Subscriber] = set()
        self.dropped = 0  # subscribers dropped for falling behind, since start
        self._closed = False

    def close(self) -> None:
        """End every subscription (the server stops serving): each stream finishes instead of holding the stop."""
        with self._lock:
            self._closed = True
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            try:
                subscriber.loop.call_soon_threadsafe(subscriber.end)
            except RuntimeError:  # its loop has closed: the client is gone
                self._forget(subscriber)

    def publish(self, kind: str, data: Mapping[str, Any]) -> Event:
        with self._lock:
            event = Event(f"{self.epoch}-{next(self._sequence)}", kind, dict(data))
            if len(self._history) == self._history.maxlen:
                self._evicted = _number(self._history[0])
            self._history.append(event)
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            if subscriber.kinds is None or kind in subscriber.kinds:
                try:
                    subscriber.loop.call_soon_threadsafe(subscriber.offer, event)
                except RuntimeError:  # its loop has closed: the client is gone
                    self._forget(subscriber)
        return event

    def purge(self, drawer_ids: Collection[str]) -> int:
        """Drop the kept events that name any of these drawers (they were forgotten); how many were dropped."""
        gone = set(drawer_ids)
        if not gone:
            return 0
        with self._lock:
            kept = deque(
                (e for e in self._history if not gone & {d.get("id") for d in e.data.get("drawers", ())}),
                maxlen=self._history.maxlen,
            )
            dropped = len(self._history) - len(kept)
            self._history = kept
        return dropped

    def _forget(self, subscriber: _Subscriber) -> None:
        with self._lock:
            self._subscribers.discard(subscriber)

    def _missed(self, last_id: str | None) -> tuple[list[Event], bool]:
        """Under the lock: the kept events after `last_id`, and whether some were lost (a `reset` is due)."""
        if last_id is None:
            return [], False
        epoch, _, number = last_id.partition("-")
        if epoch != self.epoch or not number.isdigit():
            return list(self._history), True
        seen = int(number)
        # A purge leaves gaps on purpose (the events of forgotten drawers): only what fell out of the history counts.
        return [e for e in self._history if _number(e) > seen], seen < self._evicted

    async def subscribe(
        self, *, last_id: str | None = None, kinds: frozenset[str] | None = None
    ) -> AsyncIterator[Event]:
        """The events from now on (after `last_id`'s when given), until the subscriber falls too far behind."""
        subscriber = _Subscriber(asyncio.get_running_loop(), kinds)
        with self._lock:
            missed, lost = self._missed(last_id)
            self._subscribers.add(subscriber)
        try:
            if lost:
                yield Event(f"{self.epoch}-0", "reset", {"reason": "events were missed; read the state afresh"})
            for event in missed:
                if kinds is None or event.kind in kinds:
                    yield event
            while not self._closed:
                queued = await subscriber.queue.get()
                if queued is None:
                    with self._lock:
                        self.dropped += 0 if self._closed else 1
                    return
                yield queued
        finally:
            self._forget(subscriber)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subscribers)


def _number(event: Event) -> int:
    return int(event.id.partition("-")[2])


class Changes:
    """A change that other parts follow (the miners', which the triggers follow): made before any of them, told of
    each change by the part that makes it, and followed by the others from their construction on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._followers: list[Callable[[], None]] = []

    def follow(self, follower: Callable[[], None]) -> None:
        with self._lock:
            self._followers.append(follower)

    def changed(self) -> None:
        with self._lock:
            followers = list(self._followers)
        for follower in followers:
            follower()
