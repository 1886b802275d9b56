"""The schedule trigger with an injected clock: a miner that never ran runs at once, then every period after the
run it asked for; the last run the palace recorded counts after a restart; a burst of missed periods is one run."""

from __future__ import annotations

import datetime as dt

from memcastle.model import MinerSpec, MinerState
from memcastle.triggers.schedule import Schedule

START = dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> dt.datetime:
        return self.now


def spec(name: str, every: float) -> MinerSpec:
    return MinerSpec(name=name, connector="notes", locator="/tmp/x", every=every)


def test_a_schedule_fires_on_time() -> None:
    clock, asked = Clock(), []
    schedule = Schedule(lambda name, trigger: asked.append((name, trigger, clock.now)), clock=clock)
    schedule.follow({"notes": (spec("notes", 300), MinerState("notes"))})
    assert schedule.tick() == ["notes"], "never ran: at once"
    clock.now = START + dt.timedelta(seconds=299)
    assert schedule.tick() == []
    clock.now = START + dt.timedelta(seconds=300)
    assert schedule.tick() == ["notes"]
    assert schedule.next_due() == START + dt.timedelta(seconds=600)
    clock.now = START + dt.timedelta(hours=5)  # a machine that slept through many periods
    assert schedule.tick() == ["notes"] and schedule.tick() == [], "one run, not one per missed period"
    assert [a[1] for a in asked] == ["schedule"] * 3


def test_the_last_recorded_run_counts_and_a_miner_that_goes_is_forgotten() -> None:
    clock, asked = Clock(), []
    schedule = Schedule(lambda name, trigger: asked.append(name), clock=clock)
    ran = (START - dt.timedelta(seconds=200)).isoformat().replace("+00:00", "Z")
    schedule.follow(
        {
            "vault": (spec("vault", 300), MinerState("vault", last_run_at=ran)),
            "git": (spec("git", 60), MinerState("git")),
        }
    )
    assert schedule.tick() == ["git"], "vault ran 200 s ago: due in 100 s"
    clock.now = START + dt.timedelta(seconds=100)
    assert schedule.tick() == ["git", "vault"]
    schedule.follow({"git": (spec("git", 60), MinerState("git"))})
    clock.now = START + dt.timedelta(hours=1)
    assert schedule.tick() == ["git"]
