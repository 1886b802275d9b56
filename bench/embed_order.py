"""`python -m bench.embed_order [--tree DIR] [--every 30] [--write]`: how soon a freshly mined folder (the standard
library by default) is searchable by meaning, part by part, as the embed sweep orders its work.

A real daemon mines the folder (extraction off) and embeds it; every `--every` seconds the palace file is read: the
passages still to embed, of all drawers and of all but the files that test code (`TEST_PATHS`, the sweep's own
patterns), each waiting drawer split as the sweep splits it. Recorded: when every drawer had its first passage, when
every drawer but the tests' was whole, when all were.

The order before the tests were left for last is replayed on the same palace: every first passage, then the later
passages newest drawer first. The rate of the sweep does not depend on the order (the same passages, batched by
length), so that order's time for "all but tests whole" is its share of the passages times the observed total.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import command_line, publish
from bench.startup import free_port
from memcastle.search.passages import drawer_passages
from memcastle.store.sql.embeddings import TEST_PATHS

STDLIB = Path(os.__file__).parent
MEMCASTLE = str(Path(sys.executable).parent / "memcastle")
TESTS = re.compile("|".join(re.escape(p).replace("%", ".*").replace(r"\\_", "_") for p in TEST_PATHS))


def is_test(kind: str, document: str | None) -> bool:
    return kind == "file" and document is not None and TESTS.fullmatch(document.lower()) is not None


def drawers(database: Path) -> list[tuple[int, bool, int, int]]:
    """(seq, a test file's, passages, passages stored) of every current drawer, by seq."""
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        stored = dict(db.execute("SELECT drawer_seq, COUNT(*) FROM embedding GROUP BY drawer_seq").fetchall())
        whole = {seq for (seq,) in db.execute("SELECT drawer_seq FROM embedded")}
        rows = db.execute("SELECT seq, source_kind, document, content FROM drawer WHERE valid_to IS NULL ORDER BY seq")
        found = []
        for seq, kind, document, content in rows:
            total = len(drawer_passages(content, 700, 0, 700))
            found.append((seq, is_test(kind, document), total, total if seq in whole else stored.get(seq, 0)))
        return found
    finally:
        db.close()


def left(rows: list[tuple[int, bool, int, int]]) -> tuple[int, int, int]:
    """Drawers without their first passage, passages left of all but tests, passages left of all."""
    return (
        sum(1 for _, _, _, done in rows if done == 0),
        sum(total - done for _, test, total, done in rows if not test),
        sum(total - done for _, _, total, done in rows),
    )


def this_order_share(rows: list[tuple[int, bool, int, int]]) -> float:
    """In the order now (first passages, then later ones of all but tests, then the tests'): the share of all
    passages embedded when the last drawer but the tests' was whole."""
    total = sum(t for _, _, t, _ in rows)
    return (len(rows) + sum(t - 1 for _, test, t, _ in rows if not test)) / total


def earlier_order_share(rows: list[tuple[int, bool, int, int]]) -> float:
    """In the order before tests came last (first passages, then later ones newest first): the share of all passages
    embedded when the last drawer but the tests' was whole."""
    total = sum(t for _, _, t, _ in rows)
    done = len(rows)
    last = done if not any(t > 1 and not test for _, test, t, _ in rows) else 0
    for _, test, passages, _ in sorted(rows, reverse=True):
        if passages > 1:
            done += passages - 1
            if not test:
                last = done
    return last / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=STDLIB)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--shares", type=Path, help="only the two orders' shares, of this palace file's drawers")
    args = parser.parse_args()
    if args.shares:
        rows = drawers(args.shares)
        print(f"{len(rows):,} drawers, {sum(t for _, _, t, _ in rows):,} passages; all but tests whole at "
              f"{earlier_order_share(rows):.1%} of them before, {this_order_share(rows):.1%} now")  # fmt: skip
        return
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-order-") as folder:
        home = Path(folder)
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_STATE_HOME": str(home / "state"),
            "MEMCASTLE_MINING_ROOTS": json.dumps([str(args.tree)]),
            "MEMCASTLE_EXTRACTION_PROVIDER": "none",
        }
        port, palace = free_port(), home / "palace"
        daemon = subprocess.Popen(
            [MEMCASTLE, "--palace", str(palace), "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        seen: dict[str, float] = {}
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=120) as http:
                wait_healthy(http)
                body = {"connector": "directory", "locator": str(args.tree), "wing": "tree"}
                job = http.post("/api/mine", json=body).json()["job"]["id"]
                while http.get(f"/api/jobs/{job}").json()["status"] != "completed":
                    time.sleep(0.5)
                started = time.monotonic()
                while True:
                    time.sleep(args.every)
                    rows = drawers(palace / "palace.sqlite3")
                    now = time.monotonic() - started
                    for name, count in zip(("heads", "untested", "all"), left(rows), strict=True):
                        if count == 0 and name not in seen:
                            seen[name] = now
                    print(f"{now:.0f} s: {left(rows)}", flush=True)
                    if "all" in seen:
                        break
                http.post("/api/shutdown", json={})
        finally:
            daemon.wait(timeout=120)
    report(args, rows, seen)


def wait_healthy(http: httpx.Client) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if http.get("/api/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise TimeoutError("the daemon did not start")


def report(args: argparse.Namespace, rows: list[tuple[int, bool, int, int]], seen: dict[str, float]) -> None:
    passages = sum(t for _, _, t, _ in rows)
    tests = sum(t for _, test, t, _ in rows if test)
    share = earlier_order_share(rows)
    minutes = {name: seen[name] / 60 for name in seen}
    lines = [
        "## Searchable by meaning, part by part (`bench.embed_order`)",
        "",
        f"Command: `{command_line()}`",
        "",
        f"{args.tree} mined by a real daemon (extraction off): {len(rows):,} drawers, {passages:,} passages, "
        f"{tests:,} ({tests / passages:.0%}) of them in files that test code. The palace file read every "
        f"{args.every:g} s after the mine ended (a time is the first sample that saw it).",
        "",
        "| every drawer's first passage | every drawer but the tests' whole | every drawer whole |",
        "|---|---|---|",
        f"| {minutes['heads']:.1f} min | {minutes['untested']:.1f} min | {minutes['all']:.1f} min |",
        "",
        f"Before the tests' later passages came last (first passages, then later ones newest drawer first), the last "
        f"drawer but the tests' was whole at {share:.0%} of the passages, now at {this_order_share(rows):.0%}: "
        f"**{share * minutes['all']:.1f} min** at this run's rate, against **{minutes['untested']:.1f} min** seen. "
        "Nothing searchable changes at the end: the same passages, the same vectors.",
    ]
    publish("embed-order", lines, args.write)


if __name__ == "__main__":
    main()
