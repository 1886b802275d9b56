"""A palace as portable records, on either SQL backend: read out of one consistent snapshot, loaded idempotently.

Records are the domain's, keyed by what is stable across palaces — drawer, fact and entity ids, wing and room names —
never a backend's row numbers, so an archive loads into an empty palace or into one that already holds part of it:
a record already there is skipped, one whose id is taken by other content is a conflict. The archive format itself
(a manifest, one JSON Lines member per kind) is `memcastle.archive`'s.
"""

from __future__ import annotations

import base64
import json
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from memcastle.errors import Conflict, InvalidRequest
from memcastle.model import content_hash, fingerprint, key_variants, normalize_text
from memcastle.store.sql.base import Role, Row, SqlStore, Tx, dumps
from memcastle.store.sql.drawers import DrawerTables, NameTaken
from memcastle.store.sql.embeddings import EmbeddingTables
from memcastle.store.sql.rows import DRAWER_SELECT, drawer_from_row

# Record kinds, in the order they load (what a record refers to comes before it).
ARCHIVE_KINDS = (
    "wings",
    "rooms",
    "sources",
    "drawers",
    "documents",
    "entities",
    "hints",
    "mentions",
    "facts",
    "fact_links",
    "drawer_links",
    "extraction_read",
    "signatures",
    "vectors",
    "tombstones",
)
PAGE = 500

# Per kind: the query (with `{after}` where the keyset condition goes) and its key columns.
_QUERIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "wings": ("SELECT name, created_at FROM wing w WHERE 1 = 1{after} ORDER BY name LIMIT ?", ("name",)),
    "rooms": (
        "SELECT w.name AS wing, r.name, r.created_at FROM room r JOIN wing w ON w.id = r.wing_id WHERE 1 = 1{after} "
        "ORDER BY w.name, r.name LIMIT ?",
        ("w.name", "r.name"),
    ),
    "sources": ("SELECT * FROM source s WHERE 1 = 1{after} ORDER BY id LIMIT ?", ("id",)),
    "drawers": (f"{DRAWER_SELECT} WHERE 1 = 1{{after}} ORDER BY d.seq LIMIT ?", ("d.seq",)),
    "documents": (
        "SELECT * FROM document o WHERE 1 = 1{after} ORDER BY source_id, external_id LIMIT ?",
        ("source_id", "external_id"),
    ),
    "entities": ("SELECT * FROM entity e WHERE 1 = 1{after} ORDER BY id LIMIT ?", ("id",)),
    "hints": (
        "SELECT * FROM entity_hint h WHERE 1 = 1{after} ORDER BY entity_id, other_id, kind LIMIT ?",
        ("entity_id", "other_id", "kind"),
    ),
    "mentions": (
        "SELECT * FROM mention m WHERE 1 = 1{after} ORDER BY drawer_id, entity_id, spelling LIMIT ?",
        ("drawer_id", "entity_id", "spelling"),
    ),
    "facts": ("SELECT * FROM assertion a WHERE 1 = 1{after} ORDER BY id LIMIT ?", ("id",)),
    "fact_links": ("SELECT * FROM fact_link l WHERE 1 = 1{after} ORDER BY id LIMIT ?", ("id",)),
    "drawer_links": (
        "SELECT * FROM drawer_link k WHERE 1 = 1{after} ORDER BY from_id, to_id LIMIT ?",
        ("from_id", "to_id"),
    ),
    "extraction_read": (
        "SELECT * FROM extraction_read x WHERE 1 = 1{after} ORDER BY extractor, drawer_id LIMIT ?",
        ("extractor", "drawer_id"),
    ),
    "signatures": (
        "SELECT d.id AS drawer_id, g.drawer_seq, g.signature FROM drawer_signature g "
        "JOIN drawer d ON d.seq = g.drawer_seq WHERE 1 = 1{after} ORDER BY g.drawer_seq LIMIT ?",
        ("g.drawer_seq",),
    ),
    "vectors": (
        "SELECT e.drawer_seq, d.id AS drawer_id, e.model, e.passage, e.passages, e.vector FROM embedding e "
        "JOIN drawer d ON d.seq = e.drawer_seq WHERE 1 = 1{after} ORDER BY e.drawer_seq, e.model, e.passage LIMIT ?",
        ("e.drawer_seq", "e.model", "e.passage"),
    ),
    "tombstones": ("SELECT * FROM tombstone t WHERE 1 = 1{after} ORDER BY id LIMIT ?", ("id",)),
}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, field: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (ValueError, TypeError):
        raise InvalidRequest(f"{field} is not base64", field=field) from None


