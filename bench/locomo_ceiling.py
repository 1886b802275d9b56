"""How far can fusion take LoCoMo? One ingest (bench.locomo's), then two measurements on the same palace:

- **fusion variants**: hybrid R@5 / R@10 at both levels under calibrated fusion with other leg weights and anchor
  ranks, and under reciprocal rank fusion — the shipped setting is the first row;
- **the candidates' ceiling**: the share of evidence found by the lexical leg alone, the semantic leg alone, and
  their union, each leg fetched to 10, 20 and 50 — what a perfect re-ranker of those candidates could reach.

    python -m bench.locomo_ceiling                 # prints both tables and writes them to RESULTS.md
    python -m bench.locomo_ceiling --no-write

Data as in bench.locomo (LoCoMo, CC BY-NC 4.0, evaluation use only; read in place, never copied).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.common import command_line, write_section
from bench.locomo import (
    DEFAULT_DATA,
    Conversation,
    evaluate,
    ingest,
    load_conversations,
    open_palace,
    relevant_units,
    unit_of,
    wing_of,
)
from memcastle.app import Palace
from memcastle.search import fusion
from memcastle.search.fusion import FusionWeights
from memcastle.services import SearchRequest

# (method, lexical weight, semantic weight, anchor rank or rrf k); the first is the shipped setting.
VARIANTS = (
    ("calibrated", 0.6, 0.4, 20),
    ("calibrated", 0.5, 0.5, 20),
    ("calibrated", 0.7, 0.3, 20),
    ("calibrated", 0.6, 0.4, 10),
    ("calibrated", 0.6, 0.4, 40),
    ("rrf", 1.0, 1.0, 60),
    ("rrf", 1.0, 1.0, 20),
    ("rrf", 1.5, 1.0, 60),
)
DEPTHS = (10, 20, 50)
LEVELS = ("turn", "session")


def fusion_rows(palace: Palace, conversations: Sequence[Conversation]) -> list[str]:
    engine = palace.services.search._engine  # a measurement of fusion itself: the weights are swapped in place
    shipped = (engine._weights, fusion.ANCHOR_RANK)
    rows = []
    try:
        for method, lexical, semantic, constant in VARIANTS:
            fusion.ANCHOR_RANK = constant if method == "calibrated" else shipped[1]
            engine._weights = FusionWeights(
                method=method, k=constant if method == "rrf" else 60, lexical=lexical, semantic=semantic
            )
            cells = []
            for level in LEVELS:
                recall = evaluate(palace, conversations, level, "hybrid").overall.row()
                cells += [f"{recall[1]:.3f}", f"{recall[2]:.3f}"]
            setting = f"anchor {constant}" if method == "calibrated" else f"k {constant}"
            row = f"| {method} {lexical:g} / {semantic:g}, {setting} | " + " | ".join(cells) + " |"
            print(row, flush=True)
            rows.append(row)
    finally:
        engine._weights, fusion.ANCHOR_RANK = shipped
    return rows


def ceiling_rows(palace: Palace, conversations: Sequence[Conversation]) -> list[str]:
    rows = []
    for level in LEVELS:
        for depth in DEPTHS:
            found = {"lexical": 0.0, "semantic": 0.0, "union": 0.0}
            count = 0
            for conversation in conversations:
                wing = wing_of(conversation, level)
                for question in conversation.questions:
                    relevant = relevant_units(question, level)
                    units = {}
                    for ranking in ("lexical", "semantic"):
                        result = palace.services.search.search(
                            SearchRequest(query=question.text, wing=wing, limit=depth, ranking=ranking)
                        )
                        units[ranking] = {u for u in (unit_of(h, level) for h in result.hits) if u}
                    found["lexical"] += len(relevant & units["lexical"]) / len(relevant)
                    found["semantic"] += len(relevant & units["semantic"]) / len(relevant)
                    found["union"] += len(relevant & (units["lexical"] | units["semantic"])) / len(relevant)
                    count += 1
            row = f"| {level} | {depth} | " + " | ".join(f"{v / count:.3f}" for v in found.values()) + " |"
            print(row, flush=True)
            rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    conversations = load_conversations(args.data)
    with tempfile.TemporaryDirectory(prefix="locomo-ceiling-") as temporary:
        root = Path(temporary)
        palace = open_palace(root)
        try:
            ingest(palace, conversations, LEVELS, root / "notes", timeout=3600)
            variants = fusion_rows(palace, conversations)
            ceiling = ceiling_rows(palace, conversations)
        finally:
            palace.stop()
    section = "\n".join(
        [
            "## LoCoMo dev: fusion variants and the candidates' ceiling",
            "",
            f"Command: `{command_line()}`",
            "",
            "Hybrid recall under other fusions (the first row is the shipped setting):",
            "",
            "| fusion | turn R@5 | turn R@10 | session R@5 | session R@10 |",
            "|---|---|---|---|---|",
            *variants,
            "",
            "Share of evidence among each leg's candidates, and their union (a perfect re-ranker's ceiling):",
            "",
            "| level | depth per leg | lexical | semantic | union |",
            "|---|---|---|---|---|",
            *ceiling,
        ]
    )
    if not args.no_write:
        write_section("locomo-ceiling", section)


if __name__ == "__main__":
    main()
