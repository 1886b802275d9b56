"""`python -m bench.passage_tails [--tree DIR] [--windows 700,1400] [--exclude test] [--write]`: how much of a code
base a search by meaning never sees, for each passage size.

Cuts every `.py` file under the tree (the standard library by default, without the top-level folders `--exclude`
names) into passages as the embed sweep does (`split_passages` at each window), counts each passage's word pieces
with the builtin model's tokenizer (untruncated), and reports the passages, the word pieces, and those past the
model's input (`MAX_TOKENS`): cut off before embedding, so never compared with a query. No model runs.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from tokenizers import Tokenizer

from bench.common import command_line, write_section
from memcastle.search.embeddings import MAX_TOKENS
from memcastle.search.passages import split_passages

STDLIB = Path(os.__file__).parent


def sources(tree: Path, excluded: Sequence[str]) -> list[str]:
    texts = []
    for path in sorted(tree.rglob("*.py")):
        parts = path.relative_to(tree).parts
        if parts[0] in excluded or "site-packages" in parts:
            continue
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return texts


def count(texts: Sequence[str], window: int, tokenizer: Tokenizer) -> tuple[int, int, int, int]:
    """(passages, word pieces, word pieces past the model's input, passages longer than it)."""
    passages = [passage for text in texts for passage in split_passages(text, window)]
    total = cut = over = 0
    for start in range(0, len(passages), 2000):
        for encoding in tokenizer.encode_batch(passages[start : start + 2000]):
            total += len(encoding.ids)
            if len(encoding.ids) > MAX_TOKENS:
                cut += len(encoding.ids) - MAX_TOKENS
                over += 1
    return len(passages), total, cut, over


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=STDLIB)
    parser.add_argument("--windows", default="700,1400")
    parser.add_argument("--exclude", default="test", help="top-level folders of the tree to leave out")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    tokenizer = Tokenizer.from_str(resources.files("memcastle.data").joinpath("minilm-tokenizer.json").read_text("utf-8"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    excluded = [name for name in args.exclude.split(",") if name]
    texts = sources(args.tree, excluded)
    left_out = f" without {', '.join(f'`{name}`' for name in excluded)}" if excluded else ""
    lines = [
        "## What a passage size leaves unembedded (`bench.passage_tails`)",
        "",
        f"Command: `{command_line()}`",
        "",
        f"The `.py` files of {args.tree}{left_out} ({len(texts):,} files), cut as the embed sweep cuts them and "
        f"counted with the builtin model's tokenizer; the model reads {MAX_TOKENS} word pieces of a passage.",
        "",
        "| passage chars | passages | word pieces | past the model's input | passages over it |",
        "|---:|---:|---:|---:|---:|",
    ]
    for window in (int(w) for w in args.windows.split(",")):
        passages, total, cut, over = count(texts, window, tokenizer)
        share, longer = f"{cut / total:.1%}", f"{over / passages:.0%}"
        lines.append(f"| {window:,} | {passages:,} | {total:,} | {cut:,} ({share}) | {over:,} ({longer}) |")
    print("\n".join(lines))
    if args.write:
        write_section("passage-tails", "\n".join(lines))


if __name__ == "__main__":
    main()
