"""Mining speed: the `directory` connector over a generated tree, embeddings deferred (SPEC §9: ≥ 300 files/s).

The same-run baseline is a bare walk that reads and hashes every file (the I/O floor), so the ratio shows what the
pipeline (revision check, chunking, transactions) costs on this machine today.

    python -m bench.mine [--files 5000] [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import tempfile
import time
from pathlib import Path

from bench.common import command_line, median, open_palace, wait_for, write_section
from memcastle.model.requests import MineRequest


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    """Made-up words, so files share a realistic amount of text (a tiny vocabulary makes every file a near copy)."""
    syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "da", "zu", "fe", "go", "hi", "ju", "wo"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def generate(root: Path, files: int, seed: int = 7) -> int:
    """A project-like tree: nested folders, code and prose files of 0.5–6 KB with Zipf-distributed words."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    total = 0
    for index in range(files):
        folder = root / f"pkg{index % 37:02d}" / f"sub{index % 11}"
        folder.mkdir(parents=True, exist_ok=True)
        suffix = rng.choice((".py", ".md", ".ts", ".txt", ".toml"))
        paragraphs = [" ".join(rng.choices(words, weights, k=rng.randint(20, 120))) for _ in range(rng.randint(1, 8))]
        text = f"# file {index}\n\n" + "\n\n".join(paragraphs) + "\n"
        (folder / f"f{index:05d}{suffix}").write_text(text, encoding="utf-8")
        total += len(text)
    return total


def bare_walk(root: Path) -> float:
    started = time.perf_counter()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            hashlib.sha256(path.read_bytes()).hexdigest()
    return time.perf_counter() - started


def mine_once(root: Path, palace_dir: Path) -> tuple[float, dict[str, int]]:
    palace = open_palace(palace_dir, **{"embeddings.provider": "none"})
    try:
        started = time.perf_counter()
        job = palace.services.mining.submit_mine(MineRequest("directory", str(root))).job
        done = wait_for(palace, job)
        elapsed = time.perf_counter() - started
        assert done.result is not None and done.status.value == "completed", done.error
        return elapsed, {k: int(v) for k, v in done.result.items() if isinstance(v, int)}
    finally:
        palace.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write the figures to bench/RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-mine-") as temp:
        root = Path(temp) / "tree"
        size = generate(root, args.files)
        bare = [bare_walk(root) for _ in range(args.runs)]
        times, remine, result = [], [], {}
        for run in range(args.runs):
            elapsed, result = mine_once(root, Path(temp) / f"palace{run}")
            times.append(elapsed)
            again, again_result = mine_once(root, Path(temp) / f"palace{run}")
            assert again_result["created"] == 0
            remine.append(again)
        rate = args.files / median(times)
        lines = [
            "## Mining: `directory` connector, embeddings deferred",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Tree: {args.files} generated files, {size / 1e6:.1f} MB; {args.runs} runs, medians.",
            "",
            "| measure | median | all runs |",
            "|---|---|---|",
            f"| first mine (s) | {median(times):.2f} | {', '.join(f'{t:.2f}' for t in times)} |",
            f"| **files/s** (target ≥ 300) | **{rate:.0f}** | |",
            f"| re-mine, nothing changed (s) | {median(remine):.2f} | {', '.join(f'{t:.2f}' for t in remine)} |",
            f"| baseline: bare read + SHA-256 of every file (s) | {median(bare):.3f} | "
            f"{', '.join(f'{t:.3f}' for t in bare)} |",
            f"| ratio first mine / baseline | {median(times) / median(bare):.1f}× | |",
            "",
            f"Last result counts: {result}",
        ]
        report = "\n".join(lines)
        print(report)
        if args.write:
            write_section("mine", report)


if __name__ == "__main__":
    main()
