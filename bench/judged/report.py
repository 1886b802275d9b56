"""Running the whole evaluation, formatting its tables and writing the baseline."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.judged.checks import validate
from bench.judged.data import (
    LIMIT,
    METRICS,
    RANKINGS,
    ROOT,
    TOLERANCE,
    Corpus,
    load_corpus,
    load_preferences,
    load_queries,
)
from bench.judged.metrics import Outcome, run_judged, summarize
from bench.judged.palace import build_palace, reopen_with_policy
from bench.judged.preferences import PreferenceOutcome, run_preferences
from memcastle.clock import utc_now


def format_table(tables: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    header = ["ranking", "category", "n", *METRICS]
    rows = [header]
    for ranking, table in tables.items():
        for category, metrics in table.items():
            rows.append([ranking, category, str(int(metrics["n"])), *(f"{metrics[m]:.3f}" for m in METRICS)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def format_misses(outcomes: Sequence[Outcome]) -> str:
    lines = []
    for o in outcomes:
        if o.metrics["recall@10"] < 1 or o.metrics["mrr"] < 1:
            lines.append(
                f"  {o.ranking:8} {o.query.id:14} R@10 {o.metrics['recall@10']:.2f} MRR {o.metrics['mrr']:.2f}"
                f"  {o.query.text!r}"
            )
            for ref, rank in zip(o.query.relevant, o.found, strict=True):
                lines.append(f"      want {ref.label}  rank {rank}")
            for i, (key, text) in enumerate(o.hits[:5], start=1):
                lines.append(f"      {i}. {key}  {text!r}")
    return "\n".join(lines)


def format_preferences(outcomes: Sequence[PreferenceOutcome]) -> str:
    lines = []
    for o in outcomes:
        state = ("ok  " if o.passed else "FAIL") + ("*" if o.known_failure else " ")
        flip = (
            "tied for first without the policy"
            if o.neutral_tie
            else "flipped by the policy"
            if o.flipped
            else "same first hit without the policy"
        )
        lines.append(f"  {state} {o.case.id:10} {o.ranking:7} {o.case.kind:15} first {o.top}; {flip}")
        lines.extend(f"          - {p}" for p in o.problems)
        if o.known_failure:
            lines.append(f"          known failure: {o.known_failure}")
    return "\n".join(lines)


@dataclass
class Evaluation:
    """Everything one run measured."""

    outcomes: dict[str, list[Outcome]]  # ranking → one outcome per query
    tables: dict[str, dict[str, dict[str, float]]]  # ranking → category → metric → mean
    problems: list[str]  # problems with the judged data (see `validate`)
    preferences: list[PreferenceOutcome]
    corpus: dict[str, int]
    timings: dict[str, float]


def evaluate(
    workdir: Path, rankings: Sequence[str] = RANKINGS, corpus: Corpus | None = None, *, store_url: str = ""
) -> Evaluation:
    """The whole run in `workdir`: mine the corpus, check the data, run the judged set under each ranking, then
    restart the palace with the set's policy and run the preference set. `store_url` (a postgresql:// URL of an
    empty palace) keeps the palace in PostgreSQL instead of SQLite."""
    started = time.monotonic()
    corpus = corpus or load_corpus()
    queries = load_queries(corpus)
    preferences = load_preferences(corpus)
    mined = build_palace(workdir, corpus, store_url=store_url)
    try:
        drawers = mined.all_drawers()
        problems = validate(mined, queries, preferences)
        outcomes = {ranking: run_judged(mined, queries, ranking) for ranking in rankings}
    finally:
        mined.stop()
    timings = {**mined.timings, "judged": time.monotonic() - started}
    preferring = reopen_with_policy(mined, preferences.policy_toml)
    try:
        preference_outcomes = run_preferences(preferring, preferences)
    finally:
        preferring.stop()
    timings["total"] = time.monotonic() - started
    return Evaluation(
        outcomes=outcomes,
        tables={ranking: summarize(found) for ranking, found in outcomes.items()},
        problems=problems,
        preferences=preference_outcomes,
        corpus={
            "documents": len({mined.doc_key(d) for d in drawers}),
            "drawers": len(drawers),
            "current": sum(d.valid_to is None for d in drawers),
        },
        timings=timings,
    )


def measure(
    rankings: Sequence[str] = RANKINGS, *, verbose: bool = False, out: Any = sys.stdout, store_url: str = ""
) -> Evaluation:
    """`evaluate` in a temporary folder, with the tables printed."""
    with tempfile.TemporaryDirectory(prefix="memcastle-judged-") as folder:
        run = evaluate(Path(folder), rankings, store_url=store_url)
    print(
        f"corpus: {run.corpus['documents']} documents, {run.corpus['drawers']} drawers ({run.corpus['current']} "
        f"current); mined, embedded and extracted in {run.timings['mine_and_embed']:.1f} s",
        file=out,
    )
    print(format_table(run.tables), file=out)
    if verbose:
        for ranking in rankings:
            print(format_misses(run.outcomes[ranking]), file=out)
    passed = sum(o.passed for o in run.preferences)
    known = sum(1 for o in run.preferences if o.known_failure)
    print(
        f"preference set: {passed}/{len(run.preferences)} checks pass ({known} known failures, marked *); "
        f"{sum(o.flipped for o in run.preferences if o.case.kind == 'near_tie')} near ties decided by the policy",
        file=out,
    )
    print(format_preferences(run.preferences), file=out)
    if run.problems:
        print("problems with the judged data:", file=out)
        print("\n".join(f"  {p}" for p in run.problems), file=out)
    print(f"run time {run.timings['total']:.1f} s", file=out)
    return run


def write_baseline(run: Evaluation, path: Path | None = None) -> Path:
    path = path or ROOT / "baseline.json"
    baseline = {
        "command": "python -m bench.judged --write-baseline",
        "created": utc_now(),
        "tolerance": TOLERANCE,
        "limit": LIMIT,
        "note": "means per category; metrics are expectations over exactly tied hits (see expected_metrics)",
        "corpus": run.corpus,
        "metrics": run.tables,
        "preferences": {
            "checks": len(run.preferences),
            "passed": sum(o.passed for o in run.preferences),
            "known_failures": sorted(f"{o.case.id} {o.ranking}" for o in run.preferences if o.known_failure),
        },
    }
    path.write_text(json.dumps(baseline, indent=2) + "\n", encoding="utf-8")
    return path
