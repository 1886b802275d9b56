"""Mining records and configured miners: sources, documents, a document's changes, `[[miners]]` entries."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memcastle.model.drawers import NewDrawer
from memcastle.model.graph import NearKeys


@dataclass(frozen=True)
class DocumentRecord:
    """What the palace remembers of one source document: its revision and the drawer of each chunk."""

    source_id: str
    external_id: str
    revision: str
    chunk_hashes: tuple[str, ...]
    drawer_ids: tuple[str, ...]
    updated_at: str


@dataclass(frozen=True)
class SourceRecord:
    """A mined source: connector + locator + options, and the cursor discovery resumes from."""

    id: str
    connector: str
    locator: str
    options: Mapping[str, str]
    cursor: str | None
    updated_at: str


@dataclass(frozen=True)
class DocumentChanges:
    """Everything one document's mining writes, applied by the store in a single transaction."""

    source: SourceRecord
    record: DocumentRecord
    created: tuple[NewDrawer, ...] = ()
    superseded: tuple[tuple[str, NewDrawer], ...] = ()  # (old drawer id, replacement)
    invalidated: tuple[str, ...] = ()
    at: str | None = None
    near: tuple[NearKeys, ...] = ()  # what finds the new drawers' copies, filed with them (linked later, in a batch)
    # (current correction's id, the source's new text): a line an agent or person corrected changed at its source
    # again; the new text is filed as a closed version beside the correction, never over it (ADR 0044).
    candidates: tuple[tuple[str, NewDrawer], ...] = ()


DEFAULT_DEBOUNCE = 1.6  # seconds without a change before a watched source is mined (watchfiles' own default)
MIN_EVERY = 10.0  # the shortest schedule: a mine more often than this is a watch
MAX_DEBOUNCE = 600.0
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """Seconds from `"90s"`, `"5m"`, `"2h"`, `"1d"`, `"500ms"` or a number of seconds; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("a duration, not true or false")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (found := _DURATION.match(value)):
        seconds = float(found.group(1)) * _UNITS[found.group(2) or "s"]
    else:
        raise ValueError(f'a duration such as "30s", "5m", "2h" or "1d", not {value!r}')
    if seconds <= 0:
        raise ValueError("a duration must be positive")
    return seconds


WEBHOOK_KINDS = ("hmac", "token")
MIN_POLL = 30.0  # a poll is a change check; more often than this, a watch is what is wanted


def check_triggers(poll: Any, webhook: Any, secret_env: Any, fail: Callable[[str, str], Exception]) -> tuple[
    float | None, str | None, str | None
]:  # fmt: skip
    """`poll`, `webhook` and `secret_env` of a miner checked alike wherever it is defined; `fail(key, message)`
    makes the error that names where."""
    seconds = None
    if poll is not None:
        try:
            seconds = parse_duration(poll)
        except ValueError as exc:
            raise fail("poll", str(exc)) from None
        if seconds < MIN_POLL:
            raise fail("poll", f"at least {MIN_POLL:.0f} s (use watch = true to mine on every change)")
    if webhook is not None and webhook not in WEBHOOK_KINDS:
        raise fail("webhook", f"one of {', '.join(WEBHOOK_KINDS)}, not {webhook!r}")
    if webhook is not None and not (isinstance(secret_env, str) and secret_env.strip()):
        raise fail("secret_env", "a webhook needs the name of the environment variable holding its secret")
    if secret_env is not None and webhook is None:
        raise fail("secret_env", "only a webhook has a secret")
    return seconds, webhook, secret_env.strip() if isinstance(secret_env, str) else None


@dataclass(frozen=True)
class MinerSpec:
    """A named miner: a connector, a locator, options and a wing, to mine again by name; its triggers (`watch`: a
    run when the source's files change, after `debounce` quiet seconds; `every`: a run every so many seconds), and
    where it was defined (`origin`: the config file, or the API, which keeps it in the palace)."""

    name: str
    connector: str
    locator: str
    options: Mapping[str, str] = field(default_factory=dict)
    wing: str | None = None
    full: bool = False
    watch: bool = False
    debounce: float = DEFAULT_DEBOUNCE
    every: float | None = None
    origin: str = "config"
    # `poll`: a cheap change check so often (backing off while nothing changes), a run when it sees one;
    # `webhook`: `POST /hooks/{name}` asks for a run, verified by an HMAC-SHA256 signature (`hmac`) or a token
    # (`token`) whose secret is in the daemon's environment variable `secret_env` (never in a file or the palace).
    poll: float | None = None
    webhook: str | None = None
    secret_env: str | None = None

    @property
    def created_disabled(self) -> bool:
        """A miner that something outside asks to run (a poll, a webhook) starts disabled: a person enables it."""
        return self.poll is not None or self.webhook is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "connector": self.connector,
            "locator": self.locator,
            "options": dict(self.options),
            "wing": self.wing,
            "full": self.full,
            "watch": self.watch,
            "debounce": self.debounce,
            "every": self.every,
            "origin": self.origin,
            "poll": self.poll,
            "webhook": self.webhook,
            "secret_env": self.secret_env,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MinerSpec:
        return cls(
            name=data["name"],
            connector=data["connector"],
            locator=data["locator"],
            options=dict(data.get("options") or {}),
            wing=data.get("wing"),
            full=bool(data.get("full", False)),
            watch=bool(data.get("watch", False)),
            debounce=float(data.get("debounce", DEFAULT_DEBOUNCE)),
            every=float(data["every"]) if data.get("every") is not None else None,
            origin=str(data.get("origin", "api")),
            poll=float(data["poll"]) if data.get("poll") is not None else None,
            webhook=data.get("webhook"),
            secret_env=data.get("secret_env"),
        )


@dataclass(frozen=True)
class MinerState:
    """What the palace keeps of a miner: whether it is enabled, the last run a trigger or a person asked for."""

    name: str
    enabled: bool = True
    last_job_id: str | None = None
    last_run_at: str | None = None
    last_trigger: str | None = None
    spec: MinerSpec | None = None  # a miner defined through the API; None for the state of a config file's miner
