"""`python -m bench.backlog`: hybrid search while the embedding backlog is half done.

The judged corpus is mined and embedded, then the vectors of every other drawer (by id) are withheld — deleted, with
no worker running to put them back — and the judged set is run under `lexical` and under `auto` (hybrid). A drawer's
rank must not depend on whether its vector exists yet: `auto` should never be worse than lexical alone. The same
palace with all its vectors is measured first, in the same run, for reference.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

from bench.judged.data import load_corpus, load_queries
from bench.judged.metrics import run_judged, summarize
from bench.judged.palace import MinedPalace, build_palace, open_settings
from memcastle.app import build
from memcastle.store.sqlite import DB_FILE

METRICS = ("recall@5", "recall@10", "mrr")


def withhold_half(palace_dir: Path) -> tuple[int, int]:
    """Delete the vectors of every other drawer in id order; (drawers withheld, drawers kept)."""
    with sqlite3.connect(palace_dir / DB_FILE) as conn:
        seqs = [row[0] for row in conn.execute("SELECT seq FROM drawer ORDER BY id")]
        withheld = seqs[::2]
        conn.executemany("DELETE FROM embedding WHERE drawer_seq = ?", [(s,) for s in withheld])
        conn.executemany("DELETE FROM embedded WHERE drawer_seq = ?", [(s,) for s in withheld])
    return len(withheld), len(seqs) - len(withheld)


def measure(mined: MinedPalace) -> dict[str, dict[str, float]]:
    queries = load_queries(mined.corpus)
    return {ranking: summarize(run_judged(mined, queries, ranking))["all"] for ranking in ("lexical", "auto")}


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
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
        finally:
            palace.stop()
    print(f"judged set, all queries; {withheld} drawers' vectors withheld, {kept} kept")
    print(f"{'palace':<18}{'ranking':<9}" + "".join(f"{m:>11}" for m in METRICS))
    for label, table in (("all embedded", complete), ("half embedded", backlog)):
        for ranking in ("lexical", "auto"):
            print(f"{label:<18}{ranking:<9}" + "".join(f"{table[ranking][m]:>11.3f}" for m in METRICS))
    worse = [m for m in ("recall@5", "mrr") if backlog["auto"][m] < backlog["lexical"][m]]
    print("auto is never worse than lexical on recall@5 and MRR" if not worse else f"auto is worse on {worse}")


if __name__ == "__main__":
    main()
