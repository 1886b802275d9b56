"""`python -m bench.lifecycle --palace DIR [--documents 5] [--write]`: forgetting, export and import on a copy of a real
palace (a SQLite palace directory, e.g. one holding the Python standard library), each against a same-run floor.

- **forget one document** (median over `--documents` different documents, each on the same working copy): the floor
  deletes the same drawers' rows and full-text entries, merges the index and empties the log — what any erasing
  delete must do — and touches nothing derived;
- **forget the whole wing** of the largest wing, once, on a fresh copy, against the same floor for the wing;
- **export with vectors** (median of 3): the floor is copying the palace's database file;
- **import into an empty palace**, once: the floor is the palace copy (`memcastle migrate`'s table copy) into an
  empty palace, which moves rows without checking them.

The palace given is never changed: every figure is taken on a copy in a temp dir.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.common import command_line, median, write_section
from memcastle.archive import ArchiveJobs
from memcastle.model import DocumentScope, WingScope
from memcastle.store.copy import copy_palace
from memcastle.store.sqlite import DB_FILE, SQLiteStore


class _Context:
    """The little of a job context the archive jobs use."""

    def __init__(self, **params: Any) -> None:
        self.params = params
        self.state: Mapping[str, Any] = {}
        self.job_id = "bench"

    def checkpoint(self, state: Mapping[str, Any], **progress: Any) -> None:
        self.state = state


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def bare_delete(store: SQLiteStore, where: str, params: tuple[Any, ...]) -> None:
    """The floor of a forget: the drawers' rows and their full-text entries deleted, the index merged, the log
    emptied, and nothing derived touched (foreign keys off, so the children stay behind)."""
    conn = store._writer
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO drawer_fts(drawer_fts, rowid, content) SELECT 'delete', seq, content FROM drawer WHERE " + where,
        params,
    )
    conn.execute("DELETE FROM drawer WHERE " + where, params)
    conn.execute("INSERT INTO drawer_fts(drawer_fts) VALUES ('optimize')")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def copy_of(palace: Path, into: Path) -> Path:
    into.mkdir(parents=True)
    shutil.copyfile(palace / DB_FILE, into / DB_FILE)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--palace", type=Path, required=True, help="a SQLite palace directory (left unchanged)")
    parser.add_argument("--documents", type=int, default=5, help="documents forgotten one at a time")
    parser.add_argument("--write", action="store_true", help="record the figures in bench/RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memcastle-lifecycle-") as scratch:
        root = Path(scratch)
        work = SQLiteStore(copy_of(args.palace, root / "work"))
        drawers, vectors = work.count_drawers(), sum(1 for _ in work.export_rows("embedding"))
        documents = sorted(
            {(r["source_id"], r["document"]) for r in work.export_rows("drawer") if r["source_id"]},
            key=lambda d: d[1],
        )
        step = max(1, len(documents) // max(1, args.documents))
        chosen = documents[::step][: args.documents]
        forget_one = [
            timed(
                lambda s=source, d=document: work.forget(
                    DocumentScope(source_id=s, document=d), dry_run=False, requested_by="bench"
                )
            )
            for source, document in chosen
        ]
        wing = max(work.list_wings(), key=lambda w: w.drawers)
        work.close()
        bare = SQLiteStore(copy_of(args.palace, root / "bare"))
        floor_one = [
            timed(lambda s=source, d=document: bare_delete(bare, "source_id = ? AND document = ?", (s, d)))
            for source, document in chosen
        ]
        bare.close()

        whole = SQLiteStore(copy_of(args.palace, root / "whole"))
        forget_wing = timed(
            lambda: whole.forgetting.forget(WingScope(wing=wing.name), dry_run=False, requested_by="bench")
        )
        whole.close()
        bare = SQLiteStore(copy_of(args.palace, root / "bare-wing"))
        floor_wing = timed(lambda: bare_delete(bare, "1 = 1", ()))
        bare.close()

        exported = copy_of(args.palace, root / "exported")
        source = SQLiteStore(exported)
        exports, archives = [], []
        for run in range(3):
            target = root / f"export-{run}.zip"
            jobs = ArchiveJobs(source, exported)
            exports.append(timed(lambda t=target, j=jobs: j.export(_Context(path=str(t), vectors=True))))
            archives.append(target)
        file_copy = [
            timed(lambda r=run: shutil.copyfile(exported / DB_FILE, root / f"copy-{r}.sqlite3")) for run in range(3)
        ]
        empty = SQLiteStore(root / "imported")
        importer = ArchiveJobs(empty, root / "imported")
        loaded: dict[str, Any] = {}
        import_seconds = timed(lambda: loaded.update(importer.import_(_Context(path=str(archives[0])))))
        imported = empty.drawers.count_drawers()
        empty.close()
        target = SQLiteStore(root / "copied")
        table_copy = timed(lambda: copy_palace(source, target))
        target.close()
        source.close()
        size = archives[0].stat().st_size
    rows = [
        ("forget one document", median(forget_one), median(floor_one), f"median of {len(forget_one)} documents"),
        (f"forget the wing `{wing.name}` ({wing.drawers:,} drawers)", forget_wing, floor_wing, "once"),
        ("export with vectors", median(exports), median(file_copy), f"median of 3; archive {size / 1e6:.1f} MB"),
        ("import into an empty palace", import_seconds, table_copy, f"once; {imported:,} drawers"),
    ]
    body = "\n".join(
        [
            "## Forgetting, export and import (`bench/lifecycle.py`)",
            "",
            f"Command: `{command_line()}`  ",
            f"Palace: {drawers:,} drawers, {vectors:,} passage vectors (a copy; the palace given is not changed).",
            "",
            "| operation | seconds | floor | ratio | floor is | note |",
            "|---|---|---|---|---|---|",
            *(
                f"| {name} | {value:.2f} | {floor:.2f} | {value / floor:.1f}× | {what} | {note} |"
                for (name, value, floor, note), what in zip(
                    rows,
                    (
                        "deleting the rows and their index entries, nothing derived",
                        "the same for the whole wing",
                        "copying the database file",
                        "the table copy of `memcastle migrate`",
                    ),
                    strict=True,
                )  # fmt: skip
            ),
        ]
    )
    print(body)
    if args.write:
        write_section("lifecycle", body)


if __name__ == "__main__":
    main()
