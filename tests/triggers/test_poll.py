"""The poll trigger: a change check so often, over a real connector's change token on a real folder — a run asked
for when the folder changed, a back-off while it does not, and a miner with poll created disabled."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.model import MinerSpec, MinerState
from memcastle.triggers.poll import MAX_BACKOFF, Poller

START = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)


def test_a_poll_runs_on_a_change_and_backs_off_while_there_is_none(tmp_path: Path) -> None:
    folder = tmp_path / "polled"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nfirst\n", encoding="utf-8")
    flags = {"palace": str(tmp_path / "palace"), "embeddings.provider": "none", "mining.roots": [str(tmp_path)]}
    palace = build(load_settings(flags=flags, env={}, config_file=None))
    try:
        asked: list[tuple[str, str]] = []
        probe = lambda spec: palace.services.mining.change_token(spec.connector, spec.locator, spec.options)  # noqa: E731
        poller = Poller(lambda name, trigger, **_: asked.append((name, trigger)), probe, clock=lambda: START)
        spec = MinerSpec("notes", "notes", str(folder), poll=60.0)
        poller.follow({"notes": (spec, MinerState("notes", last_run_at=None))})

        assert poller.tick(START) == ["notes"]  # never ran: the first check asks for a run
        later = START
        periods = []
        for _ in range(5):  # nothing changes: each check waits twice as long, up to the bound
            later += dt.timedelta(seconds=poller.period("notes") or 0)
            assert poller.tick(later) == []
            periods.append(poller.period("notes"))
        assert periods == [120.0, 240.0, 480.0, 60.0 * MAX_BACKOFF, 60.0 * MAX_BACKOFF]
        assert poller.tick(later + dt.timedelta(seconds=1)) == []  # not due yet

        (folder / "b.md").write_text("# B\n\nsecond\n", encoding="utf-8")  # a new file: the token changes
        later += dt.timedelta(seconds=60.0 * MAX_BACKOFF)
        assert poller.tick(later) == ["notes"] and poller.period("notes") == 60.0  # back to the period
        stamp = os.stat(folder / "a.md").st_mtime + 5
        os.utime(folder / "a.md", (stamp, stamp))  # an edit
        assert poller.tick(later + dt.timedelta(seconds=60)) == ["notes"]
        assert asked == [("notes", "poll")] * 3
    finally:
        palace.stop()


def test_a_miner_with_a_poll_or_a_webhook_is_created_disabled(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[[miners]]\nname = "polled"\nconnector = "notes"\nlocator = "{tmp_path}"\npoll = "5m"\n'
        f'[[miners]]\nname = "plain"\nconnector = "notes"\nlocator = "{tmp_path}"\n',
        encoding="utf-8",
    )
    flags = {"palace": str(tmp_path / "palace"), "embeddings.provider": "none", "mining.roots": [str(tmp_path)]}
    palace = build(load_settings(flags=flags, env={}, config_file=config))
    try:
        miners: dict[str, Any] = palace.services.miners.effective()
        assert miners["polled"][1].enabled is False and miners["plain"][1].enabled is True
        palace.services.miners.run("polled")  # a person may run it by hand: that does not enable it
        assert palace.services.miners.effective()["polled"][1].enabled is False
    finally:
        palace.stop()


def test_poll_and_webhook_settings_are_checked(tmp_path: Path) -> None:
    import pytest

    from memcastle.errors import ConfigError

    cases = (
        ('poll = "5s"', "poll"),
        ('webhook = "hmac"', "secret_env"),
        ('webhook = "magic"\nsecret_env = "X"', "webhook"),
        ('secret_env = "X"', "secret_env"),
    )
    for extra, key in cases:
        config = tmp_path / "config.toml"
        config.write_text(f'[[miners]]\nname = "m"\nconnector = "notes"\nlocator = "{tmp_path}"\n{extra}\n')
        with pytest.raises(ConfigError) as refused:
            build(load_settings(flags={"palace": str(tmp_path / "p")}, env={}, config_file=config))
        assert refused.value.key == f"miners[0].{key}", extra
