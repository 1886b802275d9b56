"""Mining speed: the `directory` connector over a generated tree, embeddings deferred (SPEC §9: ≥ 300 files/s).

Two same-run baselines: a bare walk that reads and hashes every file (the I/O floor), and the realistic floor of
issue 36 in CPU seconds — read, chunk at 6,000 characters, hash, insert into SQLite with its FTS5 index a thousand
files a transaction (`realistic_floor`) — beside the CPU seconds of the mine itself (extraction and embeddings off,
so only mining runs).

    python -m bench.mine [--files 5000] [--runs 3] [--write]
    python -m bench.mine --tree /usr/lib/python3.11 --runs 1 [--write]   # a real folder instead

Also measured: how much of the mined palace on disk is near-duplicate bookkeeping (band keys with their index, and
signatures), from SQLite's `dbstat`.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH_ROOTS, command_line, median, open_palace, wait_for, wait_for_links, write_section
from memcastle.connectors.files import walk_files
from memcastle.model.requests import MineRequest


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    """Made-up words, so files share a realistic amount of text (a tiny vocabulary makes every file a near copy)."""
    syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "da", "zu", "fe", "go", "hi", "ju", "wo"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def generate(root: Path, files: int, seed: int = 7) -> int:
    """A project-like tree: nested folders, code and prose files of 0.5–6 KB with Zipf-distributed words."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    total = 0
    for index in range(files):
        folder = root / f"pkg{index % 37:02d}" / f"sub{index % 11}"
        folder.mkdir(parents=True, exist_ok=True)
        suffix = rng.choice((".py", ".md", ".ts", ".txt", ".toml"))
        paragraphs = [" ".join(rng.choices(words, weights, k=rng.randint(20, 120))) for _ in range(rng.randint(1, 8))]
        text = f"# file {index}\n\n" + "\n\n".join(paragraphs) + "\n"
        (folder / f"f{index:05d}{suffix}").write_text(text, encoding="utf-8")
        total += len(text)
    return total


def bare_walk(root: Path) -> float:
    started = time.perf_counter()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            hashlib.sha256(path.read_bytes()).hexdigest()
    return time.perf_counter() - started


FLOOR_CHUNK = 6000  # characters: `mining.chunk_chars`
FLOOR_BATCH = 1000  # files a transaction


def realistic_floor(root: Path, database: Path) -> tuple[float, int]:
    """CPU seconds of the least a mine must do: read each file, cut it into 6,000-character chunks, hash each, and
    insert them into SQLite with an FTS5 index (the palace's tokenizer, kept by a trigger as the palace's is), a
    thousand files a transaction; and the bytes of text it read."""
    started = time.process_time()
    read = 0
    conn = sqlite3.connect(database, isolation_level=None)
    conn.executescript(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        "CREATE TABLE chunk (seq INTEGER PRIMARY KEY, document TEXT, position INTEGER, content TEXT, hash TEXT);"
        "CREATE VIRTUAL TABLE chunk_fts USING fts5(content, content='chunk', content_rowid='seq',"
        " tokenize='porter unicode61 remove_diacritics 2');"
        "CREATE TRIGGER chunk_fts_insert AFTER INSERT ON chunk BEGIN"
        " INSERT INTO chunk_fts(rowid, content) VALUES (new.seq, new.content); END;"
    )
    # The files the mine reads (the same walk: ignore files, build outputs and dot-folders left out).
    files = [root / relative for relative in walk_files(root)]
    for first in range(0, len(files), FLOOR_BATCH):
        conn.execute("BEGIN")
        for path in files[first : first + FLOOR_BATCH]:
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable: the mine skips it too
            if not text.strip() or "\x00" in text[:8192]:
                continue
            read += len(text.encode("utf-8"))
            for position in range(0, max(1, len(text)), FLOOR_CHUNK):
                piece = text[position : position + FLOOR_CHUNK]
                conn.execute(
                    "INSERT INTO chunk(document, position, content, hash) VALUES (?,?,?,?)",
                    (str(path), position, piece, hashlib.sha256(piece.encode()).hexdigest()),
                )
        conn.execute("COMMIT")
    conn.close()
    return time.process_time() - started, read


def roots_for(root: Path) -> dict[str, Any]:
    """The palace setting that lets a mine read `root` (the benchmark's own folders are allowed already)."""
    return {"mining.roots": [*BENCH_ROOTS, str(root)]}


def mine_cpu(root: Path, palace_dir: Path) -> tuple[float, float]:
    """CPU seconds of a first mine alone (extraction and embeddings off, the palace opened before the clock starts),
    and of the copies sweep that follows it (ADR 0058), until every queued drawer is linked."""
    flags = {"embeddings.provider": "none", "extraction.provider": "none", **roots_for(root)}
    palace = open_palace(palace_dir, **flags)
    try:
        started = time.process_time()
        job = palace.services.mining.submit_mine(MineRequest("directory", str(root))).job
        done = wait_for(palace, job, links=False)
        spent = time.process_time() - started
        assert done.status.value == "completed", done.error
        wait_for_links(palace)
        return spent, time.process_time() - started - spent
    finally:
        palace.stop()


BOOKKEEPING = ("drawer_band", "drawer_band_drawer", "drawer_signature", "near_pending")


