"""`python -m bench.judged`: measure, compare with the baseline, optionally write it."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import OVERRIDES, parse_override
from bench.judged.data import PARITY, RANKINGS, ROOT
from bench.judged.metrics import parity_gaps, parity_problems
from bench.judged.report import Evaluation, measure, write_baseline


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--rankings", default=",".join(RANKINGS), help="comma-separated subset of lexical, semantic, hybrid"
    )
    parser.add_argument("--write-baseline", action="store_true", help="write eval/judged/baseline.json")
    parser.add_argument("--verbose", action="store_true", help="list every query that misses, with its top hits")
    parser.add_argument(
        "--store",
        default="",
        metavar="URL",
        help="keep the palace in this (empty) PostgreSQL database and compare every metric with "
        f"the SQLite baseline (parity: within {PARITY})",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a setting other than the default (repeatable)"
    )
    parser.add_argument(
        "--per-question",
        type=Path,
        metavar="FILE",
        help="write each query's recall@5, recall@10 and MRR per ranking/category (JSON) for bench.paired",
    )
    args = parser.parse_args(argv)
    try:
        OVERRIDES.update(parse_override(pair) for pair in args.set)
    except ValueError as exc:
        parser.error(str(exc))
    if args.set and args.write_baseline:
        parser.error("the baseline is measured with the defaults; drop --set")
    if args.store and args.write_baseline:
        parser.error("the baseline is measured on SQLite; drop --store")
    args.rankings = tuple(r.strip() for r in args.rankings.split(",") if r.strip())
    unknown = set(args.rankings) - set(RANKINGS)
    if unknown:
        parser.error(f"unknown rankings {sorted(unknown)}; choose from {', '.join(RANKINGS)}")
    return args


PAIRED_METRICS = {"recall_at_5": "recall@5", "recall_at_10": "recall@10", "mrr": "mrr"}


def per_question(run: Evaluation) -> dict[str, Any]:
    """Each query's metrics, in the queries' order, keyed `ranking/category` (and `ranking/all`): what
    `bench.paired --metric …` compares query by query."""
    out: dict[str, Any] = {name: {} for name in PAIRED_METRICS}
    for ranking, outcomes in run.outcomes.items():
        for name, metric in PAIRED_METRICS.items():
            groups: dict[str, list[float]] = {f"{ranking}/all": []}
            for outcome in outcomes:
                groups[f"{ranking}/all"].append(outcome.metrics[metric])
                groups.setdefault(f"{ranking}/{outcome.query.category}", []).append(outcome.metrics[metric])
            out[name].update(groups)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = measure(args.rankings, verbose=args.verbose, store_url=args.store)
    if args.per_question:
        args.per_question.write_text(json.dumps(per_question(run)) + "\n", encoding="utf-8")
    if args.store:
        baseline = json.loads((ROOT / "baseline.json").read_text(encoding="utf-8"))
        print(
            f"against the SQLite baseline (parity: all queries within {PARITY}, no category more than {PARITY} below):"
        )
        problems = []
        for ranking in args.rankings:
            expected = baseline["metrics"][ranking]
            for gap in parity_gaps(run.tables[ranking], expected, ranking):
                if gap.category == "all" or abs(gap.difference) > PARITY:
                    print(f"  {gap}")
            problems.extend(parity_problems(run.tables[ranking], expected, ranking))
        print("parity: " + ("ok" if not problems else "NOT met:\n  " + "\n  ".join(problems)))
        return 1 if problems else 0
    unexpected = [o for o in run.preferences if not o.passed and not o.known_failure]
    if args.write_baseline:
        if run.problems or unexpected:
            print(
                "not writing a baseline: the judged data has problems or a preference rule broke unexpectedly",
                file=sys.stderr,
            )
            return 1
        if set(args.rankings) != set(RANKINGS):
            print("a baseline covers all three rankings; drop --rankings", file=sys.stderr)
            return 1
        print(f"wrote {write_baseline(run)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
