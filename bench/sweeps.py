"""`python -m bench.sweeps --sizes 10000 30000`: the heuristic extract sweep's rate and CPU per drawer by palace size.

For each size, a palace is filled straight through the store (notes of ~600 characters naming people, projects and
tools, so the heuristic extractor has work), then one extract sweep runs on a started palace with embeddings off. The
figures are wall drawers/s and the process CPU per drawer while the sweep runs (the daemon's whole process: the
sweep's queries and the extractor). Linear work shows as the same CPU per drawer at every size.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.common import command_line, machine, write_section
from memcastle.app import build
from memcastle.config import load_settings
from memcastle.knowledge.sweep import KIND as EXTRACT
from memcastle.model import JobStatus, NewDrawer

PEOPLE = ("Ana Lopez", "Bo Chen", "Carla Diaz", "Dev Patel", "Eli Novak", "Femi Ade")
PROJECTS = ("Checkout", "Lanternfish", "Billing", "Search", "Dispatch")
TOOLS = ("PostgreSQL", "Redis", "Kafka", "Terraform", "Grafana")


def note(i: int) -> str:
    person, project, tool = PEOPLE[i % 6], PROJECTS[i % 5], TOOLS[i % 4]
    return (
        f"Note {i}. {person} works on {project}. {project} uses {tool}. {person} owns the {project} runbook; "
        f"the {project} team depends on {TOOLS[(i + 1) % 5]} for queues and on {TOOLS[(i + 2) % 5]} for metrics. "
        "Decisions are recorded in the weekly notes, and incidents are reviewed on Fridays with the whole team. "
        f"Open question {i % 17}: whether {project} should move its jobs off {tool} before the next release."
    )


def fill(palace_dir: Path, count: int) -> None:
    settings = load_settings(
        flags={"palace": str(palace_dir), "embeddings.provider": "none", "extraction.provider": "none"},
        env={},
        config_file=None,
    )
    palace = build(settings)
    try:
        for i in range(count):
            palace.store.drawers.add_drawer(NewDrawer(wing="bench", room=f"r{i % 20}", content=note(i)))
    finally:
        palace.stop()


def measure(count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="memcastle-sweeps-") as folder:
        palace_dir = Path(folder) / "palace"
        fill(palace_dir, count)
        settings = load_settings(
            flags={"palace": str(palace_dir), "embeddings.provider": "none"}, env={}, config_file=None
        )
        palace = build(settings)
        try:
            # The palace asks for the sweep itself when it starts with unread drawers: time from the start.
            cpu, wall = time.process_time(), time.monotonic()
            palace.start()
            deadline = wall + 7200
            while True:
                jobs = palace.services.jobs.list_jobs(None, EXTRACT, 10)
                if jobs and all(j.status is JobStatus.COMPLETED for j in jobs):
                    if not palace.services.status.extraction_status().pending:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("the extract sweep did not finish")
                time.sleep(0.05)
            cpu, wall = time.process_time() - cpu, time.monotonic() - wall
            read = sum(int((j.result or {}).get("drawers", 0)) for j in jobs)
            assert read == count, f"the sweeps read {read} of {count} drawers"
        finally:
            palace.stop()
    return {"drawers": count, "seconds": wall, "per_second": count / wall, "cpu_ms_per_drawer": 1000 * cpu / count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--write", action="store_true", help="record the figures in bench/RESULTS.md")
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        row = measure(size)
        rows.append(row)
        print(
            f"{size:>8} drawers: {row['seconds']:.1f} s, {row['per_second']:.0f} drawers/s, "
            f"{row['cpu_ms_per_drawer']:.2f} ms CPU per drawer",
            flush=True,
        )
    ratio = rows[-1]["cpu_ms_per_drawer"] / rows[0]["cpu_ms_per_drawer"]
    print(f"CPU per drawer, largest / smallest size: {ratio:.2f}x")
    if args.write:
        table = "\n".join(
            f"| {r['drawers']:,} | {r['seconds']:.1f} | {r['per_second']:.0f} | {r['cpu_ms_per_drawer']:.2f} |"
            for r in rows
        )
        write_section(
            "Extract sweep by palace size",
            f"Command: `{command_line()}` on {machine()}.\n\n"
            "| drawers | sweep (s) | drawers/s | CPU per drawer (ms) |\n|---|---|---|---|\n"
            f"{table}\n\nCPU per drawer, largest / smallest: {ratio:.2f}× (linear work: ≤ 1.5×).\n",
        )


if __name__ == "__main__":
    main()
