"""Agent memory (ADR 0005): a diary per agent, checkpoints of decisions and state, and the wake-up bundle."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from memcastle.errors import InvalidRequest
from memcastle.jobs.context import JobContext
from memcastle.model import Drawer, Scope
from memcastle.model.jobs import JobKind
from memcastle.model.requests import CheckpointItem, request_of
from memcastle.services.audit import Record, unrecorded
from memcastle.services.drawers import DEFAULT_WING, DIARY_ROOM, DrawerService
from memcastle.services.facts import FactService
from memcastle.services.idempotency import RequestKeys
from memcastle.services.reader import visibility
from memcastle.services.validation import (
    MAX_CHECKPOINT_ITEMS,
    MAX_LIMIT,
    check_content,
    check_limit,
    check_name,
    check_tags,
    require_name,
)
from memcastle.store import DrawerStore

CHECKPOINT_ROOM = "checkpoints"
CHECKPOINT_JOB = JobKind.CHECKPOINT.value  # the job kind of an emergency checkpoint
CHECKPOINT_TAG = "checkpoint"
# A checkpoint item tagged so is a project's decision: every agent's wake-up in that wing shows it, not only its
# author's (docs/agents.md).
DECISION_TAG = "decision"


@dataclass(frozen=True)
class CheckpointWrite:
    drawers: list[Drawer]
    replayed: bool  # answered from an earlier request with the same idempotency key; nothing was written


@dataclass(frozen=True)
class WakeUp:
    """The wake-up bundle: an agent's latest diary entry and recent checkpoints, and what the budget left out."""

    agent: str
    wing: str | None
    diary: tuple[Drawer, ...]
    checkpoints: tuple[Drawer, ...]
    bytes: int
    omitted: int
    pinned: tuple[Drawer, ...] = ()  # pinned drawers of the wing (and of no project): they come first
    decisions: tuple[Drawer, ...] = ()  # the wing's decisions, checkpointed by any agent: after the diary

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "wing": self.wing,
            "pinned": [d.to_json() for d in self.pinned],
            "diary": [d.to_json() for d in self.diary],
            "checkpoints": [d.to_json() for d in self.checkpoints],
            "decisions": [d.to_json() for d in self.decisions],
            "bytes": self.bytes,
            "omitted": self.omitted,
        }


