"""How often the built-in extractor's facts are right: precision on a labelled sample from a real docs folder.

The folder is mined as a user would (the `directory` connector, embeddings and extraction off), then the heuristic
extractor reads every drawer the extraction job would give it (code and data files are passed by, as by default).
Each fact is shown with the sentence it came from; a person labels it in `bench/facts_labels.tsv` (1 = the sentence
says exactly this about these two names, 0 = it does not: a wrong or cut subject or object, a word that is no name,
a claim the sentence does not make). Precision is counted over a fixed sample of the facts (every fact when there
are fewer), so an extractor that files fewer facts is judged on all of them.

    python -m bench.facts --tree /usr/share/doc [--sample 60] [--unlabelled] [--write]

Run it against an older extractor by putting that tree's `src` first on PYTHONPATH; the labels are shared.
"""

from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import json
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.common import BENCH_ROOTS, command_line, open_palace, wait_for, write_section
from memcastle.knowledge.extraction import ExtractionInput, HeuristicProvider, heuristic
from memcastle.knowledge.sweep import CODE_EXTENSIONS
from memcastle.model.requests import MineRequest

LABELS = Path(__file__).with_name("facts_labels.tsv")


@dataclass(frozen=True)
class Found:
    subject: str
    predicate: str
    object: str
    sentence: str
    document: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.subject, self.predicate, self.object, self.sentence)


def mined_texts(trees: list[Path]) -> list[tuple[str, str]]:
    """(document, text) of every drawer a mine of the trees files."""
    with tempfile.TemporaryDirectory() as temp:
        palace_dir = Path(temp) / "palace"
        flags = {"embeddings.provider": "none", "extraction.provider": "none"}
        palace = open_palace(palace_dir, **flags, **{"mining.roots": [*BENCH_ROOTS, *map(str, trees)]})
        try:
            for tree in trees:
                wait_for(palace, palace.services.mining.submit_mine(MineRequest("directory", str(tree))).job)
        finally:
            palace.stop()
        conn = sqlite3.connect(palace_dir / "palace.sqlite3")
        rows = conn.execute(
            "SELECT COALESCE(document, source_uri, id), content, origin FROM drawer ORDER BY seq"
        ).fetchall()
        conn.close()
    return [(str(document), str(content)) for document, content, origin in rows if not _is_code(origin)]


def _is_code(origin: str | None) -> bool:
    """Whether the extract sweep passes this drawer by (`extraction.code` is off by default): a code or data file."""
    metadata = json.loads(origin or "{}").get("metadata") or {}
    return str(metadata.get("extension", "")).lower() in CODE_EXTENSIONS


def sentences(text: str) -> list[str]:
    """The sentences the heuristic reads a text as."""
    readable = getattr(heuristic, "_readable", None)  # an older extractor read the text as it was
    return heuristic._sentences(readable(text) if readable else heuristic._FENCED_CODE.sub("\n\n", text))


def facts(texts: list[tuple[str, str]]) -> list[Found]:
    """Every relation the heuristic files, with the sentence it was read from (it links only within a sentence)."""
    provider = HeuristicProvider()
    found: list[Found] = []
    for document, text in texts:
        (whole,) = provider.extract([ExtractionInput(id="d", text=text, provenance={}, preference={})])
        if not whole.relations:
            continue
        for sentence in sentences(text):
            (one,) = provider.extract([ExtractionInput(id="s", text=sentence, provenance={}, preference={})])
            flat = " ".join(sentence.split())
            found += [Found(r.subject, r.predicate, r.object, flat, document) for r in one.relations]
    return found


def sample(found: list[Found], size: int) -> list[Found]:
    """Distinct facts, at most `size`, picked by a hash of the fact (stable across extractors and runs)."""
    distinct = {f.key: f for f in found}
    ordered = sorted(distinct.values(), key=lambda f: hashlib.sha256("\x1f".join(f.key).encode()).hexdigest())
    return ordered[:size]


def read_labels() -> dict[tuple[str, str, str, str], int]:
    if not LABELS.exists():
        return {}
    with LABELS.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader((line for line in handle if not line.startswith("#")), delimiter="\t")
        return {(s, p, o, sentence): int(label) for label, s, p, o, sentence in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, action="append", required=True, help="a folder to mine (repeatable)")
    parser.add_argument("--sample", type=int, default=60, help="facts judged (every fact when fewer)")
    parser.add_argument("--unlabelled", action="store_true", help="print the sampled facts that have no label")
    parser.add_argument("--name", default="extractor", help="what this run measures, for the results")
    parser.add_argument("--write", action="store_true", help="record the figures in bench/RESULTS.md")
    args = parser.parse_args()

    texts = mined_texts(args.tree)
    found = facts(texts)
    judged = sample(found, args.sample)
    labels = read_labels()
    missing = [f for f in judged if f.key not in labels]
    if args.unlabelled:
        writer = csv.writer(sys.stdout, delimiter="\t", lineterminator="\n")
        for f in missing:
            writer.writerow(["?", f.subject, f.predicate, f.object, f.sentence])
        return
    right = sum(labels[f.key] for f in judged if f.key in labels)
    labelled = len(judged) - len(missing)
    by_predicate = collections.Counter(f.predicate for f in found)
    drawers_with = len({f.document for f in found})
    lines = [
        f"{args.name}: {len(texts):,} drawers → {len(found):,} facts ({len({f.key for f in found}):,} distinct) "
        f"from {drawers_with:,} documents; by relation " + ", ".join(f"{p} {n}" for p, n in by_predicate.most_common()),
        f"precision on the sample: {right}/{labelled} = {right / max(1, labelled):.2f}"
        + (f" ({len(missing)} of {len(judged)} sampled not labelled)" if missing else f" ({len(judged)} judged)"),
    ]
    print("\n".join(lines))
    if args.write:
        write_section(f"facts-{args.name}", "\n\n".join([f"`{command_line()}`", *lines]))


if __name__ == "__main__":
    main()