def bookkeeping_share(palace_dir: Path) -> tuple[float, int]:
    """The share of a palace's database pages that near-duplicate bookkeeping takes, and the database's bytes."""
    [database] = sorted(palace_dir.rglob("*.sqlite3"))
    conn = sqlite3.connect(database)
    try:
        sizes = dict(conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
    finally:
        conn.close()
    total = sum(sizes.values())
    return sum(sizes.get(name, 0) for name in BOOKKEEPING) / total, total


def mine_once(root: Path, palace_dir: Path) -> tuple[float, dict[str, int]]:
    palace = open_palace(palace_dir, **{"embeddings.provider": "none", **roots_for(root)})
    try:
        started = time.perf_counter()
        job = palace.services.mining.submit_mine(MineRequest("directory", str(root))).job
        done = wait_for(palace, job, links=False)
        elapsed = time.perf_counter() - started
        wait_for_links(palace)  # the sweep the mine asked for runs before the next mine, not beside it
        assert done.result is not None and done.status.value == "completed", done.error
        return elapsed, {k: int(v) for k, v in done.result.items() if isinstance(v, int)}
    finally:
        palace.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--tree", type=Path, help="mine this folder rather than generated files")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write the figures to bench/RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-mine-") as temp:
        if args.tree is not None:
            root = args.tree.resolve()
            files = list(walk_files(root))
            size = sum((root / relative).stat().st_size for relative in files)
            described = f"{root} ({len(files)} files)"
        else:
            root = Path(temp) / "tree"
            size = generate(root, args.files)
            files = list(walk_files(root))
            described = f"{args.files} generated files"
        bare = [bare_walk(root) for _ in range(args.runs)]
        times, remine, result = [], [], {}
        for run in range(args.runs):
            elapsed, result = mine_once(root, Path(temp) / f"palace{run}")
            times.append(elapsed)
            again, again_result = mine_once(root, Path(temp) / f"palace{run}")
            assert again_result["created"] == 0
            remine.append(again)
        # The floor and the mine alternate, and each run's ratio is its own: the machine is shared, and its speed
        # drifts between minutes more than between a floor and the mine that follows it.
        floors, cpus, sweeps, text_mb = [], [], [], 0.0
        for run in range(args.runs):
            floor, read = realistic_floor(root, Path(temp) / f"floor{run}.sqlite3")
            text_mb = read / 1e6  # the text both read (binary, empty and undecodable files left out)
            floors.append(floor)
            cpu, sweep = mine_cpu(root, Path(temp) / f"cpu{run}")
            cpus.append(cpu)
            sweeps.append(sweep)
        ratios = [cpu / floor for cpu, floor in zip(cpus, floors, strict=True)]
        totals = [(cpu + sweep) / floor for cpu, sweep, floor in zip(cpus, sweeps, floors, strict=True)]
        share, database = bookkeeping_share(Path(temp) / "cpu0")
        rate = len(files) / median(times)
        lines = [
            "## Mining: `directory` connector, embeddings deferred" + ("" if args.tree is None else " — a real folder"),
            "",
            f"Command: `{command_line()}`",
            "",
            f"Tree: {described}, {size / 1e6:.1f} MB; {args.runs} runs, medians.",
            "",
            "| measure | median | all runs |",
            "|---|---|---|",
            f"| first mine (s) | {median(times):.2f} | {', '.join(f'{t:.2f}' for t in times)} |",
            f"| **files/s** (target ≥ 300) | **{rate:.0f}** | |",
            f"| re-mine, nothing changed (s) | {median(remine):.2f} | {', '.join(f'{t:.2f}' for t in remine)} |",
            f"| baseline: bare read + SHA-256 of every file (s) | {median(bare):.3f} | "
            f"{', '.join(f'{t:.3f}' for t in bare)} |",
            f"| ratio first mine / baseline | {median(times) / median(bare):.1f}× | |",
            f"| first mine, CPU s (extraction off) | {median(cpus):.2f} | {', '.join(f'{t:.2f}' for t in cpus)} |",
            f"| realistic floor, CPU s | {median(floors):.2f} | {', '.join(f'{t:.2f}' for t in floors)} |",
            f"| **CPU ratio mine / realistic floor, median of the runs' own** (target ≤ 3×) | "
            f"**{median(ratios):.1f}×** | {', '.join(f'{r:.1f}×' for r in ratios)} |",
            f"| copies sweep after the mine (ADR 0058), CPU s | {median(sweeps):.2f} | "
            f"{', '.join(f'{t:.2f}' for t in sweeps)} |",
            f"| CPU ratio mine + sweep / realistic floor | {median(totals):.1f}× | "
            f"{', '.join(f'{r:.1f}×' for r in totals)} |",
            f"| CPU s per MB of text ({text_mb:.1f} MB): mine, floor | {median(cpus) / text_mb:.3f}, "
            f"{median(floors) / text_mb:.3f} | |",
            f"| near-duplicate bookkeeping, share of the palace on disk (target ≤ 15 %) | {share:.1%} | "
            f"of {database / 1e6:.1f} MB |",
            "",
            f"Last result counts: {result}",
        ]
        report = "\n".join(lines)
        print(report)
        if args.write:
            write_section("mine" if args.tree is None else "mine-tree", report)


if __name__ == "__main__":
    main()
