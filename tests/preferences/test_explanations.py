"""Explanations (SPEC §5): the effective policy with the layer of each field, the resolution trace of one drawer,
and the `memcastle preferences show | check | explain` commands — over the in-process ASGI client, the real
console entry as a subprocess, and a real daemon."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from addresses import LOCAL
from fastapi.testclient import TestClient
from waiting import CEILING

from memcastle.config.layers import PALACE_FILE
from memcastle.daemon import http_app
from memcastle.preferences import BUILTIN_LAYER

if TYPE_CHECKING:
    from conftest import Bench  # tests/preferences/conftest.py

GLOBAL_CONFIG = """\
[preferences]
default = "low"

[preferences.sources.notes]
level = "high"

[palace.preferences.sources.notes]
level = "normal"

[[palace.preferences.sources.notes.criteria]]
path = "status"
equals = "draft"
level = "low"

[[palace.preferences.sources.notes.criteria]]
path = "review.owner"
equals = "ana"
level = "high"

[[palace.preferences.sources.notes.criteria]]
path = "review.owner"
equals = "bo"
level = "low"
"""

PALACE_PREFERENCES = """\
[preferences]
default = "high"

[preferences.sources.claude]
level = "low"
"""

NOTES = {
    "plan.md": "---\nstatus: draft\nreview:\n  owner: ana\n---\nThe harbor crane plan.\n",
    "memo.md": "---\nstatus: final\nreviewer: null\n---\nA harbor memo.\n",
}


@pytest.fixture
def palace_dir(tmp_path: Path, xdg_home: Any) -> Path:
    """The conftest palace, with every layer declared: the XDG config file and the palace's preferences.toml.

    Overriding this one fixture lets the shared `settings`, `palace` and `client` fixtures build a layered palace."""
    palace = tmp_path / "palace"
    palace.mkdir()
    (palace / PALACE_FILE).write_text(PALACE_PREFERENCES)
    xdg_home.config_file.parent.mkdir(parents=True, exist_ok=True)
    xdg_home.config_file.write_text(GLOBAL_CONFIG)
    return palace


@pytest.fixture
def notes_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text)
    return folder


def mined(client: TestClient, folder: Path, wing: str = "w", poll_for: float = 20.0) -> dict[str, str]:
    """Mine `folder` with the notes connector over HTTP; the drawer ids by document name."""
    answer = client.post("/api/mine", json={"connector": "notes", "locator": str(folder), "wing": wing})
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["job"]["id"]
    deadline = time.monotonic() + poll_for
    while (job := client.get(f"/api/jobs/{job_id}").json())["status"] != "completed":
        assert job["status"] in ("queued", "running") and time.monotonic() < deadline, job
        time.sleep(0.01)
    drawers = client.get("/api/drawers", params={"wing": wing}).json()["drawers"]
    return {d["name"]: d["id"] for d in drawers}


def layer_names(config: Path, palace: Path) -> tuple[str, str, str]:
    return (
        f"global [preferences] in {config}",
        f"global [palace.preferences] in {config}",
        f"palace file {palace / PALACE_FILE}",
    )


# --- GET /api/preferences -----------------------------------------------------------------------------


def test_the_effective_policy_names_the_layer_of_each_field(
    client: TestClient, xdg_home: Any, palace_dir: Path
) -> None:
    answer = client.get("/api/preferences")
    assert answer.status_code == 200, answer.text
    global_layer, palace_table, palace_file = layer_names(xdg_home.config_file, palace_dir)
    assert answer.json() == {
        "default": {"value": "high", "layer": palace_file},
        "sources": {
            "claude": {"level": {"value": "low", "layer": palace_file}, "criteria": {"value": [], "layer": None}},
            "notes": {
                "level": {"value": "normal", "layer": palace_table},
                "criteria": {
                    "value": [
                        {"path": "status", "equals": "draft", "level": "low"},
                        {"path": "review.owner", "equals": "ana", "level": "high"},
                        {"path": "review.owner", "equals": "bo", "level": "low"},
                    ],
                    "layer": palace_table,
                },
            },
        },
        "neutral": False,
        "layers": [
            {"name": global_layer, "file": str(xdg_home.config_file)},
            {"name": palace_table, "file": str(xdg_home.config_file)},
            {"name": palace_file, "file": str(palace_dir / PALACE_FILE)},
        ],
    }


def test_without_any_layer_the_policy_is_the_neutral_builtin_one(bench: Bench) -> None:
    with TestClient(http_app(bench.open()), base_url=LOCAL, raise_server_exceptions=False) as http:
        assert http.get("/api/preferences").json() == {
            "default": {"value": "normal", "layer": BUILTIN_LAYER},
            "sources": {},
            "neutral": True,
            "layers": [],
        }


# --- GET /api/drawers/{id}/preference --------------------------------------------------------------------


def test_the_trace_lists_every_criterion_tried_with_the_value_found_and_the_winner(
    client: TestClient,
    notes_folder: Path,
    palace_dir: Path,
) -> None:
    ids = mined(client, notes_folder)
    answer = client.get(f"/api/drawers/{ids['plan.md']}/preference")
    assert answer.status_code == 200, answer.text
    trace = answer.json()
    assert trace["drawer_id"] == ids["plan.md"] and trace["connector"] == "notes"
    assert trace["result"] == {
        "level": "high",
        "connector": "notes",
        "adjustment": 0.08,
        "criterion": {"path": "review.owner", "equals": "ana", "level": "high"},
    }
    assert trace["criteria"] == [
        {
            "path": "status",
            "equals": "draft",
            "level": "low",
            "found": "draft",
            "present": True,
            "matched": True,
            "won": False,
        },
        {
            "path": "review.owner",
            "equals": "ana",
            "level": "high",
            "found": "ana",
            "present": True,
            "matched": True,
            "won": True,
        },
        {
            "path": "review.owner",
            "equals": "bo",
            "level": "low",
            "found": "ana",
            "present": True,
            "matched": False,
            "won": False,
        },
    ]
    assert trace["metadata"]["status"] == "draft" and trace["metadata"]["review"] == {"owner": "ana"}
    first, decided = trace["steps"]
    assert "'notes'" in first and "'normal'" in first and "global [palace.preferences]" in first
    assert "review.owner" in decided and "2 path segment" in decided and "'high'" in decided


def test_the_trace_says_when_no_criterion_matched(client: TestClient, notes_folder: Path) -> None:
    ids = mined(client, notes_folder)
    trace = client.get(f"/api/drawers/{ids['memo.md']}/preference").json()
    assert trace["result"] == {"level": "normal", "connector": "notes", "criterion": None, "adjustment": 0.0}
    assert [(c["path"], c["present"], c["found"], c["matched"]) for c in trace["criteria"]] == [
        ("status", True, "final", False),
        ("review.owner", False, None, False),
        ("review.owner", False, None, False),
    ]
    assert trace["steps"][-1] == "no criterion matched the metadata snapshot"


def test_the_trace_of_a_hand_written_note_resolves_to_the_default(client: TestClient, palace_dir: Path) -> None:
    saved = client.post("/api/notes", json={"content": "typed by hand", "wing": "w"}).json()["drawer"]
    trace = client.get(f"/api/drawers/{saved['id']}/preference").json()
    assert trace["result"] == {"level": "high", "connector": None, "criterion": None, "adjustment": 0.08}
    [step] = trace["steps"]
    assert "no origin" in step and "'high'" in step and str(palace_dir / PALACE_FILE) in step


def test_the_trace_of_a_connector_without_a_level_falls_back_to_the_default(client: TestClient, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "readme.txt").write_text("harbor readme")
    answer = client.post("/api/mine", json={"connector": "directory", "locator": str(project), "wing": "d"})
    job_id = answer.json()["job"]["id"]
    deadline = time.monotonic() + CEILING
    while client.get(f"/api/jobs/{job_id}").json()["status"] != "completed":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    [drawer] = client.get("/api/drawers", params={"wing": "d"}).json()["drawers"]
    trace = client.get(f"/api/drawers/{drawer['id']}/preference").json()
    assert trace["result"] == {"level": "high", "connector": "directory", "criterion": None, "adjustment": 0.08}
    assert trace["criteria"] == [] and "sets no level" in trace["steps"][0]


def test_the_trace_of_an_unknown_drawer_is_a_404(client: TestClient) -> None:
    answer = client.get("/api/drawers/no-such-drawer/preference")
    assert answer.status_code == 404 and answer.json()["code"] == "not_found"


# --- search over HTTP -------------------------------------------------------------------------------


def test_search_hits_over_http_carry_the_preference_and_off_leaves_it_out(
    client: TestClient, notes_folder: Path
) -> None:
    ids = mined(client, notes_folder)
    hits = client.post("/api/search", json={"query": "harbor", "wing": "w"}).json()["hits"]
    by_id = {hit["drawer"]["id"]: hit for hit in hits}
    assert by_id[ids["plan.md"]]["signals"]["preference"]["criterion"] == {
        "path": "review.owner",
        "equals": "ana",
        "level": "high",
    }
    assert {"lexical", "relevance", "preference"} <= set(by_id[ids["memo.md"]]["signals"])
    assert by_id[ids["plan.md"]]["origin"]["metadata"]["status"] == "draft"
    off = client.post("/api/search", json={"query": "harbor", "wing": "w", "preferences": "off"}).json()["hits"]
    assert {hit["drawer"]["id"] for hit in off} == set(by_id)
    assert all(set(hit["signals"]) == {"lexical", "coverage", "relevance"} for hit in off)


@pytest.mark.parametrize("value", ["maybe", "OFF", "", False, None])
def test_a_search_with_an_unknown_preferences_value_is_a_400_naming_it(client: TestClient, value: Any) -> None:
    answer = client.post("/api/search", json={"query": "harbor", "preferences": value})
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == "preferences"


# --- memcastle preferences check (no daemon needed) --------------------------------------------------


def squeezed(text: str) -> str:
    """Text without whitespace: the terminal error renderer may wrap a long path at any character."""
    return "".join(text.split())


def check(
    cli_runner: Callable[..., subprocess.CompletedProcess[str]],
    xdg_home: Any,
    config: Path | None,
    palace: Path,
    *extra: str,
) -> subprocess.CompletedProcess[str]:
    args = [*(["--config", str(config)] if config else []), "--palace", str(palace), *extra, "preferences", "check"]
    return cli_runner(args, env=xdg_home.env(), cwd=xdg_home.root)


def test_check_exits_0_and_lists_the_valid_layers(cli_runner: Any, xdg_home: Any, tmp_path: Path) -> None:
    config = tmp_path / "elsewhere.toml"
    config.write_text(GLOBAL_CONFIG)
    palace = tmp_path / "other-palace"
    palace.mkdir()
    (palace / PALACE_FILE).write_text(PALACE_PREFERENCES)
    done = check(cli_runner, xdg_home, config, palace)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["ok"] is True and answer["layers"] == list(layer_names(config, palace))
    assert answer["policy"]["default"] == {"value": "high", "layer": f"palace file {palace / PALACE_FILE}"}


def test_check_exits_1_naming_the_palace_file_line_and_key(cli_runner: Any, xdg_home: Any, tmp_path: Path) -> None:
    palace = tmp_path / "palace"
    palace.mkdir()
    (palace / PALACE_FILE).write_text(
        '[preferences]\ndefault = "high"\n\n[preferences.sources.notes]\nlevel = "urgent"\n'
    )
    done = check(cli_runner, xdg_home, None, palace)
    assert done.returncode == 1, done.stdout
    assert squeezed(f"{palace / PALACE_FILE}:5 key 'preferences.sources.notes.level'") in squeezed(done.stderr)
    assert "Traceback" not in done.stderr


def test_check_exits_1_naming_the_global_config_file_and_key(cli_runner: Any, xdg_home: Any, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[palace.preferences]\ndefault = "normal"\n\n[[palace.preferences.sources.notes.criteria]]\n'
        'path = "review..owner"\nequals = "ana"\nlevel = "high"\n'
    )
    done = check(cli_runner, xdg_home, config, tmp_path / "palace")
    assert done.returncode == 1
    assert squeezed(f"{config}:5 key 'palace.preferences.sources.notes.criteria[0].path'") in squeezed(done.stderr)


# --- show and explain against a real daemon -------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def on_terminal(args: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 30.0) -> tuple[int, str]:
    """Run the console entry with stdout on a pseudo-terminal (so it renders for people, not JSON)."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from memcastle.cli.main import run; run()", *args],
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
        env={**env, "TERM": "xterm"},
        cwd=cwd,
    )
    os.close(secondary)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([primary], [], [], 0.1)
        if ready:
            try:
                data = os.read(primary, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(primary)
    code = proc.wait(timeout=CEILING)
    return code, ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n")


def test_show_and_explain_answer_json_on_a_pipe_and_render_tables_on_a_terminal(
    daemon: Callable[..., Any],
    palace_dir: Path,
    notes_folder: Path,
) -> None:
    process = daemon(palace_dir)
    with process.http() as http:
        job = http.post("/api/mine", json={"connector": "notes", "locator": str(notes_folder), "wing": "w"}).json()
        deadline = time.monotonic() + CEILING
        while http.get(f"/api/jobs/{job['job']['id']}").json()["status"] != "completed":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        plan = {d["name"]: d["id"] for d in http.get("/api/drawers", params={"wing": "w"}).json()["drawers"]}["plan.md"]
        policy = http.get("/api/preferences").json()
        trace = http.get(f"/api/drawers/{plan}/preference").json()

    shown = process.cli("preferences", "show")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == policy and policy["default"]["value"] == "high"
    explained = process.cli("preferences", "explain", plan)
    assert explained.returncode == 0, explained.stderr
    assert json.loads(explained.stdout) == trace and trace["result"]["level"] == "high"
    missing = process.cli("preferences", "explain", "no-such-drawer")
    assert missing.returncode == 1 and "no-such-drawer" in missing.stderr

    args = ["--palace", str(process.palace), "preferences"]
    code, text = on_terminal([*args, "show"], process.env, process.home.root)
    assert code == 0, text
    assert "default level high" in text and "neutral" not in text
    assert re.search(r"notes\s.*normal", text) and re.search(r"review\.owner = 'ana'\s.*high", text), text
    code, text = on_terminal([*args, "explain", plan], process.env, process.home.root)
    assert code == 0, text
    assert f"drawer {plan}: high (adjustment +0.08)" in text
    assert re.search(r"status\s.*'draft'\s.*low\s.*'draft'\s.*yes", text), text
    assert re.search(r"review\.owner\s.*'bo'\s.*low\s.*'ana'\s.*no", text), text

    # `check` says whether the running daemon ranks with the files: an edit takes effect at its next start.
    checked = process.cli("preferences", "check")
    assert checked.returncode == 0 and json.loads(checked.stdout)["daemon"] == "in use", checked.stdout
    palace_file = process.palace / PALACE_FILE
    palace_file.write_text(palace_file.read_text().replace('default = "high"', 'default = "low"'))
    checked = process.cli("preferences", "check")
    assert checked.returncode == 0 and json.loads(checked.stdout)["daemon"] == "not in use", checked.stdout
    code, text = on_terminal([*args, "check"], process.env, process.home.root)
    assert code == 0 and "restart it" in text, text
