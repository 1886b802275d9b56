"""The neighbours' words a drawer's full-text row carries in its second, low-weight column (ADR 0056).

A drawer's neighbours are the chunks before and after it in its document (a file's chunks, a transcript's chunks);
a drawer written alone, through the API — a note, a checkpoint, a diary entry — has instead the drawers written alone
before and after it in its room, by event time. Its context is the end of the one before and the start of the one
after, at most `CONTEXT_CHARS` of each. Only current drawers are neighbours. A one-chunk document has none: the files
beside it in a folder (notes of a vault, modules of a package) are not its conversation.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from memcastle.store.sql.base import Tx

log = logging.getLogger(__name__)

CONTEXT_CHARS = 1000  # of each neighbour: the side that touches the drawer
CONTEXT_BATCH = 500  # drawers given their neighbours' words per step of the pass over a palace stored before
ALONE = "d.source_id IS NULL"
_PLACE = "d.seq, d.room_id, d.source_id, d.document, d.valid_from"  # where a drawer is, without its text
_COLUMNS = f"{_PLACE}, d.origin, d.content"


@dataclass(frozen=True)
class Context:
    """A drawer's neighbours (their seqs, None where there is none) and the words it is indexed with."""

    before: int | None
    after: int | None
    text: str


NONE = Context(None, None, "")


def context_text(before: str | None, after: str | None) -> str:
    """The end of the text before and the start of the text after, each cut at a word boundary."""
    parts = []
    if before:
        tail = before[-CONTEXT_CHARS:]
        parts.append(tail if len(before) <= CONTEXT_CHARS else tail.split(None, 1)[-1])
    if after:
        head = after[:CONTEXT_CHARS]
        parts.append(head if len(after) <= CONTEXT_CHARS else head.rsplit(None, 1)[0])
    return "\n".join(parts).replace("\x00", " ")  # words only: PostgreSQL's text holds no NUL


def contexts(tx: Tx, seqs: Iterable[int], *, spread: bool) -> dict[int, Context]:
    """The contexts of the drawers `seqs` — and, with `spread` (they were just written), of their neighbours, whose
    context now holds their words. Drawers that are gone or closed are left out."""
    rows = _rows(tx, "d.seq IN ({})", sorted(set(seqs)), columns=_PLACE)
    found: dict[int, Context] = {}
    documents: set[tuple[str, str]] = set()
    alone: list[Mapping[str, Any]] = []
    for row in rows:
        if row["source_id"] is not None and row["document"] is not None:
            documents.add((row["source_id"], row["document"]))
        else:
            alone.append(row)
    for source_id, document in _chunked(tx, sorted(documents)):
        chunks = sorted(
            _rows(tx, "d.source_id = ? AND d.document = ? AND d.valid_to IS NULL", [source_id, document], fill=False),
            key=_chunk,
        )
        for index, row in enumerate(chunks):
            before = chunks[index - 1] if index else None
            after = chunks[index + 1] if index + 1 < len(chunks) else None
            found[int(row["seq"])] = _context(before, after)
    wanted = {int(row["seq"]) for row in alone}
    if spread:
        for row in alone:
            before, after = _beside(tx, row)
            wanted.update(int(r["seq"]) for r in (before, after) if r is not None)
    for row in _rows(tx, "d.seq IN ({})", sorted(wanted), columns=_PLACE):
        found[int(row["seq"])] = _context(*_beside(tx, row))
    return found