class AgentService:
    """What an agent keeps between sessions."""

    def __init__(
        self,
        store: DrawerStore,
        drawers: DrawerService,
        facts: FactService,
        keys: RequestKeys,
        *,
        record: Record = unrecorded,
    ) -> None:
        self._store = store
        self._record = record
        self._keys = keys
        self._drawers = drawers
        self.facts = facts

    def write_diary(self, agent: str, content: str, *, wing: str | None = None, requested_by: str = "http") -> Drawer:
        """A diary entry: a drawer in room `diary`, keyed by the agent's identity."""
        agent = require_name(agent, "agent")
        drawer = self._drawers.save_note(
            content, wing=wing, room=DIARY_ROOM, agent=agent, requested_by=requested_by, kind="manual"
        ).drawer
        return drawer

    def read_diary(self, agent: str, *, wing: str | None = None, limit: int = 10) -> list[Drawer]:
        """The agent's diary entries, newest first."""
        scope = Scope(wing=check_name(wing, "wing"), room=DIARY_ROOM, agent=require_name(agent, "agent"))
        entries = self._store.latest_drawers(visibility().narrow(scope), check_limit(limit))
        self._record("diary", query=agent, drawer_ids=[d.id for d in entries])
        return entries

    def check_checkpoint(self, items: Sequence[CheckpointItem], *, agent: str | None = None) -> str | None:
        """Everything a checkpoint's write would refuse, refused now (an emergency checkpoint is checked before it
        is queued, so its job cannot fail on its input); the agent's name as checked."""
        agent = check_name(agent, "agent")
        if not items:
            raise InvalidRequest("items must not be empty", field="items")
        if len(items) > MAX_CHECKPOINT_ITEMS:
            raise InvalidRequest(
                f"at most {MAX_CHECKPOINT_ITEMS} items per checkpoint, not {len(items)}",
                field="items",
                help="send the rest in another checkpoint",
            )
        for index, item in enumerate(items):
            check_content(item.content, f"items[{index}].content")
            place = check_name(item.wing, f"items[{index}].wing") or DEFAULT_WING
            visibility().writable(place, check_name(item.room, f"items[{index}].room") or CHECKPOINT_ROOM)
            self._drawers.expiry(item.expires_at, field=f"items[{index}].expires_at")
            if item.fact is not None:
                try:
                    self.facts.check_spec(item.fact)
                except InvalidRequest as exc:
                    raise InvalidRequest(exc.message, field=f"items[{index}].fact.{exc.field}") from None
        return agent

    def checkpoint_job(self, ctx: JobContext) -> dict[str, Any]:
        """The `checkpoint` job of an emergency checkpoint: the write, once — a resumed job replays the first
        write's drawers through its own idempotency key instead of filing them twice."""
        params = ctx.params
        items = [request_of(CheckpointItem, item) for item in params["items"]]
        written = self.write_checkpoint(
            items,
            agent=params.get("agent"),
            idempotency_key=f"job:{ctx.job_id}",
            requested_by=str(params.get("requested_by", "job")),
        )
        return {"drawers": [d.id for d in written.drawers], "replayed": written.replayed}

    def checkpoint(
        self, items: Sequence[CheckpointItem], *, agent: str | None = None, requested_by: str = "http"
    ) -> list[Drawer]:
        """Save decisions and state as checkpoint drawers (tag `checkpoint`), all or nothing validated first."""
        agent = self.check_checkpoint(items, agent=agent)
        saved = []
        for item in items:
            tags = tuple(dict.fromkeys((*check_tags(item.tags), CHECKPOINT_TAG)))
            drawer = self._drawers.save_note(
                item.content,
                wing=item.wing,
                room=item.room or CHECKPOINT_ROOM,
                tags=tags,
                agent=agent,
                name=item.name,
                requested_by=requested_by,
                kind="manual",
                expires_at=item.expires_at,
            ).drawer
            if item.fact is not None:
                self.facts.add(replace(item.fact, evidence_drawer=drawer.id), requested_by=requested_by)
            saved.append(drawer)
        return saved

    def write_checkpoint(
        self,
        items: Sequence[CheckpointItem],
        *,
        agent: str | None = None,
        idempotency_key: str | None = None,
        requested_by: str = "http",
    ) -> CheckpointWrite:
        """`checkpoint` for an interface: with an idempotency key, a retry answers with the first write's drawers."""
        request = {"items": [item.to_json() for item in items], "agent": agent}

        def write() -> dict[str, Any]:
            saved = self.checkpoint(items, agent=agent, requested_by=requested_by)
            return {"drawer_ids": [d.id for d in saved]}

        result, replayed = self._keys.once(idempotency_key, "checkpoint", request, write)
        found = self._store.get_drawers(result["drawer_ids"])
        return CheckpointWrite([found[i] for i in result["drawer_ids"] if i in found], replayed)

    def _latest(self, scope: Scope, wing: str | None, limit: int) -> list[Drawer]:
        """The newest drawers of `scope` in the project `wing` and in no project (the default wing), when a wing is
        given; else in any wing. Each read follows an index and stops at `limit`. Only wings the client may read."""
        scope = visibility().narrow(scope)
        if wing is None:
            return self._store.latest_drawers(scope, limit)
        found = [
            drawer
            for place in dict.fromkeys((wing, DEFAULT_WING))
            for drawer in self._store.latest_drawers(replace(scope, wing=place), limit)
        ]
        return sorted(found, key=lambda drawer: drawer.created_at, reverse=True)[:limit]

    def _pinned(self, wing: str | None, limit: int) -> list[Drawer]:
        """The pinned drawers of the project `wing` and of no project (the default wing), or of every wing; only wings
        the client may read."""
        narrow = visibility().narrow
        if wing is None:
            return self._store.pinned_drawers(narrow(Scope()), limit)
        found = [
            d
            for place in dict.fromkeys((wing, DEFAULT_WING))
            for d in self._store.pinned_drawers(narrow(Scope(wing=place)), limit)
        ]
        return sorted(found, key=lambda drawer: drawer.created_at, reverse=True)[:limit]

    def wake_up(
        self, agent: str, *, wing: str | None = None, max_items: int = 10, max_bytes: int = 8192
    ) -> dict[str, Any]:
        """`wake_up_bundle` as the REST API answers it."""
        return self.wake_up_bundle(agent, wing=wing, max_items=max_items, max_bytes=max_bytes).to_json()

    def wake_up_bundle(
        self, agent: str, *, wing: str | None = None, max_items: int = 10, max_bytes: int = 8192
    ) -> WakeUp:
        """What an agent needs at the start of a session: the pinned drawers, its latest diary entry, its project's
        recent decisions (checkpoint items tagged `decision`, by any agent: with `wing` only) and its own most recent
        checkpoints — with `wing` (its project), those of that project and those in no project — trimmed by whole
        drawers to the budget, in that order."""
        agent = require_name(agent, "agent")
        if not 1 <= max_items <= MAX_LIMIT:
            raise InvalidRequest(f"max_items must be from 1 to {MAX_LIMIT}", field="max_items")
        if not 256 <= max_bytes <= 1_048_576:
            raise InvalidRequest("max_bytes must be from 256 to 1048576", field="max_bytes")
        wing = check_name(wing, "wing")
        pinned = self._pinned(wing, max_items)
        diary = self._latest(Scope(room=DIARY_ROOM, agent=agent), wing, 1)
        # The agent's own checkpoints only: one agent's saved state is not another's (nor a person's, who has none).
        checkpoints = self._latest(Scope(tags=(CHECKPOINT_TAG,), agent=agent), wing, max_items)
        # A project's decisions are every agent's: the next agent in the wing sees what the last one decided.
        decisions = (
            self._store.latest_drawers(
                visibility().narrow(Scope(tags=(CHECKPOINT_TAG, DECISION_TAG), wing=wing)), max_items
            )
            if wing is not None
            else []
        )
        chosen: list[Drawer] = []
        used = 0
        omitted = 0
        # Pinned drawers first: they always enter, before the diary and checkpoints, within the same budget.
        for drawer in {d.id: d for d in [*pinned, *diary, *decisions, *checkpoints]}.values():
            size = len(drawer.content.encode("utf-8"))
            if len(chosen) >= max_items or used + size > max_bytes:
                omitted += 1
                continue
            chosen.append(drawer)
            used += size
        self._record("wake_up", query=agent, drawer_ids=[d.id for d in chosen])
        return WakeUp(
            agent=agent,
            wing=wing,
            pinned=tuple(d for d in chosen if d.pinned),
            diary=tuple(d for d in chosen if d.room == DIARY_ROOM and d.source.agent == agent and not d.pinned),
            decisions=tuple(d for d in chosen if d.id in {x.id for x in decisions} and not d.pinned),
            checkpoints=tuple(
                d for d in chosen if CHECKPOINT_TAG in d.tags and not d.pinned and d.id not in {x.id for x in decisions}
            ),
            bytes=used,
            omitted=omitted,
        )