class ArchiveSnapshot:
    """The records of one palace as of one instant, a page at a time (see `ArchiveTables.archive_snapshot`)."""

    def __init__(self, tx: Tx, vector_of: Any) -> None:
        self._tx = tx
        self._vector_of = vector_of

    def records(self, kind: str) -> Iterator[dict[str, Any]]:
        if kind == "vectors":
            yield from self._vectors()
            return
        if kind == "signatures":
            for record in self._records("signatures"):
                bands = self._tx.all(
                    "SELECT b.band FROM drawer_band b JOIN drawer d ON d.seq = b.drawer_seq WHERE d.id = ? "
                    "ORDER BY b.band",
                    (record["drawer_id"],),
                )
                yield {**record, "bands": [int(b["band"]) for b in bands]}
            return
        yield from self._records(kind)

    def _records(self, kind: str) -> Iterator[dict[str, Any]]:
        sql, keys = _QUERIES[kind]
        after: tuple[Any, ...] | None = None
        while True:
            page = self._page(sql, keys, after)
            for row in page:
                yield _record(kind, row)
            if len(page) < PAGE:
                return
            after = tuple(page[-1][k.split(".")[-1]] for k in keys)

    def _page(self, sql: str, keys: tuple[str, ...], after: tuple[Any, ...] | None) -> list[Row]:
        if after is None:
            return self._tx.all(sql.format(after=""), (PAGE,))
        condition = f" AND ({', '.join(keys)}) > ({', '.join('?' * len(keys))})"
        return self._tx.all(sql.format(after=condition), (*after, PAGE))

    def _vectors(self) -> Iterator[dict[str, Any]]:
        """One record per drawer and model: every stored passage vector, and whether the drawer is complete."""
        sql, keys = _QUERIES["vectors"]
        after: tuple[Any, ...] | None = None
        current: dict[str, Any] | None = None
        while True:
            page = self._page(sql, keys, after)
            for row in page:
                vector = self._vector_of(row["vector"])
                if current is None or (current["drawer_id"], current["model"]) != (row["drawer_id"], row["model"]):
                    if current is not None:
                        yield self._finish(current)
                    current = {
                        "drawer_id": row["drawer_id"],
                        "model": row["model"],
                        "seq": row["drawer_seq"],
                        "passages": row["passages"],
                        "vectors": [],
                    }
                current["vectors"].append(_b64(np.asarray(vector, dtype="<f4").tobytes()))
            if len(page) < PAGE:
                break
            after = (page[-1]["drawer_seq"], page[-1]["model"], page[-1]["passage"])
        if current is not None:
            yield self._finish(current)

    def _finish(self, record: dict[str, Any]) -> dict[str, Any]:
        seq = record.pop("seq")
        found = self._tx.one(
            "SELECT 1 AS found FROM embedded WHERE model = ? AND drawer_seq = ?", (record["model"], seq)
        )
        record["complete"] = found is not None
        return record


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _record(kind: str, row: Row) -> dict[str, Any]:
    """A row as its portable record (JSON columns as JSON, flags as booleans, bytes as base64)."""
    if kind == "drawers":
        return drawer_from_row(row).to_json()
    if kind == "signatures":
        return {"drawer_id": row["drawer_id"], "signature": _b64(bytes(row["signature"]))}
    out = {k: row[k] for k in row.keys()}
    if kind == "sources":
        out["options"] = _json(out["options"])
    elif kind == "documents":
        out["chunk_hashes"], out["drawer_ids"] = _json(out["chunk_hashes"]), _json(out["drawer_ids"])
    elif kind == "entities":
        out["aliases"] = _json(out["aliases"])
    elif kind == "facts":
        out["origin"] = _json(out["origin"]) if out["origin"] is not None else None
        out["explicit"] = bool(out["explicit"])
    elif kind == "fact_links":
        out["from"], out["to"] = out.pop("from_id"), out.pop("to_id")  # as the API shows a link
    elif kind == "tombstones":
        out["scope"], out["counts"] = _json(out["scope"]), _json(out["counts"])
    return out


