"""What writing notes one by one costs: LoCoMo's dialogue turns filed through the note service, one after another,
as an agent files them (the path on which a note's neighbours are the notes written beside it, ADR 0056).

Reports the process CPU seconds per note written, the palace's size on disk after VACUUM with its full-text and
context pages (SQLite's `dbstat`), and the lexical search's p50/p95 over LoCoMo's questions. Embeddings and
extraction are off, so only the writes and the full-text index are measured.

    python -m bench.note_writes [--set search.context_weight=0]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import OVERRIDES, parse_override
from bench.locomo import DEFAULT_DATA, load_conversations, wing_of
from memcastle.app import build
from memcastle.config import load_settings
from memcastle.services import SearchRequest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    OVERRIDES.update(parse_override(pair) for pair in args.set)
    conversations = load_conversations(args.data)
    with tempfile.TemporaryDirectory(prefix="memcastle-notes-") as tmp:
        flags = {"palace": str(Path(tmp) / "palace"), "embeddings.provider": "none", "extraction.provider": "none"}
        palace = build(load_settings(flags={**flags, **OVERRIDES}, env={}))
        palace.start()
        try:
            started, written = time.process_time(), 0
            for conversation in conversations:
                for session in conversation.sessions:
                    for turn in session.turns:
                        wing = wing_of(conversation, "turn")
                        palace.services.drawers.save_note(turn.line(), wing=wing, room="dialogue", name=turn.dia_id)
                        written += 1
            cpu = time.process_time() - started
            latencies = []
            for conversation in conversations:
                for question in conversation.questions:
                    began = time.perf_counter()
                    request = SearchRequest(question.text, wing=wing_of(conversation, "turn"), ranking="lexical")
                    palace.services.search.search(request)
                    latencies.append(time.perf_counter() - began)
        finally:
            palace.stop()
        path = Path(tmp) / "palace" / "palace.sqlite3"
        with sqlite3.connect(path) as conn:
            conn.execute("VACUUM")
            index = conn.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'drawer_fts%' OR name LIKE 'drawer_context%'"
            ).fetchone()[0]
        size = path.stat().st_size
    latencies.sort()
    print(
        f"{written} notes: write CPU {cpu / written * 1000:.2f} ms a note; palace {size / 1e6:.2f} MB, full-text and "
        f"context pages {index / 1e6:.2f} MB; lexical search p50 {statistics.median(latencies) * 1000:.1f} ms, "
        f"p95 {latencies[int(0.95 * len(latencies))] * 1000:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
