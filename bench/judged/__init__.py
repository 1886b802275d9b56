"""The project's own judged retrieval set (SPEC §9): recall@k, nDCG@10 and MRR per category, plus the ADR 048
preference set, measured through MemCastle's real path.

The data lives in `eval/judged/` (original text about a fictional team, written for this purpose):

    corpus.json        the sources to mine (notes, project files, Claude Code and Codex transcripts), readable aliases
                       for transcript documents, and the supersession steps applied between mines
    notes/ project/ claude/ codex/     the sources as first mined (step 0)
    steps/<n>/         files written over the sources before mine n (edits and new documents)
    queries.json       judged queries: lexical, paraphrase, scoped, temporal, graph-ready
    preferences.json   the judged preference set; its policy is `preferences.toml`
    baseline.json      the figures the regression test compares against (written by --write-baseline)

The run: settings → `app.build` → `start` in a temporary palace; every source mined with `Services.submit_mine`;
then each supersession step is written over a copy of the sources and everything is mined again; the background
`embed` and `extract` sweeps are awaited after every mine; queries go through `Services.search(SearchRequest(...))`
with limit 10. The preference set restarts the same palace with the policy in `<palace>/preferences.toml` (the
policy is read at start-up; the drawers and their frozen metadata snapshots stay as mined).

A relevant document is named by its path under `eval/judged/` (a transcript also by an alias from corpus.json),
optionally `#text` that the drawer content must contain: that selects one revision of a document that changed
between mines. Drawer ids never appear in the data.

Metrics (means per category): recall@5, recall@10, nDCG@10 (graded), MRR over the direct hits, and `recall+graph`
over the whole response (direct hits, then graph-expanded ones). Exact ties count as ties: the engine orders them by
drawer id, which is random per palace, so each metric is its expectation over the tied orders (for hybrid, the tie
groups below the cut come from the two legs, fetched through the service at the hybrid's leg depth and fused again
with the engine's own `fuse`; the response must agree with that). Without this, two palaces mined from the
same files disagree on up to a sixth of the hybrid queries.

    python -m bench.judged                       # all three rankings and the preference set; prints the tables
    python -m bench.judged --write-baseline      # ... and writes eval/judged/baseline.json
    python -m bench.judged --rankings lexical --verbose
    python -m bench.judged --store postgresql://…    # the same on PostgreSQL, compared with the SQLite baseline
"""

from __future__ import annotations

from bench.judged.data import (
    METRICS,
    ROOT,
    TOLERANCE,
    load_corpus,
    load_preferences,
    load_queries,
)
from bench.judged.metrics import parity_gaps, parity_problems, regressions
from bench.judged.report import evaluate, format_table

__all__ = [
    "METRICS",
    "ROOT",
    "TOLERANCE",
    "evaluate",
    "format_table",
    "load_corpus",
    "load_preferences",
    "load_queries",
    "parity_gaps",
    "parity_problems",
    "regressions",
]