class ArchiveTables(Role):
    """`archive_snapshot` reads every record as of one instant; `load_records` and `archive_conflicts` load them."""

    def __init__(self, db: SqlStore, drawers: DrawerTables, embeddings: EmbeddingTables) -> None:
        super().__init__(db)
        self.drawers = drawers
        self.embeddings = embeddings

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[Tx]:
        """A read-only transaction that sees one instant of the palace throughout."""

    @abstractmethod
    def _vector_of(self, stored: Any) -> np.ndarray:
        """A stored vector column as a float32 array."""

    def archive_snapshot(self) -> AbstractContextManager[ArchiveSnapshot]:
        store = self

        class _Open:
            def __enter__(self) -> ArchiveSnapshot:
                self._context = store._snapshot()
                return ArchiveSnapshot(self._context.__enter__(), store._vector_of)

            def __exit__(self, *exc: Any) -> None:
                self._context.__exit__(*exc)

        return _Open()

    def archive_conflicts(self, kind: str, records: Sequence[Mapping[str, Any]]) -> list[str]:
        """Why each record that clashes with this palace cannot load (the same id holding something else)."""
        found: list[str] = []
        with self._read() as tx:
            for record in records:
                why = self._conflict(tx, kind, record)
                if why:
                    found.append(why)
        return found

    def _conflict(self, tx: Tx, kind: str, r: Mapping[str, Any]) -> str | None:
        if kind == "drawers":
            row = tx.one("SELECT content_hash FROM drawer WHERE id = ?", (r["id"],))
            if row is not None and row["content_hash"] != r["content_hash"]:
                return f"drawer {r['id']} exists here with other content"
        elif kind == "facts":
            row = tx.one("SELECT subject, predicate, object FROM assertion WHERE id = ?", (r["id"],))
            if row is not None and (row["subject"], row["predicate"], row["object"]) != (
                r["subject"],
                r["predicate"],
                r["object"],
            ):
                return f"fact {r['id']} exists here with another claim"
        elif kind == "fact_links":
            row = tx.one("SELECT from_id, to_id, kind FROM fact_link WHERE id = ?", (r["id"],))
            if row is not None and (row["from_id"], row["to_id"], row["kind"]) != (r["from"], r["to"], r["kind"]):
                return f"fact link {r['id']} exists here between other facts"
        elif kind == "entities":
            row = tx.one("SELECT key, kind FROM entity WHERE id = ?", (r["id"],))
            if row is not None and (row["key"], row["kind"]) != (r["key"], r["kind"]):
                return f"entity {r['id']} exists here as another entity"
        return None

    def load_records(self, kind: str, records: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
        """Load one batch of records of a kind in one transaction: (added, already here). A conflicting record is a
        `Conflict` naming it, and the batch is not written."""
        if kind == "vectors":
            return self._load_vectors(records)
        added = 0
        with self._write() as tx:
            for record in records:
                why = self._conflict(tx, kind, record)
                if why:
                    raise Conflict(why, help="this archive holds another palace's record under an id used here")
                added += self._load(tx, kind, record)
        return added, len(records) - added

    def _load(self, tx: Tx, kind: str, r: Mapping[str, Any]) -> int:
        """Insert one record unless it is here; 1 when it was added."""
        special = {
            "rooms": self._load_room,
            "drawers": self._load_drawer,
            "entities": _load_entity,
            "signatures": _load_signature,
        }
        if kind in special:
            return special[kind](tx, r)
        if kind not in _INSERTS:
            raise InvalidRequest(f"unknown record kind {kind!r}", field="kind")
        sql, values = _INSERTS[kind]
        return tx.run(sql, values(r))

    def _load_room(self, tx: Tx, r: Mapping[str, Any]) -> int:
        here = tx.one(
            "SELECT 1 AS found FROM room r JOIN wing w ON w.id = r.wing_id WHERE w.name = ? AND r.name = ?",
            (r["wing"], r["name"]),
        )
        self.drawers._room_id(tx, r["wing"], r["name"], r["created_at"])
        return 0 if here else 1

    def _load_drawer(self, tx: Tx, r: Mapping[str, Any]) -> int:
        if content_hash(r["content"]) != r["content_hash"]:
            raise InvalidRequest(f"drawer {r['id']}: its content does not match its content_hash", field="content")
        if tx.one("SELECT 1 AS found FROM drawer WHERE id = ?", (r["id"],)) is not None:
            return 0
        source = r["source"]
        origin = source.get("origin")
        room_id = self.drawers._room_id(tx, r["wing"], r["room"], r["created_at"])
        row = {
            "id": r["id"],
            "room_id": room_id,
            "name": r["name"],
            "content": r["content"],
            "content_hash": r["content_hash"],
            "fingerprint": fingerprint(r["content"]),
            "source_kind": source["kind"],
            "source_uri": source.get("uri"),
            "source_agent": source.get("agent"),
            "connector": origin["connector"] if origin else None,
            "source_id": origin["source_id"] if origin else None,
            "document": origin["document"] if origin else None,
            "origin": dumps(origin) if origin else None,
            "tags": dumps(list(r["tags"])),
            "provenance": dumps(r["provenance"]),
            "valid_from": r["valid_from"],
            "valid_to": r["valid_to"],
            "supersedes": r["supersedes"],
            "superseded_by": r["superseded_by"],
            "created_at": r["created_at"],
            "closed_at": r.get("closed_at"),
            "closed_reason": r.get("closed_reason"),
            "pinned": bool(r.get("pinned", False)),
            "hidden": bool(r.get("hidden", False)),
            "expires_at": r.get("expires_at"),
        }
        try:
            seq = self.drawers._insert_drawer_row(tx, row)
        except NameTaken:
            raise Conflict(
                f"drawer {r['id']}: room {r['wing']}/{r['room']} already has a current drawer named {r['name']!r}",
                help="rename or supersede the drawer here, then import again",
            ) from None
        if seq is None:
            return 0
        tx.many(
            "INSERT INTO drawer_tag(drawer_seq, tag) VALUES (?, ?) ON CONFLICT DO NOTHING",
            [(seq, tag) for tag in sorted(set(r["tags"]))],
        )
        return 1

    def _load_vectors(self, records: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
        by_model: dict[str, list[tuple[str, np.ndarray, int | None]]] = {}
        with self._read() as tx:
            for r in records:
                if tx.one(
                    "SELECT 1 AS found FROM embedding e JOIN drawer d ON d.seq = e.drawer_seq WHERE d.id = ? "
                    "AND e.model = ?",
                    (r["drawer_id"], r["model"]),
                ):
                    continue
                matrix = np.stack([np.frombuffer(_unb64(v, "vectors"), dtype="<f4") for v in r["vectors"]])
                total = r.get("passages")
                if not r.get("complete") and (total is None or total <= len(r["vectors"])):
                    total = len(r["vectors"]) + 1  # a drawer with part of its passages stays waiting for the rest
                by_model.setdefault(r["model"], []).append((r["drawer_id"], matrix.astype(np.float32), total))
        added = 0
        for model, items in by_model.items():
            totals = {drawer: total for drawer, _, total in items if total is not None}
            self.embeddings.put_embeddings(model, [(drawer, matrix) for drawer, matrix, _ in items], totals=totals)
            added += len(items)
        return added, len(records) - added


def _load_entity(tx: Tx, r: Mapping[str, Any]) -> int:
    added = tx.run(
        "INSERT INTO entity(id, name, kind, key, aliases, created_at) VALUES (?,?,?,?,?,?) ON CONFLICT DO NOTHING",
        (r["id"], r["name"], r["kind"], r["key"], dumps(list(r["aliases"])), r["created_at"]),
    )
    tx.many(
        "INSERT INTO entity_key_variant(variant, entity_id) VALUES (?,?) ON CONFLICT DO NOTHING",
        [(variant, r["id"]) for variant in sorted(key_variants(r["key"]))],
    )
    tx.many(
        "INSERT INTO entity_alias(entity_id, alias_key) VALUES (?,?) ON CONFLICT DO NOTHING",
        [(r["id"], normalize_text(alias)) for alias in r["aliases"]],
    )
    return added


def _load_signature(tx: Tx, r: Mapping[str, Any]) -> int:
    drawer = tx.one("SELECT seq FROM drawer WHERE id = ?", (r["drawer_id"],))
    if drawer is None:
        raise InvalidRequest(f"a signature of drawer {r['drawer_id']}, which is not in the palace", field="drawer_id")
    added = tx.run(
        "INSERT INTO drawer_signature(drawer_seq, signature) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (drawer["seq"], _unb64(r["signature"], "signature")),
    )
    tx.many(
        "INSERT INTO drawer_band(band, drawer_seq) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(int(band), drawer["seq"]) for band in r.get("bands", [])],
    )
    return added


def _fact_values(r: Mapping[str, Any]) -> tuple[Any, ...]:
    origin = dumps(r["origin"]) if r["origin"] is not None else None
    return (r["id"], r["subject"], r["predicate"], r["object"], r["confidence"], r["valid_from"], r["valid_to"],
            r["drawer_id"], r["extractor"], r["job_id"], origin, bool(r["explicit"]), r["created_at"])  # fmt: skip


# The record kinds an archive loads with one insert each: the insert, and its values from a record.
_INSERTS: dict[str, tuple[str, Callable[[Mapping[str, Any]], tuple[Any, ...]]]] = {
    "wings": (
        "INSERT INTO wing(name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
        lambda r: (r["name"], r["created_at"]),
    ),
    "sources": (
        "INSERT INTO source(id, connector, locator, options, cursor, updated_at) VALUES (?,?,?,?,?,?) "
        "ON CONFLICT DO NOTHING",
        lambda r: (r["id"], r["connector"], r["locator"], dumps(r["options"]), r["cursor"], r["updated_at"]),
    ),
    "documents": (
        "INSERT INTO document(source_id, external_id, revision, chunk_hashes, drawer_ids, updated_at) "
        "VALUES (?,?,?,?,?,?) ON CONFLICT DO NOTHING",
        lambda r: (
            r["source_id"],
            r["external_id"],
            r["revision"],
            dumps(r["chunk_hashes"]),
            dumps(r["drawer_ids"]),
            r["updated_at"],
        ),  # fmt: skip
    ),
    "hints": (
        "INSERT INTO entity_hint(entity_id, other_id, kind, reason) VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
        lambda r: (r["entity_id"], r["other_id"], r["kind"], r["reason"]),
    ),
    "mentions": (
        "INSERT INTO mention(drawer_id, entity_id, spelling) VALUES (?,?,?) ON CONFLICT DO NOTHING",
        lambda r: (r["drawer_id"], r["entity_id"], r["spelling"]),
    ),
    "facts": (
        "INSERT INTO assertion(id, subject, predicate, object, confidence, valid_from, valid_to, drawer_id, "
        "extractor, job_id, origin, explicit, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
        _fact_values,
    ),
    "fact_links": (
        "INSERT INTO fact_link(id, from_id, to_id, kind, origin, reason, at, evidence_drawer) "
        "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
        lambda r: (r["id"], r["from"], r["to"], r["kind"], r["origin"], r["reason"], r["at"], r["evidence_drawer"]),
    ),
    "drawer_links": (
        "INSERT INTO drawer_link(from_id, to_id, verdict, similarity, created_at) VALUES (?,?,?,?,?) "
        "ON CONFLICT DO NOTHING",
        lambda r: (r["from_id"], r["to_id"], r["verdict"], r["similarity"], r["created_at"]),
    ),
    "extraction_read": (
        "INSERT INTO extraction_read(drawer_id, extractor) VALUES (?,?) ON CONFLICT DO NOTHING",
        lambda r: (r["drawer_id"], r["extractor"]),
    ),
    "tombstones": (
        "INSERT INTO tombstone(id, at, requested_by, scope, counts) VALUES (?,?,?,?,?) ON CONFLICT DO NOTHING",
        lambda r: (r["id"], r["at"], r["requested_by"], dumps(r["scope"]), dumps(r["counts"])),
    ),
}
