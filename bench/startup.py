"""`python -m bench.startup --runs 7`: how fast MemCastle starts, each figure against a same-run floor.

- **Daemon to health**: from launching `memcastle serve` to the first 200 of `/api/health`; the floor is the same
  measurement for a bare uvicorn serving a one-route ASGI app (the interpreter, uvicorn and a socket, nothing else).
- **Daemon to its first real answer**: the server's CPU once it has also answered `/api/status`, the first request
  that needs the application the front builds on first use (`memcastle.api.front`).
- **CLI CPU**: user + system CPU of `memcastle --help`, `memcastle status` and `memcastle search …` against a running
  daemon, read from `/usr/bin/time`; the floor is `python -c "import httpx"`. Piped (JSON output), and `status` and
  `search` again on a terminal (`script` gives them a pseudo-terminal, so rich renders; `script` itself is included).
- **stdio bridge**: from launching `memcastle mcp` to its answer to `initialize` (the daemon already running).
- **First search**: a fresh daemon's first `POST /api/search` — right at `/api/health` with an empty model cache (a
  new machine: the builtin model's int8 copy is made at its first load), and a few seconds after health (as a person
  types) — against the median search once warm, each a question the daemon has not seen.

Every run uses its own home directory, so nothing is shared with the user's palace. One untimed round first writes
the bytecode caches (as `pip install` does for an installed package), then medians of `--runs` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import command_line, machine, median, write_section

BIN = Path(sys.executable).parent
MEMCASTLE = str(BIN / "memcastle")
TIME = shutil.which("time") or "/usr/bin/time"
SCRIPT = shutil.which("script") or "/usr/bin/script"
CEILING = 120.0

BARE_APP = """
import sys, uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"ok": true}'})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment(home: Path) -> dict[str, str]:
    """The caller's environment with its own home, and bytecode caching on: an installed package is byte-compiled
    (pip compiles at install), so a run that recompiled every module from source would measure the compiler."""
    return {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }


def process_cpu(pid: int) -> float:
    """User + system CPU seconds a running process has used so far (Linux `/proc/<pid>/stat`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def until_healthy(argv: list[str], port: int, env: dict[str, str]) -> tuple[float, subprocess.Popen[bytes]]:
    """Seconds from launch to the first 200 on /api/health (the bare app answers every path); the process's CPU
    seconds to then are left on it as `cpu`."""
    url = f"http://127.0.0.1:{port}/api/health"
    started = time.monotonic()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with httpx.Client(timeout=1.0, trust_env=False) as http:
        while time.monotonic() - started < CEILING:
            try:
                if http.get(url).status_code == 200:
                    took = time.monotonic() - started
                    process.cpu = process_cpu(process.pid)  # type: ignore[attr-defined]
                    return took, process
            except httpx.TransportError:
                pass
            if process.poll() is not None:
                raise RuntimeError(f"{argv[0]} exited with {process.returncode} before answering")
            time.sleep(0.005)
    process.kill()
    raise TimeoutError(f"{argv} did not answer within {CEILING} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=CEILING)
    except subprocess.TimeoutExpired:
        process.kill()


def cpu_seconds(argv: list[str], env: dict[str, str]) -> float:
    """User + system CPU of one run of `argv`, as /usr/bin/time reports it."""
    done = subprocess.run(
        [TIME, "-f", "%U %S", *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True
    )
    user, system = done.stderr.decode().strip().splitlines()[-1].split()
    return float(user) + float(system)


QUESTIONS = (
    "socket timeout handling",
    "parse json document",
    "thread pool executor",
    "unicode normalization form",
    "retry failed request",
    "logging handler rotation",
    "temporary directory cleanup",
    "date arithmetic timezone",
)
PAUSE = 5.0  # seconds between a daemon's health and the first search a person types


def first_search(env: dict[str, str], cache: Path) -> dict[str, float]:
    """A fresh daemon's first search, each on a connection already open (health), each query new to the daemon:
    - `at health`: sent the moment `/api/health` answers, the model cache empty (a new machine: the first load makes
      the builtin model's int8 copy) — it waits for the application the front builds (ADR 0059);
    - `after a pause`: a second daemon on that cache, its first search `PAUSE` seconds after health, as a person types;
    - `warm`: the median of that daemon's next searches, each a query it has not seen (a repeated one finds its
      words' stems and patterns cached, which no new question does)."""
    times: dict[str, float] = {}
    for name, pause in (("at health", 0.0), ("after a pause", PAUSE)):
        port = free_port()
        serve = [MEMCASTLE, "serve", "--port", str(port)]
        _, daemon = until_healthy(serve, port, {**env, "XDG_CACHE_HOME": str(cache)})
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=CEILING, trust_env=False) as http:
                http.get("/api/health").raise_for_status()
                time.sleep(pause)
                started = time.monotonic()
                http.post("/api/search", json={"query": "configuration reload"}).raise_for_status()
                times[name] = time.monotonic() - started
                if pause:
                    warm = []
                    for question in QUESTIONS:
                        started = time.monotonic()
                        http.post("/api/search", json={"query": question}).raise_for_status()
                        warm.append(time.monotonic() - started)
                    times["warm"] = median(warm)
        finally:
            stop(daemon)
    return times


def on_terminal(argv: list[str]) -> list[str]:
    """`argv` run under `script`, on a pseudo-terminal of its own."""
    return [SCRIPT, "-qec", shlex.join(argv), "/dev/null"]


