"""Drawers at the service seam: notes, supersession with a reason, history, listings, copies, preference traces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from memcastle.clock import Clock, utc_now
from memcastle.connectors.secrets import Redactor
from memcastle.errors import InvalidRequest, NotFound
from memcastle.knowledge.dedup import DuplicateFinder
from memcastle.model import Drawer, NewDrawer, Page, Provenance, Room, Source, Wing, content_hash
from memcastle.model.answers import Duplicate, PreferenceTrace
from memcastle.model.requests import NoteFields
from memcastle.preferences import Policy, explain
from memcastle.services.audit import Record, unrecorded
from memcastle.services.events import Publish, drawer_ref, filed_event, ignore_event
from memcastle.services.idempotency import RequestKeys
from memcastle.services.ids import resolve_id
from memcastle.services.jobs import JobService
from memcastle.services.reader import reader, visibility
from memcastle.services.validation import check_content, check_expiry, check_limit, check_name, check_tags
from memcastle.store import Store

DEFAULT_WING = "default"
NOTES_ROOM = "notes"
DIARY_ROOM = "diary"


@dataclass(frozen=True)
class NoteWrite:
    """A note written, or the copy already filed (`created` false), or a replayed retry's drawer."""

    drawer: Drawer
    created: bool
    replayed: bool  # answered from an earlier request with the same idempotency key; nothing was written


