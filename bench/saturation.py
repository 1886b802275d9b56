"""`python -m bench.saturation --reuse DIR`: how close closed-loop clients bring a daemon to what the CPU allows.

A daemon serves a copy of a palace `bench.search --keep DIR` built. A load generator — a process of its own, so that
its CPU is counted apart from the daemon's — runs N clients, each sending the search benchmark's queries (`auto`
ranking, limit 10) one after the other for `--seconds`. Per N, from the same run:

- **CPU per search**: the daemon's CPU seconds (`/proc/<pid>/stat`) over the window ÷ searches answered.
- **What the CPU allows**: (cores − the cores the load generator itself used) ÷ the daemon's CPU per search with one
  client (the search as it costs alone). Throughput ÷ that is the figure: target ≥ 0.8 for 8 and 16 clients.
- **Little's law**: N closed-loop clients at throughput X wait N ÷ X on average; target: p95 ≤ 1.5 × that.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench.common import command_line, machine, median, percentile, write_section
from bench.search import copy_palace_files, queries, start_daemon, wait_for_graph


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(address: str, clients: int, seconds: float, count: int) -> None:
    """The load generator: `clients` closed-loop clients for `seconds`; prints what it measured as JSON."""
    texts = queries(count)
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    stop = 0.0

    def client(offset: int) -> None:
        nonlocal errors
        with httpx.Client(base_url=address, timeout=120, trust_env=False) as http:
            http.get("/api/health")  # connected before the window opens
            start.wait()
            index = offset
            while time.monotonic() < stop:
                text = texts[index % len(texts)]
                index += clients
                began = time.perf_counter()
                ok = http.post("/api/search", json={"query": text, "limit": 10}).status_code == 200
                with lock:
                    latencies.append((time.perf_counter() - began) * 1000)
                    errors += 0 if ok else 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    began = time.monotonic()
    stop = began + seconds
    start.wait()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    print(json.dumps({"latencies": latencies, "errors": errors, "wall": wall, "cpu": cpu}))


def measure(address: str, pid: int, clients: int, seconds: float, count: int) -> dict[str, float]:
    spent = process_cpu(pid)
    done = subprocess.run(
        [sys.executable, "-m", "bench.saturation", "--load", address, str(clients), str(seconds), str(count)],
        capture_output=True,
        text=True,
        check=True,
    )
    daemon_cpu = process_cpu(pid) - spent
    found = json.loads(done.stdout.strip().splitlines()[-1])
    answered = len(found["latencies"])
    return {
        "clients": clients,
        "searches": answered,
        "errors": found["errors"],
        "throughput": answered / found["wall"],
        "cpu_per_search": daemon_cpu / answered,
        "generator_cores": found["cpu"] / found["wall"],
        "daemon_cores": daemon_cpu / found["wall"],
        "p50": median(found["latencies"]),
        "p95": percentile(found["latencies"], 95),
    }


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--load":
        load(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reuse", type=Path, required=True, help="a palace kept by bench.search --keep")
    parser.add_argument("--clients", default="1,8,16")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="each client count measured this many times")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a daemon setting, e.g. MEMCASTLE_SEARCH_PARALLEL=3",
    )
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    extra = dict(pair.split("=", 1) for pair in args.env)
    counts = [int(c) for c in args.clients.split(",")]
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-saturation-") as temp:
        palace_dir, home = Path(temp) / "palace", Path(temp) / "home"
        copy_palace_files(args.reuse, palace_dir)
        proc, address = start_daemon(palace_dir, home, extra_env=extra)
        try:
            with httpx.Client(base_url=address, timeout=120, trust_env=False) as client:
                wait_for_graph(client)
                drawers = client.get("/api/status").json()["drawers"]
            measure(address, proc.pid, 2, 5, args.queries)  # warm: page cache, model, connections
            runs: dict[int, list[dict[str, float]]] = {n: [] for n in counts}
            for _ in range(args.rounds):
                for n in counts:
                    runs[n].append(measure(address, proc.pid, n, args.seconds, args.queries))
        finally:
            proc.terminate()
            proc.wait(timeout=600)
    alone = median([r["cpu_per_search"] for r in runs[min(counts)]])
    rows = []
    for n in counts:
        figures = {key: median([r[key] for r in runs[n]]) for key in runs[n][0]}
        allowed = (cores - figures["generator_cores"]) / alone
        little = n / figures["throughput"] * 1000
        rows.append(
            f"| {n} | {figures['throughput']:.1f} | {figures['cpu_per_search'] * 1000:.1f} | "
            f"{figures['daemon_cores']:.2f} | {figures['generator_cores']:.2f} | {allowed:.1f} | "
            f"**{figures['throughput'] / allowed:.2f}** | {figures['p50']:.1f} | {figures['p95']:.1f} | {little:.1f} | "
            f"**{figures['p95'] / little:.2f}** | {int(figures['errors'])} |"
        )
    text = "\n".join(
        [
            f"## Saturation: closed-loop clients on {cores} cores",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Palace: {drawers:,} drawers (a copy of one `bench.search` built and kept). `auto` searches, limit 10, "
            f"the search benchmark's queries; each client count run {args.rounds} times for {args.seconds:.0f} s "
            "(medians). The load generator is a process of its own: its CPU is counted apart. *Allowed*: (cores − "
            f"the generator's cores) ÷ the daemon's CPU per search with {min(counts)} client "
            f"({alone * 1000:.1f} ms). *Little*: clients ÷ throughput, the mean wait a closed loop must see."
            + (f" Daemon settings: {', '.join(args.env)}." if args.env else ""),
            "",
            "| clients | searches/s | daemon CPU ms/search | daemon cores | generator cores | allowed/s | "
            "throughput ÷ allowed | p50 ms | p95 ms | Little ms | p95 ÷ Little | errors |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            "Targets: throughput ÷ allowed ≥ 0.8 and p95 ÷ Little ≤ 1.5 for 8 and 16 clients.",
            "",
            f"_Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}._",
        ]
    )
    print(text)
    if args.write:
        write_section("saturation", text)


if __name__ == "__main__":
    main()
