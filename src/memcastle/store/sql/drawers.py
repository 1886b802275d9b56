"""Drawers, wings and rooms on either SQL backend: supersession, reads, eligibility, embedding bookkeeping."""

from __future__ import annotations

import dataclasses
import functools
import uuid
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from memcastle.clock import parse_instant
from memcastle.errors import Conflict, NotFound
from memcastle.model import (
    Drawer,
    NewDrawer,
    Page,
    PlaceTotals,
    Provenance,
    Room,
    Scope,
    Wing,
    content_hash,
    fingerprint,
)
from memcastle.store.sql.base import Role, Row, Tx, batches, dumps, marks
from memcastle.store.sql.filters import expiry_sql, filter_sql, rule_sql, scope_sql
from memcastle.store.sql.rows import DRAWER_SELECT, drawer_from_row

_PLACED = "FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id"


class NameTaken(Exception):
    """Raised by a backend's drawer insert when the room already has a current drawer of that name."""


def replayed(drawer_id: str, stored_hash: str, new_hash: str) -> str:
    """A write that lands on an existing id: the same content is the record it made before, other content clashes."""
    if stored_hash == new_hash:
        return drawer_id
    raise Conflict(f"drawer {drawer_id} already exists with other content", existing_id=drawer_id)


class DrawerTables(Role):
    """Drawers and their places; every write closes, opens and links in the caller's transaction. The `_`-methods
    taking a `Tx` are what sibling roles (mining, archives) write drawers with inside their own transactions."""

    @abstractmethod
    def _insert_drawer_row(self, tx: Tx, row: Mapping[str, Any]) -> int | None:
        """Insert one drawer row; its `seq`, or None when another writer stored this id first.

        Raises `NameTaken` when the room already has a current drawer of that name."""

    # --- writes ---------------------------------------------------------------------------------

    def _room_id(self, tx: Tx, wing: str, room: str, at: str, rooms: dict[tuple[str, str], int] | None = None) -> int:
        """The room's id, made (with its wing) when it is new: one read when it exists, as it does for all but the
        first drawer a mine files there; none when `rooms` (ids already read in this transaction) has it."""
        if rooms is not None and (wing, room) in rooms:
            return rooms[(wing, room)]
        room_id = self._read_or_make_room(tx, wing, room, at)
        if rooms is not None:
            rooms[(wing, room)] = room_id
        return room_id

    def _read_or_make_room(self, tx: Tx, wing: str, room: str, at: str) -> int:
        found = tx.one(
            "SELECT r.id FROM room r JOIN wing w ON w.id = r.wing_id WHERE w.name = ? AND r.name = ?", (wing, room)
        )
        if found is not None:
            return int(found["id"])
        tx.run("INSERT INTO wing(name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING", (wing, at))
        wing_row = tx.one("SELECT id FROM wing WHERE name = ?", (wing,))
        assert wing_row is not None
        tx.run(
            "INSERT INTO room(wing_id, name, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (wing_row["id"], room, at),
        )
        room_row = tx.one("SELECT id FROM room WHERE wing_id = ? AND name = ?", (wing_row["id"], room))
        assert room_row is not None
        return int(room_row["id"])

    def _insert_drawer(
        self,
        tx: Tx,
        new: NewDrawer,
        at: str,
        *,
        supersedes: str | None = None,
        recorded: str | None = None,
        rooms: dict[tuple[str, str], int] | None = None,
    ) -> str:
        """Store a drawer valid from `new.valid_from` or `at`, recorded at `recorded` (default `at`)."""
        drawer_id = new.id or str(uuid.uuid4())
        digest = content_hash(new.content)
        if new.id is not None:  # an id the caller chose may be stored already (a retried write); a fresh one is not
            existing = tx.one("SELECT content_hash FROM drawer WHERE id = ?", (drawer_id,))
            if existing is not None:
                return replayed(drawer_id, existing["content_hash"], digest)
        room_id = self._room_id(tx, new.wing, new.room, at, rooms)
        origin = new.source.origin
        row = {
            "id": drawer_id,
            "room_id": room_id,
            "name": new.name,
            "content": new.content,
            "content_hash": digest,
            "fingerprint": fingerprint(new.content),
            "source_kind": new.source.kind,
            "source_uri": new.source.uri,
            "source_agent": new.source.agent,
            "connector": origin.connector if origin else None,
            "source_id": origin.source_id if origin else None,
            "document": origin.document if origin else None,
            "origin": dumps(origin.to_json()) if origin else None,
            "tags": dumps(list(new.tags)) if new.tags else "[]",
            "provenance": _provenance_json(new.provenance),
            "valid_from": parse_instant(new.valid_from, field="valid_from") if new.valid_from else at,
            "valid_to": None,
            "supersedes": supersedes,
            "superseded_by": None,
            "created_at": recorded or at,
            "expires_at": parse_instant(new.expires_at, field="expires_at") if new.expires_at else None,
        }
        try:
            seq = self._insert_drawer_row(tx, row)
        except NameTaken:
            other = tx.one(
                "SELECT id FROM drawer WHERE room_id = ? AND name = ? AND valid_to IS NULL", (room_id, new.name)
            )
            raise Conflict(
                f"room {new.wing}/{new.room} already has a current drawer named {new.name!r}",
                existing_id=other["id"] if other else None,
                help="supersede the existing drawer to replace it",
            ) from None
        if seq is None:  # another writer stored this id between the check and the insert
            raced = tx.one("SELECT content_hash FROM drawer WHERE id = ?", (drawer_id,))
            assert raced is not None
            return replayed(drawer_id, raced["content_hash"], digest)
        if new.tags:
            tx.many(
                "INSERT INTO drawer_tag(drawer_seq, tag) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(seq, tag) for tag in sorted(set(new.tags))],
            )
        return drawer_id

    def _close_current(
        self,
        tx: Tx,
        drawer_id: str,
        at: str,
        successor: str | None,
        *,
        recorded: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Close a current drawer: valid until `at`, learnt at `recorded` (default `at`)."""
        row = tx.one(f"SELECT valid_to, superseded_by FROM drawer WHERE id = ?{self.FOR_UPDATE}", (drawer_id,))
        if row is None:
            raise NotFound(f"no drawer {drawer_id}")
        if row["valid_to"] is not None:
            raise Conflict(
                f"drawer {drawer_id} was already closed at {row['valid_to']}",
                existing_id=row["superseded_by"],
                help="supersede the current version instead (see its history)",
            )
        tx.run(
            "UPDATE drawer SET valid_to = ?, superseded_by = ?, closed_at = ?, closed_reason = ? WHERE id = ?",
            (at, successor, recorded or at, reason, drawer_id),
        )

    def _file_candidate(
        self,
        tx: Tx,
        head_id: str,
        new: NewDrawer,
        at: str,
        *,
        recorded: str | None = None,
        rooms: dict[tuple[str, str], int] | None = None,
    ) -> str:
        """File a source's new text for a line a correction replaced: a version closed as it is filed, pointing at
        the correction that stays current (`superseded_by`), and linked to it as a `candidate` (ADR 0044). Unnamed:
        the correction holds the name."""
        drawer_id = self._insert_drawer(tx, dataclasses.replace(new, name=None), at, recorded=recorded, rooms=rooms)
        self._close_current(tx, drawer_id, at, head_id, recorded=recorded, reason=candidate_reason(head_id))
        tx.run(
            "INSERT INTO drawer_link(from_id, to_id, verdict, similarity, created_at) VALUES (?,?,?,?,?) "
            "ON CONFLICT DO NOTHING",
            (drawer_id, head_id, CANDIDATE, 1.0, recorded or at),
        )
        return drawer_id

    def _supersede(self, tx: Tx, old_id: str, replacement: NewDrawer, at: str, recorded: str | None = None) -> str:
        new_id = replacement.id or str(uuid.uuid4())
        self._close_current(tx, old_id, at, new_id, recorded=recorded)
        inserted = self._insert_drawer(
            tx, dataclasses.replace(replacement, id=new_id, valid_from=at), at, supersedes=old_id, recorded=recorded
        )
        # A person's marks belong to the drawer whatever its version: a new version keeps them.
        marks = tx.one("SELECT pinned, hidden FROM drawer WHERE id = ?", (old_id,))
        if marks is not None and (marks["pinned"] or marks["hidden"]):
            tx.run("UPDATE drawer SET pinned = ?, hidden = ? WHERE id = ?",
                   (bool(marks["pinned"]), bool(marks["hidden"]), inserted))  # fmt: skip
        return inserted

    def _as_read(self, row: Row) -> Drawer:
        """A drawer as the palace reads it now: past its expiry, it reads as closed then (`model.lifecycle`)."""
        drawer = drawer_from_row(row)
        if drawer.expires_at is None and not self.lifecycle.rules:
            return drawer
        return self.lifecycle.apply(drawer, self._now())

    def erasable_drawers(self, at: str, limit: int) -> list[str]:
        """The last versions (superseded by nothing) that a `[[lifecycle]]` rule with `forget_after` has erased by
        `at`: their whole history goes with them through the forget cascade."""
        found: list[str] = []
        for rule in self.lifecycle.rules:
            threshold = rule.forget_threshold(at)
            if threshold is None or len(found) >= limit:
                continue
            match, values = rule_sql(rule, self.backend)
            rows = self._all(
                f"SELECT d.id FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
                f"WHERE d.superseded_by IS NULL AND {match} AND d.valid_from <= ? ORDER BY d.seq LIMIT ?",
                (*values, threshold, limit - len(found)),
            )
            found.extend(row["id"] for row in rows if row["id"] not in found)
        return found

    def mark_drawer(self, drawer_id: str, *, pinned: bool | None = None, hidden: bool | None = None) -> Drawer:
        """Pin or unpin, hide or show a drawer (the version given; later versions inherit the marks)."""
        with self._write() as tx:
            found = tx.one(f"SELECT seq FROM drawer WHERE id = ?{self.FOR_UPDATE}", (drawer_id,))
            if found is None:
                raise NotFound(f"no drawer {drawer_id}")
            for column, value in (("pinned", pinned), ("hidden", hidden)):
                if value is not None:
                    tx.run(f"UPDATE drawer SET {column} = ? WHERE seq = ?", (bool(value), found["seq"]))
        return self.get_drawer(drawer_id)

    def pinned_drawers(self, scope: Scope, limit: int) -> list[Drawer]:
        """The current pinned drawers in `scope` (never hidden ones unless the scope includes them), newest first."""
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        with self._read() as tx:
            rows = tx.all(f"{DRAWER_SELECT} WHERE d.pinned{where} ORDER BY d.seq DESC LIMIT ?", (*params, limit))
        return [self._as_read(row) for row in rows]

    def add_drawer(self, new: NewDrawer) -> Drawer:
        with self._write() as tx:
            drawer_id = self._insert_drawer(tx, new, self._now())
        return self.get_drawer(drawer_id)

    def supersede_drawer(self, old_id: str, replacement: NewDrawer) -> Drawer:
        with self._write() as tx:
            new_id = self._supersede(tx, old_id, replacement, self._now())
        return self.get_drawer(new_id)

    def invalidate_drawer(self, drawer_id: str, reason: str | None = None) -> Drawer:
        with self._write() as tx:
            self._close_current(tx, drawer_id, self._now(), None, reason=reason)
        return self.get_drawer(drawer_id)

    def create_place(self, wing: str, room: str | None = None) -> bool:
        """Make an empty wing, or a room of a wing (made too when new); False when it already existed."""
        with self._write() as tx:
            at = self._now()
            if room is None:
                return tx.run("INSERT INTO wing(name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING", (wing, at)) > 0
            existed = tx.one(
                "SELECT 1 AS found FROM room r JOIN wing w ON w.id = r.wing_id WHERE w.name = ? AND r.name = ?",
                (wing, room),
            )
            self._read_or_make_room(tx, wing, room, at)
            return existed is None

    def place_totals(self, wing: str, room: str | None = None) -> PlaceTotals:
        """A wing's (or a room's) counts: current drawers, every version, rooms, and when a drawer was last filed."""
        where, params = ("w.name = ?", (wing,)) if room is None else ("w.name = ? AND r.name = ?", (wing, room))
        with self._read() as tx:
            place = tx.one(
                f"SELECT MIN(w.created_at) AS wing_at, MIN(r.created_at) AS room_at, COUNT(r.id) AS rooms "
                f"FROM wing w LEFT JOIN room r ON r.wing_id = w.id WHERE {where}",
                params,
            )
            if place is None or place["wing_at"] is None or (room is not None and place["room_at"] is None):
                raise NotFound(f"no wing {wing!r}" if room is None else f"no room {room!r} in wing {wing!r}")
            counts = tx.one(
                "SELECT COUNT(*) AS versions, COALESCE(SUM(CASE WHEN d.valid_to IS NULL THEN 1 ELSE 0 END), 0) "
                "AS current, MAX(d.created_at) AS last FROM drawer d JOIN room r ON r.id = d.room_id "
                f"JOIN wing w ON w.id = r.wing_id WHERE {where}",
                params,
            )
        assert counts is not None
        return PlaceTotals(
            wing=wing,
            room=room,
            created_at=place["wing_at"] if room is None else place["room_at"],
            drawers=int(counts["current"]),
            versions=int(counts["versions"]),
            rooms=int(place["rooms"]) if room is None else None,
            last_filed_at=counts["last"],
        )

    def rename_wing(self, wing: str, new_name: str) -> None:
        with self._write() as tx:
            found = tx.one(f"SELECT id FROM wing WHERE name = ?{self.FOR_UPDATE}", (wing,))
            if found is None:
                raise NotFound(f"no wing {wing!r}")
            if tx.one("SELECT 1 AS found FROM wing WHERE name = ?", (new_name,)) is not None:
                raise Conflict(f"a wing named {new_name!r} already exists", help="choose another name")
            tx.run("UPDATE wing SET name = ? WHERE id = ?", (new_name, found["id"]))

    def rename_room(self, wing: str, room: str, new_name: str) -> None:
        with self._write() as tx:
            found = tx.one(
                f"SELECT r.id, r.wing_id FROM room r JOIN wing w ON w.id = r.wing_id WHERE w.name = ? AND r.name = ?"
                f"{self.FOR_UPDATE}",
                (wing, room),
            )
            if found is None:
                raise NotFound(f"no room {room!r} in wing {wing!r}")
            if tx.one("SELECT 1 AS found FROM room WHERE wing_id = ? AND name = ?", (found["wing_id"], new_name)):
                raise Conflict(f"wing {wing!r} already has a room named {new_name!r}", help="choose another name")
            tx.run("UPDATE room SET name = ? WHERE id = ?", (new_name, found["id"]))

    # --- reads ----------------------------------------------------------------------------------

    def get_drawer(self, drawer_id: str) -> Drawer:
        row = self._one(f"{DRAWER_SELECT} WHERE d.id = ?", (drawer_id,))
        if row is None:
            raise NotFound(f"no drawer {drawer_id}")
        return self._as_read(row)

    def get_drawers(self, drawer_ids: Sequence[str]) -> dict[str, Drawer]:
        found: dict[str, Drawer] = {}
        with self._read() as tx:
            for batch in batches(drawer_ids):
                for row in tx.all(f"{DRAWER_SELECT} WHERE d.id IN ({marks(batch)})", batch):
                    found[row["id"]] = self._as_read(row)
        return found

    def drawer_history(self, drawer_id: str) -> list[Drawer]:
        """Every version of the drawer, oldest first: `supersedes` back, `superseded_by` forward; then the source's
        texts filed beside a correction as its candidate updates (ADR 0044), oldest first."""
        start = self.get_drawer(drawer_id)
        chain, seen = [start], {start.id}
        for step in ("supersedes", "superseded_by"):
            node = start
            while (following := getattr(node, step)) and following not in seen:
                node = self.get_drawer(following)
                seen.add(node.id)
                chain.insert(0, node) if step == "supersedes" else chain.append(node)
        rows = self._all(
            f"SELECT from_id FROM drawer_link WHERE verdict = ? AND to_id IN ({marks(chain)}) ORDER BY created_at",
            (CANDIDATE, *(d.id for d in chain)),
        )
        found = self.get_drawers([r["from_id"] for r in rows if r["from_id"] not in seen])
        return chain + [found[r["from_id"]] for r in rows if r["from_id"] in found]

    def any_superseded(self, wing: str, room: str) -> bool:
        """Whether the room holds a closed drawer something superseded: where `corrected_lines` can find anything."""
        row = self._one(
            "SELECT 1 AS found FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            "WHERE w.name = ? AND r.name = ? AND d.valid_to IS NOT NULL AND d.superseded_by IS NOT NULL LIMIT 1",
            (wing, room),
        )
        return row is not None

    def corrected_lines(self, wing: str, room: str, hashes: Sequence[str]) -> dict[str, Drawer]:
        """Closed drawers of the room holding one of these texts (by content hash) whose line a correction took
        over: a mined document filed anew (renamed, moved back) that still says what was corrected."""
        if not hashes:
            return {}
        rows = self._all(
            f"SELECT d.id, d.content_hash, d.superseded_by FROM drawer d JOIN room r ON r.id = d.room_id "
            f"JOIN wing w ON w.id = r.wing_id WHERE w.name = ? AND r.name = ? AND d.content_hash IN ({marks(hashes)}) "
            "AND d.valid_to IS NOT NULL AND d.superseded_by IS NOT NULL ORDER BY d.seq",
            (wing, room, *hashes),
        )
        found = self.get_drawers([r["id"] for r in rows])
        return {r["content_hash"]: found[r["id"]] for r in rows if r["id"] in found}

    def find_current_copy(self, wing: str, room: str, content_hash: str, agent: str | None = None) -> Drawer | None:
        """An unnamed current drawer with this content in the room (written by `agent`, when one is given)."""
        agent_sql = " AND d.source_agent = ?" if agent is not None else ""
        expired, times = expiry_sql(
            self.lifecycle, self._now(), self.backend
        )  # an expired copy is no copy: the note is new
        row = self._one(
            f"{DRAWER_SELECT} WHERE w.name = ? AND r.name = ? AND d.content_hash = ? AND d.valid_to IS NULL "
            f"AND d.name IS NULL{agent_sql}{expired} ORDER BY d.seq LIMIT 1",
            (wing, room, content_hash, *([agent] if agent is not None else []), *times),
        )
        return self._as_read(row) if row else None

    def count_drawers(self, *, current_only: bool = False) -> int:
        return self._count(f"SELECT COUNT(*) AS n FROM drawer{' WHERE valid_to IS NULL' if current_only else ''}")

    def list_wings(self) -> list[Wing]:
        rows = self._all(
            # Summed room by room, each a count of the `drawer_current` index (migration 19), never a drawer row.
            "SELECT w.name, w.created_at, COALESCE((SELECT SUM((SELECT COUNT(*) FROM drawer d WHERE d.room_id = r.id "
            "AND d.valid_to IS NULL)) FROM room r WHERE r.wing_id = w.id), 0) AS n FROM wing w ORDER BY w.name"
        )
        return [Wing(name=r["name"], drawers=int(r["n"]), created_at=r["created_at"]) for r in rows]

    def wing_names(self) -> list[str]:
        """The wings' names alone: what a scope picker needs, without counting a drawer."""
        return [r["name"] for r in self._all("SELECT name FROM wing ORDER BY name")]

    def list_rooms(self, wing: str) -> list[Room]:
        with self._read() as tx:
            if tx.one("SELECT 1 AS found FROM wing WHERE name = ?", (wing,)) is None:
                raise NotFound(f"no wing {wing!r}")
            rows = tx.all(
                "SELECT r.name, r.created_at, (SELECT COUNT(*) FROM drawer d WHERE d.room_id = r.id "
                "AND d.valid_to IS NULL) AS n FROM room r JOIN wing w ON w.id = r.wing_id WHERE w.name = ? "
                "ORDER BY r.name",
                (wing,),
            )
        return [Room(wing=wing, name=r["name"], drawers=int(r["n"]), created_at=r["created_at"]) for r in rows]

    def list_drawers(self, wing: str | None, room: str | None, limit: int, after: str | None) -> Page[Drawer]:
        clauses, params = [f"{self.NO_INDEX}d.valid_to IS NULL"], list[Any]()
        for column, value in (("w.name", wing), ("r.name", room)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        with self._read() as tx:
            if after:
                seq = tx.one("SELECT seq FROM drawer WHERE id = ?", (after,))
                if seq is None:
                    raise NotFound(f"no drawer {after} to page after")
                clauses.append("d.seq > ?")
                params.append(seq["seq"])
            rows = tx.all(f"{DRAWER_SELECT} WHERE {' AND '.join(clauses)} ORDER BY d.seq LIMIT ?", (*params, limit + 1))
        items = tuple(self._as_read(r) for r in rows[:limit])
        return Page(items=items, next_after=items[-1].id if len(rows) > limit and items else None)

    def latest_drawers(self, scope: Scope, limit: int) -> list[Drawer]:
        """The current drawers in `scope`, most recently filed first. Read newest first through an index and stopped
        at `limit`: an agent's (`drawer_agent`), or a tag's (`drawer_tag`), so the cost follows the answer, not the
        palace."""
        where, params = scope_sql(scope)
        expired, times = expiry_sql(self.lifecycle, self._now(), self.backend)
        # With tags and no agent (an agent's drawers have their own index), the drawers holding the first tag are read
        # through its index entries: led by the index of current drawers instead, the planner would read every
        # current drawer of the palace (a project's decisions at wake-up: 87 ms at 100,000 drawers).
        by_tag = scope.tags[:1] if scope.agent is None else ()
        tagged = " AND d.seq IN (SELECT drawer_seq FROM drawer_tag WHERE tag = ?)" if by_tag else ""
        current = f"{self.NO_INDEX}d.valid_to IS NULL" if by_tag else "d.valid_to IS NULL"
        rows = self._all(
            f"{DRAWER_SELECT} WHERE {current}{where}{tagged}{expired} ORDER BY d.seq DESC LIMIT ?",
            (*params, *by_tag, *times, limit),
        )
        return [self._as_read(r) for r in rows]


@functools.lru_cache(maxsize=64)
def _provenance_json(provenance: Provenance) -> str:
    """A provenance as stored: a mine's thousands of drawers share one (its job's)."""
    return dumps(provenance.to_json())


CANDIDATE = "candidate"  # the drawer_link verdict from a source's new text to the correction it did not replace


def candidate_reason(head_id: str) -> str:
    return f"candidate update of {head_id}: the source changed after a correction, which stays current"