def bridge_initialize(env: dict[str, str]) -> float:
    """Seconds from launching `memcastle mcp` to its answer to `initialize`."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    started = time.monotonic()
    process = subprocess.Popen(
        [MEMCASTLE, "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(request) + "\n").encode())
    process.stdin.flush()
    line = process.stdout.readline()
    took = time.monotonic() - started
    process.stdin.close()
    try:
        process.wait(timeout=CEILING)
    except subprocess.TimeoutExpired:
        process.kill()
    answer = json.loads(line)
    if "result" not in answer:
        raise RuntimeError(f"initialize failed: {answer}")
    return took


def installation() -> str:
    """Which MemCastle the run measured: an installed package (as `pip install .` leaves it) or a development
    checkout (editable, with the test dependencies beside it)."""
    import memcastle

    where = Path(memcastle.__file__).resolve()
    if "site-packages" in where.parts:
        return "run by the interpreter of a virtual environment where `pip install .` installed it"
    return "run from an editable development install (test dependencies such as trio are imported when present)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--write", action="store_true", help="record the figures in bench/RESULTS.md")
    parser.add_argument("--first-search", action="store_true", help="only the first-search figures, printed per run")
    args = parser.parse_args()
    if args.first_search:
        with tempfile.TemporaryDirectory(prefix="memcastle-startup-") as folder:
            env = environment(Path(folder))
            for run in range(args.runs):
                times = first_search(env, Path(folder) / f"cache-{run}")
                print("  ".join(f"{name} {seconds * 1000:.1f} ms" for name, seconds in times.items()), flush=True)
        return
    figures: dict[str, list[float]] = {}

    def note(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory(prefix="memcastle-startup-") as folder:
        home = Path(folder)
        env = environment(home)
        # One untimed round writes the bytecode caches an installed package has (the first run of an editable
        # checkout compiles every module it imports).
        port = free_port()
        _, daemon = until_healthy([MEMCASTLE, "serve", "--port", str(port)], port, env)
        try:
            for warm in ([MEMCASTLE, "--help"], [MEMCASTLE, "status"], [MEMCASTLE, "search", "warm"]):
                cpu_seconds(warm, env)
            bridge_initialize(env)
        finally:
            stop(daemon)
        for _ in range(args.runs):
            port = free_port()
            took, bare = until_healthy([sys.executable, "-c", BARE_APP, str(port)], port, env)
            stop(bare)
            note("bare uvicorn to first answer", took)
            note("bare uvicorn to first answer (server CPU)", bare.cpu)  # type: ignore[attr-defined]
            port = free_port()
            took, daemon = until_healthy([MEMCASTLE, "serve", "--port", str(port)], port, env)
            note("memcastle serve to /api/health", took)
            note("memcastle serve to /api/health (server CPU)", daemon.cpu)  # type: ignore[attr-defined]
            try:
                # The first answer that needs the application (built on first use, `api.front`).
                with httpx.Client(timeout=CEILING, trust_env=False) as http:
                    assert http.get(f"http://127.0.0.1:{port}/api/status").status_code == 200
                note("memcastle serve to its first /api/status (server CPU)", process_cpu(daemon.pid))
                note("python -c pass (CPU)", cpu_seconds([sys.executable, "-c", "pass"], env))
                note("python -c 'import httpx' (CPU)", cpu_seconds([sys.executable, "-c", "import httpx"], env))
                note("memcastle --help (CPU)", cpu_seconds([MEMCASTLE, "--help"], env))
                note("memcastle status (CPU)", cpu_seconds([MEMCASTLE, "status"], env))
                note("memcastle search (CPU)", cpu_seconds([MEMCASTLE, "search", "configuration reload"], env))
                note("memcastle status on a terminal (CPU)", cpu_seconds(on_terminal([MEMCASTLE, "status"]), env))
                note(
                    "memcastle search on a terminal (CPU)",
                    cpu_seconds(on_terminal([MEMCASTLE, "search", "configuration reload"]), env),
                )
                note("memcastle mcp to initialize", bridge_initialize(env))
            finally:
                stop(daemon)
            times = first_search(env, home / f"cache-{len(figures['memcastle serve to /api/health'])}")
            note("a fresh daemon's first search, at health (new model cache)", times["at health"])
            note(f"a fresh daemon's first search, {PAUSE:.0f} s after health", times["after a pause"])
            note("a search once warm (new questions)", times["warm"])

    medians = {name: median(values) for name, values in figures.items()}
    health_floor = medians["bare uvicorn to first answer"]
    cpu_floor = medians["python -c 'import httpx' (CPU)"]
    server_floor = medians["bare uvicorn to first answer (server CPU)"]
    rows = []
    for name, value in medians.items():
        floor = server_floor if name.endswith("(server CPU)") else cpu_floor if name.endswith("(CPU)") else health_floor
        floor = 0.0 if name.startswith(("python", "a search once")) else floor
        if name.startswith("a fresh daemon's first search"):
            floor = medians["a search once warm (new questions)"]  # target: within 1.5× a warm search
        rows.append(f"| {name} | {value:.3f} | {value / floor:.1f}× |" if floor else f"| {name} | {value:.3f} | – |")
        print(f"{name:36} {value:.3f} s", flush=True)
    if args.write:
        write_section(
            "Start-up",
            f"Command: `{command_line()}` on {machine()}, {installation()}; medians of {args.runs} runs. The floor of "
            "the two timings and of the server CPU is the bare uvicorn app, that of the CLI's CPU "
            "`python -c 'import httpx'` (what any HTTP client pays). Targets: serve to health ≤ 4×, `--help` ≤ 1.5×, "
            "`search` ≤ 2.5×; a fresh daemon's first search ≤ 1.5× a warm one (its × is over the warm search).\n\n"
            "| measurement | median (s) | × floor |\n|---|---|---|\n" + "\n".join(rows) + "\n",
        )


if __name__ == "__main__":
    main()
