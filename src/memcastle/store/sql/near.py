"""Near-duplicate bookkeeping on either SQL backend: band keys, signatures, and the drawers still to be linked.

A drawer's keys are filed with the drawer (a mined document's in its own transaction) and the drawer is queued in
`near_pending`; `knowledge.dedup.DuplicateFinder` then links a batch of queued drawers at a time, reading what it
needs for the whole batch in a few queries, and takes them off the queue in the transaction that writes their links.
Everything is keyed by the drawer's integer `seq`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memcastle.model import DrawerLink, NearCandidate, NearKeys, NearSubject
from memcastle.store.sql.base import Role, Row, Tx, batches, marks
from memcastle.store.sql.rows import drawer_link_from_row


class NearTables(Role):
    """The near-duplicate role: keys written with drawers, batched reads for linking, and the queue."""

    # --- writes ---------------------------------------------------------------------------------

    def add_keys(self, keys: Sequence[NearKeys]) -> None:
        """File drawers' keys and queue them for linking (drawers forgotten meanwhile are skipped)."""
        with self._write() as tx:
            self.insert_keys(tx, keys)

    def insert_keys(self, tx: Tx, keys: Sequence[NearKeys]) -> None:
        """`add_keys` inside the caller's transaction (a mined document's)."""
        if not keys:
            return
        seq_of = _seqs(tx, [k.drawer_id for k in keys])
        filed = [(k, seq_of[k.drawer_id]) for k in keys if k.drawer_id in seq_of]
        tx.many(
            "INSERT INTO drawer_band(band, drawer_seq) VALUES (?, ?) ON CONFLICT DO NOTHING",
            [(band, seq) for k, seq in filed for band in dict.fromkeys(k.bands)],
        )
        tx.many(
            "INSERT INTO drawer_signature(drawer_seq, signature) VALUES (?, ?) "
            "ON CONFLICT (drawer_seq) DO UPDATE SET signature = excluded.signature",
            [(seq, k.signature) for k, seq in filed if k.signature],
        )
        tx.many("INSERT INTO near_pending(drawer_seq) VALUES (?) ON CONFLICT DO NOTHING", [(s,) for _, s in filed])

    def settle(self, subjects: Sequence[int], links: Sequence[DrawerLink]) -> None:
        """Record the links found for these queued drawers and take them off the queue, in one transaction."""
        with self._write() as tx:
            ends = [d for link in links for d in (link.from_id, link.to_id)]
            existing = set(_seqs(tx, ends))  # a drawer forgotten since it was read takes its links with it
            tx.many(
                "INSERT INTO drawer_link(from_id, to_id, verdict, similarity, created_at) VALUES (?,?,?,?,?) "
                "ON CONFLICT DO NOTHING",
                [
                    (link.from_id, link.to_id, link.verdict, link.similarity, link.created_at)
                    for link in links
                    if link.from_id in existing and link.to_id in existing
                ],
            )
            tx.many("DELETE FROM near_pending WHERE drawer_seq = ?", [(seq,) for seq in subjects])

    # --- reads ----------------------------------------------------------------------------------

    def pending(self, limit: int, drawer_ids: Sequence[str] | None = None) -> list[NearSubject]:
        """The oldest queued drawers (or the queued ones among `drawer_ids`), with their keys, oldest first."""
        select = (
            "SELECT p.drawer_seq AS seq, d.id, d.room_id, d.content_hash, d.fingerprint, d.valid_to, g.signature "
            "FROM near_pending p JOIN drawer d ON d.seq = p.drawer_seq "
            "LEFT JOIN drawer_signature g ON g.drawer_seq = p.drawer_seq"
        )
        with self._read() as tx:
            if drawer_ids is None:
                rows = tx.all(f"{select} ORDER BY p.drawer_seq LIMIT ?", (limit,))
            else:
                rows = [
                    row
                    for batch in batches(drawer_ids)
                    for row in tx.all(f"{select} WHERE d.id IN ({marks(batch)})", batch)
                ]
                rows = sorted(rows, key=lambda r: int(r["seq"]))[:limit]
            bands: dict[int, list[int]] = {}
            for batch in _int_batches(int(r["seq"]) for r in rows):
                for row in tx.all(
                    f"SELECT drawer_seq, band FROM drawer_band WHERE drawer_seq IN ({marks(batch)})", batch
                ):
                    bands.setdefault(int(row["drawer_seq"]), []).append(int(row["band"]))
        return [
            NearSubject(
                seq=int(r["seq"]),
                id=r["id"],
                room_id=int(r["room_id"]),
                content_hash=r["content_hash"],
                fingerprint=r["fingerprint"],
                current=r["valid_to"] is None,
                bands=tuple(sorted(bands.get(int(r["seq"]), ()))),
                signature=bytes(r["signature"]) if r["signature"] is not None else b"",
            )
            for r in rows
        ]

    def count_pending(self) -> int:
        return self._count("SELECT COUNT(*) AS n FROM near_pending")

    def copies(self, subjects: Sequence[NearSubject]) -> list[NearCandidate]:
        """Current drawers of the subjects' rooms with one of their hashes or fingerprints (two indexed lookups
        per batch rather than an OR, which would scan whole rooms)."""
        if not subjects:
            return []
        rooms = sorted({s.room_id for s in subjects})
        found: dict[int, NearCandidate] = {}
        with self._read() as tx:
            for column in ("content_hash", "fingerprint"):
                values = sorted({getattr(s, column) for s in subjects})
                for batch in batches(values, 400):
                    rows = tx.all(
                        "SELECT seq, id, room_id, content_hash, fingerprint FROM drawer "
                        f"WHERE room_id IN ({marks(rooms)}) AND {column} IN ({marks(batch)}) "
                        f"AND {self.NO_INDEX}valid_to IS NULL",
                        (*rooms, *batch),
                    )
                    found.update((int(r["seq"]), _candidate(r)) for r in rows)
        return sorted(found.values(), key=lambda c: c.seq)

    def sharing_bands(self, subjects: Sequence[int], at_least: int) -> list[tuple[int, NearCandidate, int]]:
        """(subject, current drawer filed before it, band keys they share) for each of these queued drawers and each
        drawer sharing `at_least` of its band keys: counted by the database, so only candidates come back."""
        out: list[tuple[int, NearCandidate, int]] = []
        with self._read() as tx:
            for batch in _int_batches(subjects):
                rows = tx.all(
                    "SELECT s.drawer_seq AS subject, d.seq, d.id, d.room_id, count(*) AS shared "
                    "FROM drawer_band s JOIN drawer_band b ON b.band = s.band AND b.drawer_seq < s.drawer_seq "
                    "JOIN drawer d ON d.seq = b.drawer_seq "
                    f"WHERE s.drawer_seq IN ({marks(batch)}) AND {self.NO_INDEX}d.valid_to IS NULL "
                    "GROUP BY s.drawer_seq, d.seq, d.id, d.room_id HAVING count(*) >= ?",
                    (*batch, at_least),
                )
                out.extend(
                    (int(r["subject"]), NearCandidate(int(r["seq"]), r["id"], int(r["room_id"])), int(r["shared"]))
                    for r in rows
                )
        return out

    def signatures(self, seqs: Iterable[int]) -> dict[int, bytes]:
        found: dict[int, bytes] = {}
        with self._read() as tx:
            for batch in _int_batches(seqs):
                rows = tx.all(
                    f"SELECT drawer_seq, signature FROM drawer_signature WHERE drawer_seq IN ({marks(batch)})", batch
                )
                found.update((int(r["drawer_seq"]), bytes(r["signature"])) for r in rows)
        return found

    def texts(self, seqs: Iterable[int]) -> dict[int, tuple[str, str, str, str]]:
        """seq → (drawer id, wing, room, content): what a queued drawer's keys are computed from."""
        found: dict[int, tuple[str, str, str, str]] = {}
        with self._read() as tx:
            for batch in _int_batches(seqs):
                rows = tx.all(
                    "SELECT d.seq, d.id, w.name AS wing, r.name AS room, d.content FROM drawer d "
                    "JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
                    f"WHERE d.seq IN ({marks(batch)})",
                    batch,
                )
                found.update((int(r["seq"]), (r["id"], r["wing"], r["room"], r["content"])) for r in rows)
        return found

    def contents(self, seqs: Iterable[int]) -> dict[int, str]:
        found: dict[int, str] = {}
        with self._read() as tx:
            for batch in _int_batches(seqs):
                rows = tx.all(f"SELECT seq, content FROM drawer WHERE seq IN ({marks(batch)})", batch)
                found.update((int(r["seq"]), r["content"]) for r in rows)
        return found

    def drawer_links(self, drawer_id: str) -> list[DrawerLink]:
        rows = self._all(
            "SELECT * FROM drawer_link WHERE from_id = ? OR to_id = ? ORDER BY created_at", (drawer_id, drawer_id)
        )
        return [drawer_link_from_row(r) for r in rows]


def _seqs(tx: Tx, drawer_ids: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for batch in batches(drawer_ids):
        found.update(
            (r["id"], int(r["seq"])) for r in tx.all(f"SELECT id, seq FROM drawer WHERE id IN ({marks(batch)})", batch)
        )
    return found


def _int_batches(values: Iterable[int], size: int = 500) -> list[list[int]]:
    unique = list(dict.fromkeys(values))
    return [unique[i : i + size] for i in range(0, len(unique), size)]


def _candidate(row: Row) -> NearCandidate:
    return NearCandidate(int(row["seq"]), row["id"], int(row["room_id"]), row["content_hash"], row["fingerprint"])