def _context(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> Context:
    return Context(
        int(before["seq"]) if before is not None else None,
        int(after["seq"]) if after is not None else None,
        context_text(
            before["content"] if before is not None else None, after["content"] if after is not None else None
        ),
    )


def _beside(tx: Tx, row: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """The current drawers written alone just before and just after `row` in its room, by event time then seq."""
    at, seq = row["valid_from"], row["seq"]
    near = f"SELECT {_COLUMNS} FROM drawer d WHERE d.room_id = ? AND d.valid_to IS NULL AND {ALONE} AND "
    before = tx.one(
        near + "(d.valid_from < ? OR (d.valid_from = ? AND d.seq < ?)) ORDER BY d.valid_from DESC, d.seq DESC LIMIT 1",
        (row["room_id"], at, at, seq),
    )
    after = tx.one(
        near + "(d.valid_from > ? OR (d.valid_from = ? AND d.seq > ?)) ORDER BY d.valid_from, d.seq LIMIT 1",
        (row["room_id"], at, at, seq),
    )
    return before, after


def _rows(
    tx: Tx, where: str, params: list[Any], *, fill: bool = True, columns: str = _COLUMNS
) -> list[Mapping[str, Any]]:
    """Current drawers by `where`; with `fill`, `where` holds `{}` for the placeholders of the seqs `params`."""
    if not fill:
        return tx.all(f"SELECT {columns} FROM drawer d WHERE {where}", params)
    out: list[Mapping[str, Any]] = []
    for start in range(0, len(params), 500):
        batch = params[start : start + 500]
        clause = where.format(",".join("?" * len(batch)))
        out.extend(tx.all(f"SELECT {columns} FROM drawer d WHERE {clause} AND d.valid_to IS NULL", batch))
    return out


def _chunked(tx: Tx, documents: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The documents of these that have more than one current chunk, counted from the document index a source and
    500 documents at a time (a mine files mostly one-chunk documents, which have no neighbours)."""
    by_source: dict[str, list[str]] = {}
    for source_id, document in documents:
        by_source.setdefault(source_id, []).append(document)
    out: list[tuple[str, str]] = []
    for source_id, names in by_source.items():
        for start in range(0, len(names), 500):
            batch = names[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = tx.all(
                f"SELECT d.document FROM drawer d WHERE d.source_id = ? AND d.document IN ({marks}) "
                "AND d.valid_to IS NULL GROUP BY d.document HAVING count(*) > 1",
                [source_id, *batch],
            )
            out.extend((source_id, r["document"]) for r in rows)
    return sorted(out)


def _chunk(row: Mapping[str, Any]) -> tuple[int, int]:
    origin = row["origin"]
    data = origin if isinstance(origin, Mapping) else json.loads(origin) if origin else {}
    return int(data.get("chunk", 0)), int(row["seq"])


class ContextRows(Protocol):
    """How a backend keeps a drawer's context: the words in its full-text index and the row in `drawer_context`."""

    def index(self, tx: Tx, seq: int, context: Context | None, *, fresh: bool) -> None:
        """Index drawer `seq` with `context` (None or empty: none); `fresh`: it was never indexed, else its old
        context was taken out first (`unindex`)."""

    def unindex(self, tx: Tx, seqs: Iterable[int]) -> None:
        """Take drawers' contexts out of the index (SQLite: their whole full-text rows), and their `drawer_context`."""


def index_written(tx: Tx, seqs: Iterable[int], rows: ContextRows) -> None:
    """Index the drawers a transaction wrote, each once with its context, and give their neighbours, whose context
    now holds their words, theirs again."""
    fresh = set(seqs)
    found = contexts(tx, fresh, spread=True)
    for seq in sorted(fresh):
        rows.index(tx, seq, found.get(seq), fresh=True)
    renew(tx, {seq: context for seq, context in found.items() if seq not in fresh}, rows)


def renew(tx: Tx, found: Mapping[int, Context], rows: ContextRows) -> None:
    """Index these already-indexed drawers again with the contexts given, where theirs changed."""
    for seq, context in sorted(found.items()):
        old = tx.one("SELECT before_seq, after_seq, context FROM drawer_context WHERE seq = ?", (seq,))
        if old is None and context == NONE:
            continue  # indexed without neighbours, and still without
        if old is not None and (old["before_seq"], old["after_seq"], old["context"]) == (
            context.before,
            context.after,
            context.text,
        ):
            continue
        rows.unindex(tx, [seq])
        rows.index(tx, seq, context, fresh=False)


def renew_around(tx: Tx, gone: Iterable[int], rows: ContextRows) -> None:
    """After the drawers `gone` are deleted: the drawers that had one of them as a neighbour lose its words."""
    gone = sorted(set(gone))
    if not gone:
        return
    marks = ",".join("?" * len(gone))
    near = tx.all(
        f"SELECT seq FROM drawer_context WHERE (before_seq IN ({marks}) OR after_seq IN ({marks})) "
        f"AND seq NOT IN ({marks})",
        (*gone, *gone, *gone),
    )
    seqs = [int(r["seq"]) for r in near]
    found = contexts(tx, seqs, spread=False)
    renew(tx, {seq: found.get(seq, NONE) for seq in seqs}, rows)


def context_owed(tx: Tx, rows: ContextRows) -> int:
    """One step of the pass a migration (or an import) asks for in `drawer_context_owed`: the next current drawers
    from `after_seq` on are indexed again with their neighbours' words; the row goes when the pass is done. Returns
    the drawers read (0: nothing was owed)."""
    row = tx.one("SELECT after_seq FROM drawer_context_owed")
    if row is None:
        return 0
    found_rows = tx.all(
        "SELECT seq FROM drawer WHERE seq > ? AND valid_to IS NULL ORDER BY seq LIMIT ?",
        (int(row["after_seq"]), CONTEXT_BATCH),
    )
    seqs = [int(r["seq"]) for r in found_rows]
    found = contexts(tx, seqs, spread=False)
    renew(tx, {seq: found[seq] for seq in seqs if seq in found}, rows)
    if len(seqs) < CONTEXT_BATCH:
        tx.run("DELETE FROM drawer_context_owed")
    else:
        tx.run("UPDATE drawer_context_owed SET after_seq = ?", (seqs[-1],))
    return max(len(seqs), 1)


class ContextPass:
    """The background pass that gives the drawers stored before the neighbours' words theirs (`context_owed`), a
    batch per write transaction; searches are correct meanwhile, those drawers ranked by their own words alone."""

    def __init__(self, write: Callable[[], AbstractContextManager[Tx]], rows: ContextRows) -> None:
        self._write = write
        self._rows = rows
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name="neighbour-context", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._closing.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._closing.is_set():
            try:
                with self._write() as tx:
                    done = context_owed(tx, self._rows)
            except Exception:  # the store closing under a step, a full disk: the pass resumes at the next open
                log.warning(
                    "giving drawers their neighbours' words stopped; it resumes at the next open", exc_info=True
                )
                return
            if not done:
                return
