"""The real console entry as a subprocess against a real daemon (one per module; each test keeps to its own wing)."""

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
from typing import Any

import httpx
import pytest
from waiting import CEILING

from memcastle import __version__
from memcastle.config import SETTINGS

Poll = Callable[..., Any]
ENTRY_ARGS = ["-c", "from memcastle.cli.main import run; run()"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    try:
        return json.loads(done.stdout)
    except ValueError:
        pytest.fail(f"expected JSON on a pipe, got:\n{done.stdout}")


def on_terminal(args: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 30.0) -> tuple[int, str]:
    """Run the console entry with stdout on a pseudo-terminal; return (exit code, text without ANSI codes)."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, *ENTRY_ARGS, *args],
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


def note(daemon: Any, content: str, **fields: Any) -> dict[str, Any]:
    """Setup through HTTP: the `note` command has its own tests, and every CLI start costs a Python start."""
    with daemon.http() as http:
        answer = http.post("/api/notes", json={"content": content, **fields})
    assert answer.status_code == 201, answer.text
    return answer.json()["drawer"]  # type: ignore[no-any-return]


# --- status ---------------------------------------------------------------------------------------


def test_status_exits_0_and_answers_json_on_a_pipe(module_daemon: Any) -> None:
    data = as_json(module_daemon.cli("status"))
    assert data["ok"] is True
    assert data["version"] == __version__
    assert data["palace"] == str(module_daemon.palace)


def test_a_waited_mine_says_what_is_left_to_embed(module_daemon: Any, tmp_path: Path) -> None:
    source = tmp_path / "embed-backlog"
    source.mkdir()
    (source / "guide.md").write_text("# Guide\n\nHow the drawbridge is lowered, step by step.\n")
    data = as_json(module_daemon.cli("mine", "directory", str(source), "--wing", "cli-backlog", "--wait"))
    assert data["job"]["status"] == "completed"
    backlog = data["embeddings"]
    assert {"pending", "passages_done", "passages_pending", "passages_per_second", "eta_seconds"} <= set(backlog)
    assert isinstance(backlog["pending"], int)


def test_status_exits_3_when_no_daemon_serves_the_palace(
    xdg_home: Any, tmp_path: Path, cli_runner: Callable[..., Any]
) -> None:
    done = cli_runner(["--palace", str(tmp_path / "nobody-home"), "status"], env=xdg_home.env(), cwd=tmp_path)
    assert done.returncode == 3
    assert "error:" in done.stderr and "memcastle serve" in done.stderr
    assert done.stdout == ""


def test_status_on_a_terminal_is_readable_and_json_on_request(module_daemon: Any) -> None:
    base = ["--palace", str(module_daemon.palace)]
    code, text = on_terminal([*base, "status"], module_daemon.env, module_daemon.home.root)
    assert code == 0, text
    assert "healthy" in text and str(module_daemon.palace) in text
    with pytest.raises(ValueError):
        json.loads(text)

    code, text = on_terminal([*base, "--json", "status"], module_daemon.env, module_daemon.home.root)
    assert code == 0, text
    assert json.loads(text)["ok"] is True


# --- notes, search, drawers -----------------------------------------------------------------------


def test_note_is_saved_and_found_by_search(module_daemon: Any) -> None:
    saved = as_json(
        module_daemon.cli(
            "note",
            "The drawbridge squeaks at dawn",
            "--wing",
            "cli-search",
            "--room",
            "gate",
            "--tag",
            "castle",
            "--agent",
            "tester",
        )
    )
    assert saved["created"] is True
    drawer = saved["drawer"]
    assert (drawer["wing"], drawer["room"], drawer["tags"]) == ("cli-search", "gate", ["castle"])
    assert drawer["provenance"]["requested_by"] == "cli" and drawer["source"]["agent"] == "tester"

    again = as_json(
        module_daemon.cli("note", "The drawbridge squeaks at dawn", "--wing", "cli-search", "--room", "gate")
    )
    assert again["created"] is False and again["drawer"]["id"] == drawer["id"]

    result = as_json(module_daemon.cli("search", "drawbridge squeak", "--wing", "cli-search", "--tag", "castle"))
    assert [hit["drawer"]["id"] for hit in result["hits"]] == [drawer["id"]]
    assert "lexical" in result["hits"][0]["signals"]
    assert as_json(module_daemon.cli("search", "drawbridge", "--wing", "cli-elsewhere"))["hits"] == []


def test_note_reads_standard_input_for_dash(module_daemon: Any) -> None:
    text = "line one\nline two with trailing spaces   \n"
    drawer = as_json(module_daemon.cli("note", "-", "--wing", "cli-stdin", input=text))["drawer"]
    assert drawer["content"] == text


def test_bad_search_option_exits_1_naming_it(module_daemon: Any) -> None:
    done = module_daemon.cli("search", "x", "--ranking", "magic")
    assert done.returncode == 1
    assert "ranking" in done.stderr


def test_drawer_show_history_supersede_and_list(module_daemon: Any) -> None:
    v1 = note(module_daemon, "plan: build the moat", wing="cli-drawers")
    shown = as_json(module_daemon.cli("drawer", "show", v1["id"]))
    assert shown == v1
    assert as_json(module_daemon.cli("drawer", "show", v1["id"][:8])) == v1, "the 8 characters a table shows"

    v2 = as_json(module_daemon.cli("drawer", "supersede", v1["id"], "plan: build the moat and the keep"))
    assert v2["supersedes"] == v1["id"] and v2["wing"] == "cli-drawers"

    versions = as_json(module_daemon.cli("drawer", "history", v2["id"]))["versions"]
    assert [v["id"] for v in versions] == [v1["id"], v2["id"]]
    assert versions[0]["superseded_by"] == v2["id"] and versions[0]["valid_to"] == v2["valid_from"]

    other = note(module_daemon, "second current drawer", wing="cli-drawers")
    first_page = as_json(module_daemon.cli("drawer", "list", "--wing", "cli-drawers", "--limit", "1"))
    assert [d["id"] for d in first_page["drawers"]] == [v2["id"]], "closed versions are not listed"
    second_page = as_json(
        module_daemon.cli(
            "drawer", "list", "--wing", "cli-drawers", "--limit", "1", "--after", first_page["next_after"]
        )
    )
    assert [d["id"] for d in second_page["drawers"]] == [other["id"]] and second_page["next_after"] is None

    again = module_daemon.cli("drawer", "supersede", v1["id"], "too late")
    assert again.returncode == 1 and "already closed" in again.stderr


def test_drawer_show_of_an_unknown_id_exits_1_with_a_message(module_daemon: Any) -> None:
    done = module_daemon.cli("drawer", "show", "no-such-drawer")
    assert done.returncode == 1
    assert "error:" in done.stderr and "no-such-drawer" in done.stderr
    assert "Traceback" not in done.stderr


def test_wing_and_room_lists(module_daemon: Any) -> None:
    note(module_daemon, "east tower", wing="cli-rooms", room="east")
    note(module_daemon, "west tower", wing="cli-rooms", room="west")
    note(module_daemon, "west tower again", wing="cli-rooms", room="west")
    wings = as_json(module_daemon.cli("wing", "list"))["wings"]
    assert {"cli-rooms": 3} == {w["name"]: w["drawers"] for w in wings if w["name"] == "cli-rooms"}
    rooms = as_json(module_daemon.cli("room", "list", "cli-rooms"))["rooms"]
    assert [(r["name"], r["drawers"]) for r in rooms] == [("east", 1), ("west", 2)]
    missing = module_daemon.cli("room", "list", "cli-nowhere")
    assert missing.returncode == 1 and "cli-nowhere" in missing.stderr


def test_tables_are_printed_on_a_terminal(module_daemon: Any) -> None:
    note(module_daemon, "a readable row", wing="cli-table")
    code, text = on_terminal(
        ["--palace", str(module_daemon.palace), "drawer", "list", "--wing", "cli-table"],
        module_daemon.env,
        module_daemon.home.root,
    )
    assert code == 0, text
    assert "a readable row" in text and "cli-table/notes" in text
    with pytest.raises(ValueError):
        json.loads(text)


def test_a_mine_on_a_terminal_says_how_many_skipped_documents_it_did_not_list(module_daemon: Any) -> None:
    source = module_daemon.home.root / "cli-skips"
    source.mkdir()
    (source / "kept.md").write_text("# Kept\n\nThe one readable page.\n")
    for i in range(26):
        (source / f"blank-{i:02d}.md").write_text("   \n")  # empty: skipped with a reason
    code, text = on_terminal(
        ["--palace", str(module_daemon.palace), "mine", "directory", str(source), "--wing", "cli-skips", "--wait"],
        module_daemon.env,
        module_daemon.home.root,
    )
    assert code == 0, text
    assert text.count("skipped blank-") == 20 and "… and 6 more skipped" in text, text


# --- jobs -----------------------------------------------------------------------------------------


def slow_verify(daemon: Any, wing: str, notes: int = 8, pace_ms: int = 250) -> dict[str, Any]:
    with daemon.http() as http:
        for i in range(notes):
            http.post("/api/notes", json={"content": f"{wing} filler {i}", "wing": wing})
        return http.post("/api/verify", json={"batch": 1, "pace_ms": pace_ms}).json()["job"]  # type: ignore


def test_job_list_show_and_cancel(module_daemon: Any, poll: Poll) -> None:
    job = slow_verify(module_daemon, "cli-jobs", notes=20)
    listed = as_json(module_daemon.cli("job", "list", "--kind", "verify"))["jobs"]
    assert job["id"] in [j["id"] for j in listed]
    assert all(j["kind"] == "verify" for j in listed)
    shown = as_json(module_daemon.cli("job", "show", job["id"]))
    assert shown["id"] == job["id"] and shown["params"] == {"batch": 1, "pace_ms": 250}

    answer = as_json(module_daemon.cli("job", "cancel", job["id"]))["job"]
    assert answer["cancel_requested"] or answer["status"] == "cancelled"

    with module_daemon.http() as http:
        poll(
            lambda: http.get(f"/api/jobs/{job['id']}").json()["status"] == "cancelled",
            timeout=15,
            what="the cancel to take effect",
        )
    by_status = as_json(module_daemon.cli("job", "list", "--status", "cancelled"))["jobs"]
    assert job["id"] in [j["id"] for j in by_status]

    again = module_daemon.cli("job", "cancel", job["id"])
    assert again.returncode == 1 and "cancelled" in again.stderr


def test_job_show_of_an_unknown_job_exits_1(module_daemon: Any) -> None:
    done = module_daemon.cli("job", "show", "no-such-job")
    assert done.returncode == 1 and "no-such-job" in done.stderr


def test_mine_wait_exits_1_when_the_job_does_not_complete(module_daemon: Any, tmp_path: Path, poll: Poll) -> None:
    # Both workers busy for as long as the test needs (a verify re-hashes every drawer, one each 2 s; both are
    # cancelled at the end): on a loaded machine the CLI may take seconds to start, and the mine must still queue.
    blockers = [slow_verify(module_daemon, f"cli-mine-block-{i}", notes=4, pace_ms=2000) for i in range(2)]
    source = tmp_path / "project"
    source.mkdir()
    (source / "readme.md").write_text("a file to mine\n")
    waiting = subprocess.Popen(
        [
            sys.executable,
            *ENTRY_ARGS,
            "--palace",
            str(module_daemon.palace),
            "mine",
            "directory",
            str(source),
            "--wing",
            "cli-mine",
            "--wait",
        ],
        env=module_daemon.env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with module_daemon.http() as http:

            def queued_mine() -> str | None:
                jobs = http.get("/api/jobs", params={"kind": "mine", "status": "queued"}).json()["jobs"]
                mine = [j for j in jobs if j["params"].get("wing") == "cli-mine"]
                return mine[0]["id"] if mine else None

            job_id = poll(queued_mine, timeout=15, what="the queued mine job")
            assert http.post(f"/api/jobs/{job_id}/cancel", json={}).status_code == 200
        _, stderr = waiting.communicate(timeout=CEILING)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate()  # its pipes closed now, not when a later test's collector finds them
        with httpx.Client(base_url=module_daemon.address, trust_env=False) as http:
            for blocker in blockers:
                http.post(f"/api/jobs/{blocker['id']}/cancel", json={})
    assert waiting.returncode == 1, stderr


# --- errors and configuration ---------------------------------------------------------------------


@pytest.mark.parametrize("args", [["drawer", "show"], ["--no-such-option", "status"]])
def test_usage_errors_print_usage_and_exit_2(
    xdg_home: Any, tmp_path: Path, cli_runner: Callable[..., Any], args: list[str]
) -> None:
    done = cli_runner(args, env=xdg_home.env(), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "Usage" in done.stderr or "usage" in done.stderr


def test_unknown_mode_is_refused_with_exit_1(xdg_home: Any, tmp_path: Path, cli_runner: Callable[..., Any]) -> None:
    done = cli_runner(["--mode", "loud", "status"], env=xdg_home.env(), cwd=tmp_path)
    assert done.returncode == 1
    assert "--mode" in done.stderr and "Traceback" not in done.stderr


def test_config_show_names_where_each_value_came_from(
    xdg_home: Any, tmp_path: Path, cli_runner: Callable[..., Any]
) -> None:
    xdg_home.config_file.parent.mkdir(parents=True, exist_ok=True)
    xdg_home.config_file.write_text("[jobs]\nworkers = 3\n", encoding="utf-8")
    env = xdg_home.env({"MEMCASTLE_SERVER_PORT": "9999", "MEMCASTLE_EMBEDDINGS_API_KEY": "s3cret"})
    data = as_json(cli_runner(["--palace", str(tmp_path / "p"), "config", "show"], env=env, cwd=tmp_path))
    assert data["config_file"] == str(xdg_home.config_file)
    rows = {row["key"]: row for row in data["settings"]}
    palace_key = next(spec.key for spec in SETTINGS if spec.env_var == "MEMCASTLE_PALACE")
    assert (rows[palace_key]["value"], rows[palace_key]["origin"]) == (str(tmp_path / "p"), "flag")
    assert (rows["jobs.workers"]["value"], rows["jobs.workers"]["origin"]) == (3, f"file {xdg_home.config_file}")
    assert (rows["server.port"]["value"], rows["server.port"]["origin"]) == (9999, "env MEMCASTLE_SERVER_PORT")
    assert rows["mode"]["origin"] == "default"
    assert rows["embeddings.api_key"]["value"] == "********"
    assert "s3cret" not in json.dumps(data)


def test_bad_config_file_is_an_error_naming_file_and_line(
    xdg_home: Any, tmp_path: Path, cli_runner: Callable[..., Any]
) -> None:
    xdg_home.config_file.parent.mkdir(parents=True, exist_ok=True)
    xdg_home.config_file.write_text("[jobs]\nwrokers = 3\n", encoding="utf-8")
    done = cli_runner(["--palace", str(tmp_path / "p"), "config", "show"], env=xdg_home.env(), cwd=tmp_path)
    assert done.returncode == 1
    assert f"{xdg_home.config_file}:2" in done.stderr and "jobs.wrokers" in done.stderr


def test_json_after_the_command_means_the_global_option() -> None:
    from memcastle.cli.command_line import hoist_json_flag

    assert hoist_json_flag(["search", "x", "--json"]) == ["--json", "search", "x"]
    assert hoist_json_flag(["--json", "status"]) == ["--json", "status"]
    assert hoist_json_flag(["note", "--", "--json"]) == ["note", "--", "--json"]


def test_version_prints_the_package_version(cli_runner: Any, xdg_home: Any) -> None:
    from memcastle import __version__

    result = cli_runner(["--version"], env=xdg_home.env({}))
    assert result.returncode == 0 and result.stdout.strip() == f"memcastle {__version__}"


# --- a light client ----------------------------------------------------------------------------------

HEAVY = ("rich", "httpx", "pydantic", "typer", "fastapi", "starlette", "numpy", "onnxruntime", "memcastle.services")
REPORT_MODULES = (
    "import sys\n"
    "from memcastle.cli.command_line import app\n"
    "from memcastle.cli.main import run\n"
    "sys.argv = ['memcastle', *sys.argv[1:]]\n"
    "try:\n"
    "    run()\n"
    "finally:\n"
    f"    sys.stderr.write('LOADED ' + ' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
)


# The same, with standard output taken for a terminal: what renders for a person.
ON_A_TERMINAL = (
    "import io, sys\n"
    "class Terminal(io.TextIOWrapper):\n"
    "    def isatty(self):\n"
    "        return True\n"
    "sys.stdout = Terminal(sys.stdout.buffer, encoding='utf-8', line_buffering=True)\n"
) + REPORT_MODULES


@pytest.mark.parametrize("args", [["status"], ["search", "drawbridge"]])
def test_status_and_search_render_on_a_terminal_without_rich(module_daemon: Any, args: list[str]) -> None:
    module_daemon.cli("note", "The drawbridge of the terminal test", "--wing", "cli-terminal", "--room", "gate")
    done = subprocess.run(
        [sys.executable, "-c", ON_A_TERMINAL, "--palace", str(module_daemon.palace), *args],
        env=module_daemon.env,
        capture_output=True,
        text=True,
        timeout=CEILING,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.rstrip().endswith("LOADED"), done.stderr
    assert not done.stdout.lstrip().startswith("{"), "rendered for a person, not JSON"
    if args[0] == "search":
        plain = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
        assert "hit(s), ranking" in plain and "The drawbridge of the terminal test" in plain
        # The matched term is marked; a whole drawer shown as its snippet says nothing of lines it leaves out.
        assert (
            "\x1b[1m\x1b[4mdrawbridge\x1b[0m" in done.stdout
            and "characters in all · memcastle drawer show" not in plain
        )


@pytest.mark.parametrize("args", [["--help"], ["status"], ["search", "drawbridge"]])
def test_a_piped_command_imports_no_server_stack_and_no_rich(module_daemon: Any, args: list[str]) -> None:
    """Every call pays for what it imports: JSON on a pipe needs neither rich nor an HTTP library nor the server."""
    done = subprocess.run(
        [sys.executable, "-c", REPORT_MODULES, "--palace", str(module_daemon.palace), *args],
        env=module_daemon.env,
        capture_output=True,
        text=True,
        timeout=CEILING,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.rstrip().endswith("LOADED"), done.stderr


# --- forgetting -----------------------------------------------------------------------------------


def test_forget_previews_a_broad_scope_and_erases_it_with_yes(module_daemon: Any, tmp_path: Path) -> None:
    kept = note(module_daemon, "the moat is deep", wing="cli-forget", room="keep")
    gone = note(module_daemon, "the secret tunnel is under the well", wing="cli-forget", room="drop")
    preview = as_json(module_daemon.cli("forget", "room", "cli-forget", "drop"))
    assert preview["dry_run"] is True and preview["counts"]["versions"] == 1
    assert [d["id"] for d in preview["drawers"]] == [gone["id"]] and "secret tunnel" in preview["drawers"][0]["preview"]
    code, text = on_terminal(
        ["--palace", str(module_daemon.palace), "forget", "room", "cli-forget", "drop"],
        module_daemon.env,
        tmp_path,
    )
    assert code == 0 and "would forget: 1 drawers, 1 versions" in text and "add --yes" in text
    done = as_json(module_daemon.cli("forget", "room", "cli-forget", "drop", "--yes"))
    assert done["dry_run"] is False and done["tombstone"]["scope"] == {
        "kind": "room",
        "wing": "cli-forget",
        "room": "drop",
    }
    rooms = as_json(module_daemon.cli("room", "list", "cli-forget"))["rooms"]
    assert [r["name"] for r in rooms] == ["keep"]
    log = as_json(module_daemon.cli("forget", "log"))["tombstones"]
    assert log[0]["id"] == done["tombstone"]["id"] and "tunnel" not in json.dumps(log)
    refused = module_daemon.cli("wing", "delete", "cli-forget")
    assert refused.returncode == 1 and "holds 1 drawer versions" in refused.stderr and "force" in refused.stderr
    renamed = as_json(module_daemon.cli("wing", "rename", "cli-forget", "cli-forget-2"))
    assert renamed["wing"] == "cli-forget-2"
    deleted = as_json(module_daemon.cli("wing", "delete", "cli-forget-2", "--force", "--yes"))
    assert deleted["counts"]["wings"] == 1 and deleted["drawers"][0]["id"] == kept["id"]
    drawer = note(module_daemon, "a drawer forgotten by id", wing="cli-forget-3")
    assert as_json(module_daemon.cli("forget", "drawer", drawer["id"]))["counts"]["versions"] == 1
    missing = module_daemon.cli("forget", "drawer", drawer["id"])
    assert missing.returncode == 1 and "no drawer" in missing.stderr


def test_export_and_import_follow_their_jobs_and_say_what_moved(module_daemon: Any, tmp_path: Path) -> None:
    note(module_daemon, "the well rope was replaced in spring", wing="cli-archive")
    archive = tmp_path / "palace.zip"
    exported = as_json(module_daemon.cli("export", str(archive)))
    assert exported["job"]["status"] == "completed" and archive.is_file()
    assert exported["job"]["result"]["counts"]["drawers"] >= 1 and "vectors" not in exported["job"]["result"]["counts"]
    again = module_daemon.cli("export", str(archive))
    assert again.returncode == 1 and "already exists" in again.stderr
    imported = as_json(module_daemon.cli("import", str(archive)))
    result = imported["job"]["result"]
    assert sum(result["added"].values()) == 0 and result["present"]["drawers"] >= 1, "everything is here already"
    code, text = on_terminal(
        ["--palace", str(module_daemon.palace), "import", str(archive)], module_daemon.env, tmp_path
    )
    assert code == 0 and "imported" in text and "nothing new" in text and "already here" in text


def test_the_command_table_names_the_module_of_every_command() -> None:
    """`memcastle.cli.main` loads a command's modules only when it runs: its table must say exactly which modules
    register each top-level command or add subcommands to it, or a command would be missing (or load the wrong
    module). Read in a fresh interpreter, one module at a time."""
    probe = (
        "import importlib, json, pkgutil\n"
        "import memcastle.cli.commands\n"
        "from memcastle.cli.command_line import app\n"
        "def shape():\n"
        "    return {n: set(getattr(c, 'commands', {})) for n, c in app.commands.items()}\n"
        "owners = {}\n"
        "for module in pkgutil.iter_modules(memcastle.cli.commands.__path__):\n"
        "    before = shape()\n"
        "    importlib.import_module('memcastle.cli.commands.' + module.name)\n"
        "    for name, subs in shape().items():\n"
        "        if name not in before or subs != before[name]:\n"
        "            owners.setdefault(name, []).append(module.name)\n"
        "print(json.dumps(owners))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=CEILING)
    assert done.returncode == 0, done.stderr
    from memcastle.cli.main import COMMAND_MODULES

    assert {name: tuple(modules) for name, modules in json.loads(done.stdout).items()} == COMMAND_MODULES


def test_a_call_loads_only_the_module_of_its_command(module_daemon: Any) -> None:
    probe = (
        "import sys\n"
        "from memcastle.cli.main import run\n"
        "sys.argv = ['memcastle', *sys.argv[1:]]\n"
        "try:\n"
        "    run()\n"
        "finally:\n"
        "    sys.stderr.write('LOADED ' + ' '.join(sorted(m.rsplit('.', 1)[-1] for m in sys.modules "
        "if m.startswith('memcastle.cli.commands.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "--palace", str(module_daemon.palace), "status"],
        env=module_daemon.env,
        capture_output=True,
        text=True,
        timeout=CEILING,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.rstrip().endswith("LOADED daemon"), done.stderr


def test_a_jobs_note_is_clipped_at_a_word_with_an_ellipsis_and_short_ids() -> None:
    from memcastle.cli.render import clip

    waiting = (
        "behind the running embed job 5b0c6f0e-8a43-4c1e-9d8f-6f1d7a0d2c11 of the same source; it starts when that ends"
    )
    assert clip(waiting, 80) == "behind the running embed job 5b0c6f0e of the same source; it starts when that…"
    assert clip("short", 80) == "short"
    assert clip("x" * 100, 10) == "x" * 9 + "…", "a word longer than the room is cut where the room ends"


def test_a_hits_signal_line_names_each_figures_scale() -> None:
    """BM25 is unbounded, cosine runs −1 to 1, relevance is 0–1 within the search: the terminal says which is which,
    and says when the score is relevance plus an adjustment rather than the ranking's own signal."""
    from memcastle.cli.render import explain_signals

    drawer = {"id": "d1", "content": "x", "pinned": False}
    plain = explain_signals({"score": 22.312, "drawer": drawer, "signals": {"lexical": 22.312, "relevance": 1.0}})
    assert plain == "score 22.312 · words (BM25) 22.312 · relevance (0-1 in this search) 1.000"
    preference = {"level": "high", "criterion": None, "adjustment": 0.08}
    adjusted = explain_signals(
        {"score": 1.08, "drawer": drawer, "signals": {"semantic": 0.61, "relevance": 1.0, "preference": preference}}
    )
    assert adjusted.startswith("score 1.080 (relevance + adjustment) · meaning (cosine) 0.610 · relevance")


def test_a_snippets_footer_says_which_lines_are_shown_and_how_long_the_drawer_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memcastle.cli.render import show_hits

    content = "".join(f"line {n} of the harbour log\n" for n in range(1, 41))
    start = content.index("line 12 ")
    end = content.index("line 15 ")
    drawer = {"id": "d1e2f3a4b5", "wing": "w", "room": "r", "content": content, "valid_to": None, "source": {}}
    hit = {
        "drawer": drawer,
        "score": 1.0,
        "signals": {},
        "snippet": {"start": start, "end": end, "lines": [12, 14], "text": content[start:end], "terms": []},
    }
    show_hits({"hits": [hit], "ranking": "lexical"})
    out = capsys.readouterr().out
    assert f"[lines 12-14 shown · {len(content):,} characters in all · memcastle drawer show d1e2f3a4]" in out, out


def test_agent_identity_is_another_name_of_agent(module_daemon: Any) -> None:
    """The original MemCastle's option name, for scripts written for it."""
    written = module_daemon.cli("diary", "write", "tidied the tide table", "--agent-identity", "pi-agent")
    assert written.returncode == 0, written.stderr
    read = as_json(module_daemon.cli("diary", "read", "--agent", "pi-agent"))
    assert [e["content"] for e in read["entries"]] == ["tidied the tide table"]
