"""Fixtures for the source-preference tests: real palaces (real SQLite in temp dirs, real worker pool) that can be
built, mined, given a policy and rebuilt, the way a daemon restart rebuilds them."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from clocks import DistinctClock

from memcastle.app import Palace, build
from memcastle.config import Settings, load_settings
from memcastle.config.layers import PALACE_FILE
from memcastle.model import Drawer, SearchResult
from memcastle.model.requests import MineRequest
from memcastle.services import SearchRequest


def write_notes(folder: Path, notes: Mapping[str, tuple[Mapping[str, Any], str]]) -> Path:
    """Write Markdown notes `{name: (front matter, body)}` into `folder` (front matter as YAML)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (front, body) in notes.items():
        header = f"---\n{yaml.safe_dump(dict(front), sort_keys=False)}---\n" if front else ""
        (folder / name).write_text(header + body + "\n", encoding="utf-8")
    return folder


@dataclass
class Bench:
    """Builds palaces under one temp dir, each from the same kind of settings a daemon would read."""

    root: Path
    running: list[Palace] = field(default_factory=list)

    def settings(
        self, name: str = "palace", *, config: str | None = None, flags: Mapping[str, Any] | None = None
    ) -> Settings:
        """Embeddings are off unless `flags` turn them on, so no test waits on a model."""
        config_file = None
        if config is not None:
            config_file = self.root / f"{name}-config.toml"
            config_file.write_text(config, encoding="utf-8")
        return load_settings(
            flags={
                "palace": str(self.root / name),
                "embeddings.provider": "none",
                "jobs.drain_seconds": 3.0,
                **(flags or {}),
            },
            env={},
            config_file=config_file,
        )

    def write_policy(self, name: str, preferences: str | None) -> None:
        """Write (or, for None, remove) `<palace>/preferences.toml`."""
        path = self.root / name / PALACE_FILE
        if preferences is None:
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(preferences, encoding="utf-8")

    def open(
        self,
        name: str = "palace",
        *,
        preferences: str | None = None,
        config: str | None = None,
        flags: Mapping[str, Any] | None = None,
    ) -> Palace:
        """Build and start a palace, with `preferences` as its palace-local preferences.toml."""
        self.write_policy(name, preferences)
        palace = build(self.settings(name, config=config, flags=flags), now=DistinctClock())
        palace.start()
        self.running.append(palace)
        return palace

    def restart(self, palace: Palace, *, preferences: str | None = None) -> Palace:
        """Stop the palace, replace its preferences.toml, and build it again (what a daemon restart does)."""
        self.stop(palace)
        self.write_policy(palace.settings.palace.name, preferences)
        rebuilt = build(palace.settings, now=DistinctClock())
        rebuilt.start()
        self.running.append(rebuilt)
        return rebuilt

    def stop(self, palace: Palace) -> None:
        if palace in self.running:
            self.running.remove(palace)
            palace.stop()

    def notes(self, folder: str, notes: Mapping[str, tuple[Mapping[str, Any], str]]) -> Path:
        """Write Markdown notes `{name: (front matter, body)}` into `<root>/<folder>`."""
        return write_notes(self.root / folder, notes)

    @staticmethod
    def mine(
        palace: Palace, connector: str, locator: Path | str, *, wing: str, timeout: float = 20.0
    ) -> dict[str, Any]:
        """Run a real mine job to completion and return its result."""
        job = palace.services.mining.submit_mine(MineRequest(connector, str(locator), {}, wing=wing)).job
        deadline = time.monotonic() + timeout
        while not (job := palace.services.jobs.get_job(job.id)).is_finished:
            if time.monotonic() > deadline:
                raise AssertionError(f"mine job {job.id} did not finish: {job}")
            time.sleep(0.01)
        assert job.status.value == "completed", job.error
        assert job.result is not None
        return dict(job.result)

    @staticmethod
    def search(palace: Palace, query: str, **fields: Any) -> SearchResult:
        return palace.services.search.search(SearchRequest(query=query, **fields))

    @staticmethod
    def drawers(palace: Palace, wing: str) -> dict[str | None, Drawer]:
        """The current drawers of a wing, keyed by name."""
        return {d.name: d for d in palace.services.drawers.list_drawers(wing, None, 200, None).items}

    def close(self) -> None:
        while self.running:
            self.running.pop().stop()


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    made = Bench(root=tmp_path / "palaces")
    made.root.mkdir()
    yield made
    made.close()
