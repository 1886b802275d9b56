"""A locator the operating system will not let the daemon read is a 403 naming it, never a 500.

The daemon runs as an ordinary user: `/proc/1/root`, another user's home, a folder without read permission raise
`PermissionError` while a path is resolved or looked at. The suite runs as root here (which the kernel lets through),
so the probe runs the real HTTP app in a subprocess as the unprivileged `nobody` (util-linux `setpriv`).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

PROBE = r"""
import json, sys
from fastapi.testclient import TestClient
from memcastle.app import build
from memcastle.config import load_settings
from memcastle.daemon import http_app

palace, locators, connectors = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
settings = load_settings(
    flags={"palace": palace, "embeddings.provider": "none", "mining.roots": ["/"]}, env={}, config_file=None
)
built = build(settings)
built.start()
answers = []
try:
    with TestClient(http_app(built), base_url="http://127.0.0.1:8420", raise_server_exceptions=False) as http:
        for connector in connectors:
            for locator in locators:
                answer = http.post("/api/mine", json={"connector": connector, "locator": locator})
                answers.append([connector, locator, answer.status_code, answer.json()])
finally:
    built.stop()
print(json.dumps(answers))
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to become nobody")
def test_locators_the_operating_system_refuses_are_403s_naming_them() -> None:
    with tempfile.TemporaryDirectory(prefix="memcastle-os-refusal-") as area:
        base = Path(area)
        base.chmod(0o777)
        closed = base / "closed"
        (closed / "inner").mkdir(parents=True)
        closed.chmod(0)  # nobody may not look inside
        home = base / "home"
        home.mkdir(mode=0o777)
        home.chmod(0o777)
        locators = ["/proc/1/root/etc", "/proc/1/root", "/proc/1/cwd/x", str(closed / "inner"), str(closed)]
        connectors = ["directory", "notes", "git", "chatgpt", "claude", "codex"]
        env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home), "XDG_DATA_HOME": str(home),
               "XDG_STATE_HOME": str(home)}  # fmt: skip
        env = {k: v for k, v in env.items() if not k.startswith("MEMCASTLE_")}
        run = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", PROBE,
             str(home / "palace"), json.dumps(locators), json.dumps(connectors)],
            capture_output=True, text=True, env=env, timeout=120, cwd=str(home),
        )  # fmt: skip
        closed.chmod(stat.S_IRWXU)
    assert run.returncode == 0, run.stderr[-3000:]
    answers = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(answers) == len(locators) * len(connectors)
    wrong = [(c, loc, status, body) for c, loc, status, body in answers if status >= 500 or status == 200]
    assert not wrong, wrong
    refused = [(c, loc, body) for c, loc, status, body in answers if status == 403]
    assert len(refused) >= len(connectors) * 3, answers
    assert all(loc.split("/x")[0] in body["error"] or "/proc" in body["error"] for _, loc, body in refused), refused
