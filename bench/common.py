"""Shared bench plumbing: a palace in a temp dir, waiting for jobs, and writing a section of RESULTS.md."""

from __future__ import annotations

import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.model import Job

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


# The benchmarks mine trees they generate under the temporary directory: that is their mining root.
BENCH_ROOTS = [tempfile.gettempdir()]


# Settings a measurement changes from the defaults (`--set key=value` of bench.judged and bench.locomo): for trying
# a policy before it becomes the default; a run with overrides does not write the recorded results.
OVERRIDES: dict[str, Any] = {}


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value`, the value read as JSON when it is JSON (numbers, booleans, lists) and as text otherwise."""
    import json

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected key=value, got {text!r}")
    try:
        return key.strip(), json.loads(value)
    except ValueError:
        return key.strip(), value


def add_overrides(parser: Any) -> None:
    """`--set KEY=VALUE` (repeatable) on a benchmark's parser; `apply_overrides` reads it."""
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a setting other than the default (repeatable)"
    )


def apply_overrides(parser: Any, args: Any) -> None:
    """The parsed `--set`s into OVERRIDES; a run that writes the recorded results takes none."""
    try:
        OVERRIDES.update(parse_override(pair) for pair in args.set)
    except ValueError as exc:
        parser.error(str(exc))
    if args.set and getattr(args, "write", False):
        parser.error("the recorded results are measured with the defaults; drop --set")


def open_palace(path: Path, **flags: Any) -> Palace:
    """Build and start a palace with the given settings (dotted keys) and the run's `--set` overrides, no environment
    or config file."""
    settings = load_settings(
        flags={"palace": str(path), "mining.roots": BENCH_ROOTS, **flags, **OVERRIDES}, env={}, config_file=None
    )
    palace = build(settings)
    palace.start()
    return palace


def wait_for(
    palace: Palace,
    job: Job,
    timeout: float = 3600,
    tick: Callable[[Job], None] | None = None,
    *,
    links: bool = True,
) -> Job:
    """Until the job is finished; for a mine, with `links`, also until the copies sweep that follows it has linked
    every drawer it queued (ADR 0058), so that no sweep runs beside what is measured next."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = palace.services.jobs.get_job(job.id)
        if tick:
            tick(job)
        if job.is_finished:
            if links and job.kind == "mine":
                wait_for_links(palace, deadline - time.monotonic())
            return job
        time.sleep(0.05)
    raise TimeoutError(f"job {job.id} did not finish in {timeout}s")


def wait_for_links(palace: Palace, timeout: float = 3600) -> None:
    """Until no drawer is queued for the copies sweep and no sweep is queued or running."""
    deadline = time.monotonic() + timeout
    while palace.store.near.count_pending() or any(
        not job.is_finished for job in palace.services.jobs.list_jobs(None, "link", 5)
    ):
        if time.monotonic() > deadline:
            raise TimeoutError("the copies sweep did not finish")
        time.sleep(0.02)


def wait_for_embeddings(palace: Palace, timeout: float = 7200) -> float:
    """Block until no drawer waits for embeddings; returns the seconds waited."""
    started = time.monotonic()
    palace.services.jobs.request_embedding()
    while palace.services.status.embedding_status().pending:
        if time.monotonic() - started > timeout:
            raise TimeoutError("embeddings did not catch up")
        time.sleep(0.2)
    for job in palace.services.jobs.list_jobs(None, "embed", 5):
        if not job.is_finished:
            wait_for(palace, job)
    return time.monotonic() - started


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def machine() -> str:
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def command_line() -> str:
    """The command as typed from the repository root: `python -m bench.<script> …`."""
    script = Path(sys.argv[0]).resolve()
    module = "bench.judged" if script.parent.name == "judged" else f"bench.{script.stem}"
    return " ".join(["python -m", module, *sys.argv[1:]])


def write_section(name: str, body: str) -> None:
    """Replace the `<!-- name:start -->…<!-- name:end -->` section of bench/RESULTS.md (appending it if new)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = body.rstrip()
    if not body.splitlines()[-1].startswith("_Run "):  # a body that says when it ran keeps its own line
        body += f"\n\n_Run {stamp} on {machine()}._"
    block = f"{start}\n{body}\n{end}"
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(text, encoding="utf-8")


def publish(section: str, lines: list[str], write: bool) -> None:
    """A benchmark's report: said when and where it ran, printed, and written to its section of RESULTS.md when
    asked (`--write`)."""
    text = "\n".join([*lines, "", f"_Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}._"])
    print(text)
    if write:
        write_section(section, text)
