"""`python -m bench.paired A.json B.json`: is B's difference from A on the same questions more than noise?

Reads two `--per-question` files of `bench.locomo` (each question's recall@10, per level/ranking, in the same order)
or of `bench.judged` (recall@5, recall@10 and MRR per ranking/category: `--metric recall_at_5`) or of
`bench.code_questions` (hit@5, hit@10 and MRR per ranking: `--metric hit_at_5`) and, per level/ranking, reports the
mean difference B − A, a paired bootstrap 95 % interval of it (10,000 resamples of the questions, seeded), and the
questions B does better and worse on with the two-sided sign test's p-value. A difference whose interval holds 0 is,
on these questions, noise.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact binomial test of `better` against `worse` at p = 1/2 (ties left out)."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(better, worse) + 1)) / 2**n
    return min(1.0, 2 * tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("baseline", type=Path)
    parser.add_argument("candidate", type=Path)
    parser.add_argument("--metric", default="recall_at_10", help="recall_at_10 (default), recall_at_5 or mrr")
    args = parser.parse_args()
    try:
        a = json.loads(args.baseline.read_text("utf-8"))[args.metric]
        b = json.loads(args.candidate.read_text("utf-8"))[args.metric]
    except KeyError:
        raise SystemExit(f"--metric {args.metric}: not in both files") from None
    except OSError as exc:
        raise SystemExit(f"cannot read {exc.filename}: {exc.strerror}") from None
    label = {"recall_at_10": "R@10", "recall_at_5": "R@5", "mrr": "MRR"}.get(args.metric, args.metric)
    rng = np.random.default_rng(20261203)
    print(f"| set | questions | A {label} | B {label} | B − A | 95 % interval | B better / worse | sign test p |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(set(a) & set(b)):
        x, y = np.array(a[key]), np.array(b[key])
        if len(x) != len(y):
            raise SystemExit(f"{key}: {len(x)} questions against {len(y)}: not the same questions")
        diff = y - x
        means = diff[rng.integers(0, len(diff), size=(10_000, len(diff)))].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        better, worse = int((diff > 0).sum()), int((diff < 0).sum())
        print(
            f"| {key} | {len(diff)} | {x.mean():.3f} | {y.mean():.3f} | {diff.mean():+.3f} | "
            f"[{low:+.3f}, {high:+.3f}] | {better} / {worse} | {sign_test(better, worse):.2f} |"
        )


if __name__ == "__main__":
    main()