class DrawerService:
    """Manual writes and reads of drawers; every write is linked to its copies and swept in the background."""

    def __init__(
        self,
        store: Store,
        jobs: JobService,
        duplicates: DuplicateFinder,
        policy: Policy,
        keys: RequestKeys,
        publish: Publish = ignore_event,
        *,
        now: Clock = utc_now,
        record: Record = unrecorded,
    ) -> None:
        self._store = store
        self._record = record
        self._now = now
        self._publish = publish
        self._jobs = jobs
        self._duplicates = duplicates
        self._policy = policy
        self._redactor = Redactor()
        self._keys = keys

    def _after_write(self, drawer: Drawer, supersedes: str | None = None) -> None:
        self._duplicates.link(drawer)
        self._jobs.request_sweeps()
        self._publish("drawers", filed_event([drawer], supersedes=supersedes))

    def save_note(
        self, content: str, *, requested_by: str = "http", kind: str = "note", **fields: Unpack[NoteFields]
    ) -> NoteWrite:
        """File a manual note; an unnamed exact copy in the same room returns the existing drawer instead.
        Credentials in the text are redacted, as in mined text."""
        check_content(content)
        content = self._redactor.text(content).text
        wing = check_name(fields.get("wing"), "wing") or DEFAULT_WING
        room = check_name(fields.get("room"), "room") or NOTES_ROOM
        visibility().writable(wing, room)
        # A name and tags are stored and shown like the text: a token pasted there is redacted too.
        tags = tuple(dict.fromkeys(self._redactor.text(tag).text for tag in check_tags(fields.get("tags", ()))))
        agent = check_name(fields.get("agent"), "agent")
        named = check_name(fields.get("name"), "name")
        name = self._redactor.text(named).text if named is not None else None
        expires_at = check_expiry(fields.get("expires_at"), self._now())
        if name is None:
            # A diary is one agent's: the same words from another agent are that agent's own entry.
            existing = self._store.drawers.find_current_copy(
                wing, room, content_hash(content), agent if room == DIARY_ROOM else None
            )
            if existing is not None:
                return NoteWrite(existing, created=False, replayed=False)
        drawer = self._store.drawers.add_drawer(
            NewDrawer(
                wing=wing,
                room=room,
                content=content,
                name=name,
                tags=tags,
                source=Source(kind=kind, agent=agent),
                provenance=Provenance(requested_by=requested_by),
                expires_at=expires_at,
            )
        )
        self._after_write(drawer)
        return NoteWrite(drawer, created=True, replayed=False)

    def write_note(
        self,
        content: str,
        *,
        idempotency_key: str | None = None,
        requested_by: str = "http",
        **fields: Unpack[NoteFields],
    ) -> NoteWrite:
        """`save_note` for an interface: with an idempotency key, a retry answers with the first write's drawer."""
        given = {name: fields.get(name) for name in NoteFields.__annotations__}
        request = {"content": content, **given, "tags": list(fields.get("tags", ()))}

        def write() -> dict[str, Any]:
            saved = self.save_note(content, requested_by=requested_by, **fields)
            return {"drawer_ids": [saved.drawer.id], "created": saved.created}

        result, replayed = self._keys.once(idempotency_key, "note", request, write)
        return NoteWrite(self._store.drawers.get_drawer(result["drawer_ids"][0]), bool(result["created"]), replayed)

    def expiry(self, value: str | None, *, field: str = "expires_at") -> str | None:
        """`value` as the instant a drawer would expire (an instant, or a duration from now), or a 400 naming the
        field."""
        return check_expiry(value, self._now(), field)

    def mark(self, drawer_id: str, *, pinned: bool | None = None, hidden: bool | None = None) -> Drawer:
        """Pin or unpin, hide or show a drawer (by id or unique prefix); its later versions keep the marks."""
        if pinned is None and hidden is None:
            raise InvalidRequest("say what to change: pinned, hidden or both", field="pinned")
        found = self._visible(drawer_id)
        visibility().writable(found.wing, found.room)
        drawer = self._store.drawers.mark_drawer(found.id, pinned=pinned, hidden=hidden)
        self._publish("drawers", {"action": "marked", "drawers": [drawer_ref(drawer)], "pinned": drawer.pinned,
                                  "hidden": drawer.hidden})  # fmt: skip
        return drawer

    def resolve(self, drawer_id: str, *, field: str = "drawer_id") -> str:
        """The whole id a drawer id or unique prefix of it stands for (`memcastle.services.ids`), among the drawers
        the client may see."""
        seen = visibility()
        visible = None if seen.reads_everything else self.readable_ids
        return resolve_id(self._store, "drawer", drawer_id, field=field, visible=visible)

    def readable_ids(self, drawer_ids: Sequence[str]) -> set[str]:
        """Those of the drawers in wings the client may read."""
        seen = visibility()
        places = self._store.search.drawer_places(drawer_ids)
        return {i for i, place in places.items() if seen.can_read(place.wing, place.room)}

    def _visible(self, drawer_id: str) -> Drawer:
        """The drawer (by id or unique prefix); outside the client's scope it does not exist."""
        drawer = self._store.drawers.get_drawer(self.resolve(drawer_id))
        visibility().readable(drawer.wing, f"drawer {drawer_id}", drawer.room)
        return drawer

    def get_drawer(self, drawer_id: str) -> Drawer:
        """A drawer read whole (recorded in the read audit)."""
        drawer = self._visible(drawer_id)
        self._record("drawer", drawer_ids=[drawer.id])
        return drawer

    def drawer_history(self, drawer_id: str) -> list[Drawer]:
        versions = self._store.drawers.drawer_history(self._visible(drawer_id).id)
        self._record("history", drawer_ids=[d.id for d in versions])
        return versions

    def supersede_drawer(
        self,
        drawer_id: str,
        content: str,
        *,
        reason: str | None = None,
        requested_by: str = "http",
        agent: str | None = None,
    ) -> Drawer:
        check_content(content)
        agent = check_name(agent, "agent")
        content = self._redactor.text(content).text
        if reason is not None and not reason.strip():
            raise InvalidRequest("reason must not be blank when given", field="reason")
        old = self._visible(drawer_id)
        drawer_id = old.id
        visibility().writable(old.wing, old.room)
        # The correction stands in the same line of evidence: it keeps the origin (connector, document, lines, the
        # metadata snapshot its preference resolves from); its author is whoever corrected it (ADR 0044): the agent
        # that says who it is, else the MCP client's name or the token's.
        author = agent or reader().client or reader().token or old.source.agent
        replacement = self._store.drawers.supersede_drawer(
            drawer_id,
            NewDrawer(
                wing=old.wing,
                room=old.room,
                content=content,
                name=old.name,
                tags=old.tags,
                source=Source(kind=old.source.kind, uri=old.source.uri, agent=author, origin=old.source.origin),
                provenance=Provenance(requested_by=requested_by, reason=reason),
                expires_at=old.expires_at,
            ),
        )
        self._after_write(replacement, supersedes=drawer_id)
        return replacement

    def invalidate_drawer(self, drawer_id: str, *, reason: str) -> Drawer:
        """Close a current drawer with no replacement — it was wrong, and nothing replaces it. It stays in its
        history (time travel still finds it), `closed_reason` says why; searches of now no longer return it."""
        if not reason.strip():
            raise InvalidRequest("say why the drawer is invalid: reason must not be blank", field="reason")
        old = self._visible(drawer_id)
        visibility().writable(old.wing, old.room)
        closed = self._store.drawers.invalidate_drawer(old.id, f"invalidated: {self._redactor.text(reason).text}")
        self._publish("drawers", {"action": "invalidated", "drawers": [drawer_ref(closed)]})
        return closed

    def preference_trace(self, drawer_id: str) -> PreferenceTrace:
        """How the effective policy resolves this drawer, from its frozen origin snapshot."""
        drawer = self._visible(drawer_id)
        return PreferenceTrace(drawer.id, explain(self._policy, drawer.source.origin))

    def list_wings(self) -> list[Wing]:
        seen = visibility()
        return [w for w in self._store.drawers.list_wings() if seen.sees_wing(w.name)]

    def wing_names(self) -> list[str]:
        seen = visibility()
        return [w for w in self._store.drawers.wing_names() if seen.sees_wing(w)]

    def list_rooms(self, wing: str) -> list[Room]:
        seen = visibility()
        if not seen.sees_wing(wing):
            raise NotFound(f"no wing {wing!r}")
        return [r for r in self._store.drawers.list_rooms(wing) if seen.can_read(wing, r.name)]

    def list_drawers(self, wing: str | None, room: str | None, limit: int, after: str | None) -> Page[Drawer]:
        seen = visibility()
        if wing is None and not seen.reads_everything:
            raise InvalidRequest(f"this token reads only {seen.describe()}: name a wing", field="wing")
        if wing is not None and not seen.sees_wing(wing):
            raise NotFound(f"no wing {wing!r}")
        if wing is not None and not seen.can_read(wing, room):
            if room is not None:
                raise NotFound(f"no room {room!r} in wing {wing!r}")
            raise InvalidRequest(f"this token reads only {seen.describe()}: name a room of {wing!r}", field="room")
        return self._store.drawers.list_drawers(wing, room, check_limit(limit), after)

    def duplicates(self, drawer_id: str) -> list[Duplicate]:
        """Drawers linked to this one as exact, normalized or near copies (linked, never merged)."""
        drawer_id = self._visible(drawer_id).id
        links = self._store.near.drawer_links(drawer_id)
        others = self._store.drawers.get_drawers([lk.to_id if lk.from_id == drawer_id else lk.from_id for lk in links])
        out = []
        for link in links:
            other = others.get(link.to_id if link.from_id == drawer_id else link.from_id)
            if other is not None and visibility().can_read(other.wing, other.room):
                out.append(Duplicate(other, link.verdict, link.similarity, link.created_at))
        self._record("duplicates", drawer_ids=[d.drawer.id for d in out])
        return out
