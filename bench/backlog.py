"""`python -m bench.backlog`: hybrid search while the embedding backlog is half done, and after a fresh mine.

The judged corpus is mined and embedded, then the vectors of every other drawer (by content hash) are withheld —
deleted, with no worker running to put them back — and the judged set is run under `lexical` and under `auto`
(hybrid). A drawer's rank must not depend on whether its vector exists yet: `auto` should never be worse than
lexical alone. The same palace with all its vectors is measured first, in the same run, for reference.

Then a fresh mine: the embedded judged palace mines `--fresh` drawers of this machine's standard library, whose
vectors are withheld in turn, and ten exact queries are asked (six consecutive words of a fresh drawer, one in every
tenth of them by content hash, the same drawers in every run). A query is *polluted* when a drawer found by meaning
alone — an embedded drawer holding none of its words — outranks one its words found that waits for its vectors
(target: 0 of 10); how many have such a drawer in their top 3 at all is shown beside it (where the words found one
drawer only, the next ones can only be found by meaning).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sqlite3
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.judged.data import load_corpus, load_queries
from bench.judged.metrics import run_judged, summarize
from bench.judged.palace import MinedPalace, build_palace, open_settings
from memcastle.app import Palace, build
from memcastle.model import Hit
from memcastle.model.requests import MineRequest
from memcastle.services import SearchRequest
from memcastle.store.sqlite import DB_FILE

METRICS = ("recall@5", "recall@10", "mrr")


def withhold_half(palace_dir: Path) -> tuple[int, int]:
    """Delete the vectors of every other drawer by content hash (the same drawers in every run); (drawers withheld,
    drawers kept)."""
    with sqlite3.connect(palace_dir / DB_FILE) as conn:
        seqs = [row[0] for row in conn.execute("SELECT seq FROM drawer ORDER BY content_hash, id")]
        withheld = seqs[::2]
        conn.executemany("DELETE FROM embedding WHERE drawer_seq = ?", [(s,) for s in withheld])
        conn.executemany("DELETE FROM embedded WHERE drawer_seq = ?", [(s,) for s in withheld])
    return len(withheld), len(seqs) - len(withheld)


STDLIB_PACKAGES = ("asyncio", "email", "http", "json", "logging", "unittest", "xml", "importlib", "concurrent",
                   "urllib", "multiprocessing", "sqlite3", "tomllib", "zoneinfo", "wsgiref", "xmlrpc", "html",
                   "collections", "re", "dbm", "ctypes", "curses", "venv", "encodings", "idlelib", "lib2to3",
                   "tkinter", "distutils", "pydoc_data", "test")  # fmt: skip
WORD = re.compile(r"(?<!\w)[A-Za-z]{4,}(?!\w)")  # whole words of letters: what the full-text index holds as such


def mine_fresh(workdir: Path, drawers: int, timeout: float = 900.0) -> list[str]:
    """Mine standard-library packages into wing `fresh` of the palace under `workdir` until about `drawers` drawers,
    then withhold every fresh drawer's vectors; the fresh drawers' ids, by content hash."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    palace = build(open_settings(workdir))
    palace.start()
    try:
        for package in STDLIB_PACKAGES:
            shutil.copytree(stdlib / package, workdir / "fresh" / package, ignore=shutil.ignore_patterns("__pycache__"))
            job = palace.services.mining.submit_mine(
                MineRequest("directory", str(workdir / "fresh" / package), {}, wing="fresh"), requested_by="cli"
            ).job
            deadline = time.monotonic() + timeout
            while not (done := palace.services.jobs.get_job(job.id)).is_finished:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"mining {package} took longer than {timeout} s")
                time.sleep(0.2)
            if done.error:
                raise RuntimeError(f"mining {package} failed: {done.error}")
            if palace.services.status.status().drawers >= drawers + judged_size(workdir):
                break
    finally:
        palace.stop()
    with sqlite3.connect(workdir / "palace" / DB_FILE) as conn:
        fresh = conn.execute(
            "SELECT d.seq, d.id FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            "WHERE w.name = 'fresh' ORDER BY d.content_hash, d.id"
        ).fetchall()
        conn.executemany("DELETE FROM embedding WHERE drawer_seq = ?", [(seq,) for seq, _ in fresh])
        conn.executemany("DELETE FROM embedded WHERE drawer_seq = ?", [(seq,) for seq, _ in fresh])
    return [drawer_id for _, drawer_id in fresh]


def judged_size(workdir: Path) -> int:
    with sqlite3.connect(workdir / "palace" / DB_FILE) as conn:
        return int(conn.execute(
            "SELECT COUNT(*) FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            "WHERE w.name <> 'fresh'"
        ).fetchone()[0])  # fmt: skip


