"""Following a job through the event stream: `memcastle job watch` and `mine --wait` see it end without asking
again and again, and while it is queued they say what it waits behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from waiting import CEILING

from memcastle.cli.client import DaemonClient
from memcastle.cli.follow import follow_job
from memcastle.config import load_settings


class CountingClient(DaemonClient):
    """The CLI's real client, counting the calls it makes."""

    calls = 0

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        type(self).calls += 1
        return super().call(method, path, **kwargs)


def notes(folder: Path, count: int, word: str) -> Path:
    folder.mkdir()
    for i in range(count):
        (folder / f"{word}-{i}.md").write_text(f"# {word} {i}\n\n" + f"The {word} ledger, page {i}. " * 40 + "\n")
    return folder


def test_a_queued_job_is_followed_to_its_end_and_says_what_it_waits_behind(daemon: Any, tmp_path: Path) -> None:
    served = daemon(extra_env={"MEMCASTLE_JOBS_WORKERS": "1"})
    big = notes(tmp_path / "big", 600, "granary")
    small = notes(tmp_path / "small", 3, "armoury")
    with served.http() as http:
        first = http.post("/api/mine", json={"connector": "notes", "locator": str(big), "wing": "follow"}).json()
        second = http.post("/api/mine", json={"connector": "notes", "locator": str(small), "wing": "follow"}).json()
    settings = load_settings(flags={"palace": str(served.palace)}, env=served.env)
    old = dict(os.environ)
    os.environ.update(served.env)  # the registry of running daemons is found through XDG_STATE_HOME
    try:
        client = CountingClient(settings)
        seen: list[dict[str, Any]] = []
        done = follow_job(client, second["job"], seen.append)
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert done["status"] == "completed" and done["result"]["created"] == 3
    waiting = [s["waiting"] for s in seen if s["status"] == "queued" and s.get("waiting")]
    assert waiting and any("mine" in w for w in waiting), seen[:3]
    # It waited behind a 600-note mine: polling every 0.2 s would have asked many times; the stream asks when the
    # job changes and about once a second while it waits.
    running_first = [s for s in seen if s["status"] == "running"]
    assert running_first, "it saw its own start"
    assert CountingClient.calls <= 3 + len(waiting) + 2, CountingClient.calls
    assert first["job"]["id"] != second["job"]["id"]


def test_job_watch_and_mine_wait_end_with_the_finished_job(daemon: Any, tmp_path: Path) -> None:
    served = daemon()
    folder = notes(tmp_path / "vault", 5, "bastion")
    waited = served.cli("--json", "mine", "notes", str(folder), "--wing", "watch", "--wait")
    assert waited.returncode == 0, waited.stderr
    job = json.loads(waited.stdout)["job"]
    assert job["status"] == "completed" and job["result"]["created"] == 5
    watched = served.cli("--json", "job", "watch", job["id"])
    assert watched.returncode == 0, watched.stderr
    assert json.loads(watched.stdout)["status"] == "completed"


# Standard output taken for a terminal: what a person sees.
ON_A_TERMINAL = (
    "import io, sys\n"
    "class Terminal(io.TextIOWrapper):\n"
    "    def isatty(self):\n"
    "        return True\n"
    "sys.stdout = Terminal(sys.stdout.buffer, encoding='utf-8', line_buffering=True)\n"
    "from memcastle.cli.main import run\n"
    "sys.argv = ['memcastle', *sys.argv[1:]]\n"
    "run()\n"
)

SLOW_EMBEDDER = """
import json, sys, time
texts = json.load(sys.stdin)["texts"]
time.sleep(0.5)
json.dump({"embeddings": [[1.0, float(len(t) % 7), 0.5] for t in texts]}, sys.stdout)
"""


def test_mine_wait_prints_the_counts_then_what_is_left_to_embed(daemon: Any, tmp_path: Path) -> None:
    """What docs/cli.md promises: the counts, then the drawers still waiting for vectors, with passages to go and
    an ETA once the sweep has measured its rate."""
    embedder = tmp_path / "slow_embedder.py"
    embedder.write_text(SLOW_EMBEDDER)
    served = daemon(
        extra_env={
            "MEMCASTLE_EMBEDDINGS_PROVIDER": "command",
            "MEMCASTLE_EMBEDDINGS_MODEL": "slow-3d",
            "MEMCASTLE_EMBEDDINGS_COMMAND": json.dumps([sys.executable, str(embedder)]),
            "MEMCASTLE_EMBEDDINGS_BATCH_SIZE": "1",
        }
    )
    folder = notes(tmp_path / "vault", 40, "rampart")
    waited = subprocess.run(
        [sys.executable, "-c", ON_A_TERMINAL, "--palace", str(served.palace), "mine", "notes", str(folder)]
        + ["--wing", "wait", "--wait"],
        env={**served.env, "COLUMNS": "400"},
        capture_output=True,
        text=True,
        timeout=CEILING,
    )
    assert waited.returncode == 0, waited.stderr
    plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", waited.stdout)
    lines = [line.strip() for line in plain.replace("\r", "\n").splitlines() if line.strip()]
    assert any(line.startswith("mined wait") and "created 40" in line for line in lines), waited.stdout
    [backlog] = [line for line in lines if line.startswith("embedding in the background:")]
    assert "drawer(s) waiting" in backlog and "lexical search finds them already" in backlog
    assert "to go" in backlog or "once the first batch is in" in backlog, backlog