def exact_queries(palace: Palace, fresh: list[str], count: int = 10) -> list[tuple[str, str]]:
    """(drawer id, six consecutive words of it) for one fresh drawer in every `count`-th of them, in the order
    given; a drawer with fewer than twelve such words gives way to the next."""
    out: list[tuple[str, str]] = []
    step = max(1, len(fresh) // count)
    for start in range(0, len(fresh), step):
        for drawer_id in fresh[start : start + step]:
            words = WORD.findall(palace.services.drawers.get_drawer(drawer_id).content)
            if len(words) >= 12:
                middle = len(words) // 2
                out.append((drawer_id, " ".join(words[middle : middle + 6])))
                break
        if len(out) == count:
            break
    return out


def pollution(palace: Palace, queries: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Per query: the exact drawer's rank, and the drawers found by meaning alone in the top 3."""
    rows = []
    for drawer_id, text in queries:
        hits = palace.services.search.search(SearchRequest(query=text, ranking="auto", limit=10)).hits
        ids = [hit.drawer.id for hit in hits]
        rows.append({
            "query": text, "rank": ids.index(drawer_id) + 1 if drawer_id in ids else None, "polluted": polluted(hits),
            "top3": any("lexical" not in hit.signals for hit in hits[:3]),
            "waiting_in_top3": sum("semantic_pending" in h.signals for h in hits[:3]),
        })  # fmt: skip
    return rows


def measure(mined: MinedPalace) -> dict[str, dict[str, float]]:
    queries = load_queries(mined.corpus)
    return {ranking: summarize(run_judged(mined, queries, ranking))["all"] for ranking in ("lexical", "auto")}


def polluted(hits: Sequence[Hit]) -> bool:
    """Whether a drawer found by meaning alone outranks a drawer the query's words found that waits for vectors."""
    meaning_only = [at for at, hit in enumerate(hits) if "lexical" not in hit.signals]
    waiting = [at for at, hit in enumerate(hits) if "semantic_pending" in hit.signals]
    return bool(meaning_only and waiting and meaning_only[0] < waiting[-1])


def judged_pollution(mined: MinedPalace) -> tuple[int, int, int]:
    """(polluted, meaning-only in the top 3, asked) over the judged set's lexical category: exact queries, as the
    fresh mine asks them."""
    asked = outranking = in_top = 0
    for query in load_queries(mined.corpus):
        if query.category != "lexical":
            continue
        hits = mined.search(mined.request(query.text, query.filters, "auto", limit=10)).hits
        asked += 1
        outranking += polluted(hits)
        in_top += any("lexical" not in hit.signals for hit in hits[:3])
    return outranking, in_top, asked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fresh", type=int, default=3000, help="drawers of the fresh mine (0: skip it)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memcastle-backlog-") as folder:
        workdir = Path(folder)
        mined = build_palace(workdir, load_corpus())
        try:
            complete = measure(mined)
        finally:
            mined.stop()
        withheld, kept = withhold_half(workdir / "palace")
        # Built but not started: no worker runs, so the withheld vectors stay missing while the queries run.
        palace = build(open_settings(workdir))
        half = MinedPalace(
            palace=palace,
            corpus=mined.corpus,
            workdir=workdir,
            instants=mined.instants,
            sources=mined.sources,
        )
        try:
            backlog = measure(half)
            outranking, in_top, asked = judged_pollution(half)
        finally:
            palace.stop()
    print(f"judged set, all queries; {withheld} drawers' vectors withheld, {kept} kept")
    print(f"{'palace':<18}{'ranking':<9}" + "".join(f"{m:>11}" for m in METRICS))
    for label, table in (("all embedded", complete), ("half embedded", backlog)):
        for ranking in ("lexical", "auto"):
            print(f"{label:<18}{ranking:<9}" + "".join(f"{table[ranking][m]:>11.3f}" for m in METRICS))
    worse = [m for m in ("recall@5", "mrr") if backlog["auto"][m] < backlog["lexical"][m]]
    print("auto is never worse than lexical on recall@5 and MRR" if not worse else f"auto is worse on {worse}")
    print(
        f"judged lexical queries, half embedded: {outranking} of {asked} polluted (a meaning-only drawer above a "
        f"waiting match); {in_top} of {asked} with a meaning-only drawer in the top 3"
    )
    if args.fresh:
        fresh_mine(args.fresh)


def fresh_mine(drawers: int) -> None:
    with tempfile.TemporaryDirectory(prefix="memcastle-backlog-fresh-") as folder:
        workdir = Path(folder)
        build_palace(workdir, load_corpus()).stop()
        fresh = mine_fresh(workdir, drawers)
        palace = build(open_settings(workdir))  # not started: the fresh drawers keep waiting for their vectors
        try:
            rows = pollution(palace, exact_queries(palace, fresh))
        finally:
            palace.stop()
    print(f"\nfresh mine: {len(fresh)} standard-library drawers waiting for vectors beside the embedded judged corpus")
    print(f"{'rank':>5} {'polluted':>9} {'meaning-only in top 3':>22} {'waiting in top 3':>17}  query")
    for row in rows:
        flags = ["yes" if row[key] else "no" for key in ("polluted", "top3")]
        print(f"{row['rank'] or '-':>5} {flags[0]:>9} {flags[1]:>22} {row['waiting_in_top3']:>17}  {row['query']}")
    print(
        f"polluted: {sum(bool(r['polluted']) for r in rows)} of {len(rows)} exact queries (target 0); a meaning-only "
        f"drawer in the top 3: {sum(bool(r['top3']) for r in rows)} of {len(rows)}"
    )


if __name__ == "__main__":
    main()
