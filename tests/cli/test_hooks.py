"""Agent hooks: installing into Claude Code's and Codex CLI's settings (a diff, --dry-run, idempotent, uninstall, a
broken file refused with its line), and the hook command fed the payloads those agents send: the wake-up bundle at
session start, the session's transcript mined when it stops, quiet and quick without a daemon."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from agent_logs import CONVERSATION, write_session
from waiting import CEILING, wait_until

from memcastle.errors import ConfigError
from memcastle.hooks import install, installed, uninstall
from memcastle.hooks.dispatch import DEADLINE, REMINDER, last_exchange

FIXTURES = Path(__file__).parents[1] / "fixtures"
USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
}


def test_install_merges_shows_a_diff_is_idempotent_and_uninstall_restores(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    change = install("claude", settings)
    assert change.changed and "+" in change.diff() and "SessionStart" in change.diff()
    change.write()
    merged = json.loads(settings.read_text())
    assert merged["model"] == "opus" and merged["permissions"] == USER_SETTINGS["permissions"]
    assert merged["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0], "the user's own hook stays first"
    assert installed("claude", settings) == ["PreCompact", "SessionStart", "Stop", "UserPromptSubmit"]
    start = merged["hooks"]["SessionStart"][0]
    assert start["matcher"] == "startup|resume|clear|compact"
    command = start["hooks"][0]["command"]
    assert Path(command.split()[0]).is_absolute() and command.endswith("hook session-start --agent claude")
    assert not install("claude", settings).changed, "installing again changes nothing"
    assert (settings.parent / "settings.json.bak").read_text() == json.dumps(USER_SETTINGS, indent=2) + "\n"
    removed = uninstall("claude", settings)
    removed.write()
    assert json.loads(settings.read_text()) == USER_SETTINGS
    assert not uninstall("claude", settings).changed


def test_codex_hooks_json_and_a_broken_file_is_refused_with_its_line(tmp_path: Path) -> None:
    hooks = tmp_path / ".codex" / "hooks.json"
    change = install("codex", hooks)
    assert change.before is None
    change.write()
    written = json.loads(hooks.read_text())["hooks"]
    assert set(written) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact"}
    assert "matcher" not in written["Stop"][0] and "matcher" not in written["UserPromptSubmit"][0]
    broken = tmp_path / "settings.json"
    broken.write_text('{\n  "hooks": {\n    "Stop": [,]\n  }\n}\n')
    with pytest.raises(ConfigError) as refused:
        install("claude", broken)
    assert f"{broken}:3:" in refused.value.message, "the file and the line"
    assert broken.read_text().startswith('{\n  "hooks"'), "nothing was changed"


def test_the_cli_installs_for_a_project_with_a_dry_run_first(daemon: Any, tmp_path: Path) -> None:
    served = daemon()
    project = tmp_path / "shop"
    project.mkdir()
    where = ("--scope", "project", "--project", str(project))
    dry = served.cli("--json", "hooks", "install", "claude", *where, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    answer = json.loads(dry.stdout)
    assert answer["changed"] and answer["dry_run"] and "PreCompact" in answer["diff"]
    assert not (project / ".claude" / "settings.json").exists()
    done = served.cli("--json", "hooks", "install", "claude", *where)
    assert json.loads(done.stdout)["changed"] and (project / ".claude" / "settings.json").exists()
    status = json.loads(served.cli("--json", "hooks", "status", "--project", str(project)).stdout)["hooks"]
    assert {(r["agent"], r["scope"]): r["events"] for r in status}[("claude", "project")] == [
        "PreCompact",
        "SessionStart",
        "Stop",
        "UserPromptSubmit",
    ]


def run_hook(served: Any, event: str, agent: str, payload: dict[str, Any], *extra: str) -> tuple[str, float]:
    started = time.monotonic()
    done = served.cli("hook", event, "--agent", agent, *extra, input=json.dumps(payload))
    took = time.monotonic() - started
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout, took


def test_session_start_gives_the_wake_up_bundle(daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        http.post(
            "/api/checkpoint",
            json={"agent": "claude", "items": [{"content": "Decided: the shop ships on Thursdays."}]},
        )
    payload = {"session_id": "s1", "transcript_path": "/nowhere.jsonl", "cwd": "/home/alex/code/shop",
               "hook_event_name": "SessionStart", "source": "startup"}  # fmt: skip
    out, _ = run_hook(served, "session-start", "claude", payload)
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart" and "ships on Thursdays" in answer["additionalContext"]


def test_a_stop_mines_the_session_incrementally_and_returns_at_once(daemon: Any) -> None:
    served = daemon()
    projects = served.home.root / ".claude" / "projects"
    shutil.copytree(FIXTURES / "claude" / "projects", projects)
    transcript = next(projects.glob("-home-alex-notes/*.jsonl"))
    payload = {"session_id": transcript.stem, "transcript_path": str(transcript), "cwd": "/home/alex/notes",
               "hook_event_name": "Stop", "stop_hook_active": False}  # fmt: skip
    out, took = run_hook(served, "stop", "claude", payload)
    assert out == "" and took < CEILING

    def search(words: str) -> list[dict[str, Any]]:
        with served.http() as http:
            return http.post("/api/search", json={"query": words, "ranking": "lexical"}).json()["hits"]

    wait_until(lambda: search("markdown linter config"), what="the session to be mined")
    first = {h["drawer"]["id"] for h in search("markdown linter config")}
    with transcript.open("a") as log:
        log.write(
            json.dumps(
                {
                    "type": "user",
                    "sessionId": transcript.stem,
                    "cwd": "/home/alex/notes",
                    "uuid": "u-late",
                    "timestamp": "2025-05-26T08:00:00.000Z",
                    "message": {"role": "user", "content": "Also pin the linter to version 0.12 please"},
                }  # fmt: skip
            )
            + "\n"
        )
    run_hook(served, "pre-compact", "claude", {**payload, "hook_event_name": "PreCompact", "trigger": "auto"})
    wait_until(lambda: search("pin linter version"), what="the new turn")
    # The transcript's drawers (pre-compact also files an emergency checkpoint, which may match too).
    (now,) = {h["drawer"]["id"] for h in search("pin linter version") if h["drawer"]["source"]["kind"] == "transcript"}
    with served.http() as http:
        versions = http.get(f"/api/drawers/{now}/history").json()["versions"]
    # A short session is one drawer: its new version supersedes the old (a long one changes its last chunks only).
    assert [v["id"] for v in versions][0] in first and len(versions) == 2
    with served.http() as http:
        mines = http.get("/api/jobs", params={"kind": "mine"}).json()["jobs"]
    assert all(j["params"]["options"] == {"session": transcript.relative_to(projects).as_posix()} for j in mines)


def test_a_codex_stop_mines_its_rollout(daemon: Any) -> None:
    served = daemon()
    sessions = served.home.root / ".codex" / "sessions"
    shutil.copytree(FIXTURES / "codex" / "sessions", sessions)
    rollout = sorted(sessions.rglob("rollout-*.jsonl"))[0]
    payload = {"session_id": "c1", "transcript_path": str(rollout), "cwd": "/home/alex", "hook_event_name": "Stop",
               "model": "gpt-5", "last_assistant_message": "Done: the release notes are in CHANGES.md."}  # fmt: skip
    run_hook(served, "stop", "codex", payload, "--checkpoint")

    def mined() -> bool:
        with served.http() as http:
            jobs = http.get("/api/jobs", params={"kind": "mine"}).json()["jobs"]
        return bool(jobs) and jobs[0]["status"] == "completed" and jobs[0]["result"]["created"] > 0

    wait_until(mined, what="the rollout to be mined")
    with served.http() as http:
        saved = http.get("/api/wake-up", params={"agent": "codex"}).json()["checkpoints"]
    assert any("release notes are in CHANGES.md" in d["content"] for d in saved)


def test_without_a_daemon_a_hook_says_so_in_one_line_and_is_quick(tmp_path: Path, xdg_home: Any) -> None:
    for event in ("session-start", "stop"):
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "memcastle", "--palace", str(tmp_path / "none"), "hook", event, "--agent", "claude"],
            input='{"session_id": "x", "transcript_path": "/tmp/x.jsonl", "hook_event_name": "Stop"}',
            env=xdg_home.env(),
            capture_output=True,
            text=True,
            timeout=CEILING,
        )
        took = time.monotonic() - started
        # Nothing for the agent, and one line saying why: a hook that did nothing says so.
        assert done.returncode == 0 and done.stdout == "", done.stdout
        assert done.stderr.startswith(f"memcastle hook {event}: no daemon") and done.stderr.count("\n") == 1
        assert took < 15, took  # interpreter start included; the hook's own work is bounded at DEADLINE
    bad = subprocess.run(
        [sys.executable, "-m", "memcastle", "--palace", str(tmp_path / "none"), "hook", "stop", "--agent", "claude"],
        input="not json",
        env=xdg_home.env(),
        capture_output=True,
        text=True,
        timeout=CEILING,
    )
    assert bad.returncode == 0 and bad.stdout == ""


def test_the_bundle_is_the_agents_own_for_its_project(daemon: Any, tmp_path: Path) -> None:
    """Claude Code's bundle used to carry a Codex checkpoint; and one project's state showed in another's sessions."""
    served = daemon()
    shop = served.home.root / "code" / "shop"
    (shop / ".config").mkdir(parents=True)
    (shop / ".config" / "memcastle.toml").write_text('[memcastle]\nwing = "shop-wing"\n')
    other = served.home.root / "code" / "garden"
    other.mkdir(parents=True)
    with served.http() as http:
        for agent, wing, text in (
            ("claude", "shop-wing", "claude: the shop ships on Thursdays"),
            ("claude", "garden", "claude: the garden is watered at dawn"),
            ("claude", None, "claude: prefer small commits everywhere"),
            ("codex", "shop-wing", "codex: the shop's tests are flaky"),
        ):
            item = {"content": text, **({"wing": wing} if wing else {})}
            assert http.post("/api/checkpoint", json={"agent": agent, "items": [item]}).status_code == 201
    payload = {"session_id": "s1", "cwd": str(shop), "hook_event_name": "SessionStart", "source": "startup"}
    out, _ = run_hook(served, "session-start", "claude", payload)
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "ships on Thursdays" in context and "small commits" in context
    assert "watered at dawn" not in context and "codex:" not in context
    # A checkpoint a hook saves lands in the project it was saved from.
    stop = {"session_id": "s2", "cwd": str(other), "hook_event_name": "Stop", "last_assistant_message": "done: mulch"}
    run_hook(served, "stop", "codex", stop, "--checkpoint")
    with served.http() as http:
        garden = http.get("/api/wake-up", params={"agent": "codex", "wing": "garden"}).json()["checkpoints"]
    assert [d["content"] for d in garden] == ["done: mulch"] and garden[0]["wing"] == "garden"


def test_hooks_answer_within_their_budget_while_the_daemon_mines_beside_cpu_hogs(daemon: Any) -> None:
    """During a big mine and its sweeps, with two processes spinning beside them, every session start still gets
    its bundle (the wake-up reads only the agent's drawers, through an index) and every stop queues its mine."""
    served = daemon(extra_env={"MEMCASTLE_JOBS_WORKERS": "2"})
    folder = served.home.root / "big"
    for index in range(3000):
        (folder / f"pkg{index // 100:02d}").mkdir(parents=True, exist_ok=True)
        (folder / f"pkg{index // 100:02d}" / f"m{index:04d}.py").write_text(
            "\n\n".join(f"def f{index}_{n}(x):\n    return x * {n}" for n in range(30)) + "\n"
        )
    with served.http() as http:
        http.post("/api/checkpoint", json={"agent": "claude", "items": [{"content": "state: the mine is running"}]})
        job = http.post("/api/mine", json={"connector": "directory", "locator": str(folder)}).json()["job"]["id"]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for round_ in range(3):
            out, took = run_hook(served, "session-start", "claude", {"session_id": f"b{round_}"})
            assert "the mine is running" in json.loads(out)["hookSpecificOutput"]["additionalContext"], out
            stop = {"session_id": f"b{round_}", "transcript_path": str(folder / "none.jsonl")}
            run_hook(served, "stop", "claude", stop)
        with served.http() as http:
            assert http.get(f"/api/jobs/{job}").json()["status"] in ("running", "completed", "queued")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def test_a_session_start_the_daemon_cannot_answer_gets_the_saved_wake_up_marked_with_its_age(daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        saved = {"agent": "claude", "items": [{"content": "Decided: the shop ships on Thursdays."}]}
        assert http.post("/api/checkpoint", json=saved).status_code == 201
    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"})
    fresh = served.cli("hook", "session-start", "--agent", "claude", input=payload)
    assert "ships on Thursdays" in fresh.stdout and fresh.stderr == ""
    (kept,) = served.home.root.rglob("wake-up/*/*.json")
    served.kill()

    def context(done: Any) -> str:
        assert done.returncode == 0 and done.stderr.count("\n") == 1, done.stderr
        text: str = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        return text

    stopped = served.cli("hook", "session-start", "--agent", "claude", input=payload)
    assert stopped.stderr.startswith("memcastle hook session-start: no daemon registered for palace")
    assert stopped.stderr.rstrip().endswith("answered with the wake-up saved 0 min ago")
    text = context(stopped)
    assert text.startswith("[Saved 0 min ago — the MemCastle daemon did not answer in time") and "Thursdays" in text
    # A daemon that takes the connection and never answers: the hook's budget ends, the saved bundle answers.
    with socket.socket() as stalled:
        stalled.bind(("127.0.0.1", 0))
        stalled.listen(8)
        entry = {"pid": os.getpid(), "address": f"http://127.0.0.1:{stalled.getsockname()[1]}", "version": "0",
                 "palace": str(served.palace.resolve()), "started_at": "2026-12-07T08:00:00Z"}  # fmt: skip
        served.registry_path.parent.mkdir(parents=True, exist_ok=True)
        served.registry_path.write_text(json.dumps(entry), encoding="utf-8")
        aged = json.loads(kept.read_text())
        aged["saved_at"] = (datetime.now(UTC) - timedelta(days=3, minutes=5)).isoformat()
        kept.write_text(json.dumps(aged))
        started = time.monotonic()
        slow = served.cli("hook", "session-start", "--agent", "claude", input=payload)
        took = time.monotonic() - started
    assert took < DEADLINE + 2, took
    assert "did not answer" in slow.stderr and "answered with the wake-up saved 3 days ago" in slow.stderr
    assert context(slow).startswith("[Saved ") and " days ago" in context(slow).split("\n")[0]
    served.registry_path.unlink()


def test_the_prompt_hook_reminds_at_the_level_the_user_set(cli_runner: Any, xdg_home: Any, tmp_path: Path) -> None:
    def prompts(level: str, session: str, *texts: str) -> list[bool]:
        told = []
        for text in texts:
            done = cli_runner(
                ["--palace", str(tmp_path / "palace"), "hook", "prompt", "--agent", "claude"],
                env=xdg_home.env({"MEMCASTLE_HOOKS_REMINDER": level}),
                input=json.dumps({"session_id": session, "prompt": text, "hook_event_name": "UserPromptSubmit"}),
            )
            assert done.returncode == 0 and done.stderr == "", done.stderr
            if done.stdout:
                context = json.loads(done.stdout)["hookSpecificOutput"]
                assert context["hookEventName"] == "UserPromptSubmit" and context["additionalContext"] == REMINDER
            told.append(bool(done.stdout))
        return told

    plain = [f"rename variable {n}" for n in range(2, 10)]
    sometimes = prompts("sometimes", "s1", "fix the typo", *plain, "and this one", "why did we pick Postgres?")
    assert sometimes == [True, *[False] * 8, True, True], "the first, every tenth, and one asking about the past"
    assert prompts("always", "s2", "fix the typo", "rename it") == [True, True]
    assert prompts("off", "s3", "what did we decide last time?") == [False]
    assert prompts("sometimes", "s1", "rename it too") == [False], "the count is the session's (12th)"


def test_the_last_exchange_is_read_from_each_agents_transcript(tmp_path: Path) -> None:
    claude = FIXTURES / "claude" / "projects" / "-home-alex-code-shop" / "4f35e220-c435-4cf7-b9b9-f40426042847.jsonl"
    codex = next((FIXTURES / "codex" / "sessions" / "2025" / "09").rglob("rollout-*.jsonl"))
    pi = write_session(tmp_path / "sessions", "/home/alex/app", "0199a3c1-7d2e", CONVERSATION, "2026-03-02T09:00:00Z")
    assert last_exchange(claude)[1] == "Fixed both call sites and committed. All 14 tests pass now."
    assert last_exchange(codex)[0].startswith("Add a --since flag to `ledger report`")
    assert last_exchange(codex)[1].startswith("Done. `ledger report --since 2025-01-01`")
    assert last_exchange(pi) == ("And the staging host?", "Staging uses port 8443.")
    assert last_exchange(tmp_path / "missing.jsonl") == ("", "")


def test_before_compaction_the_work_is_checkpointed_and_the_wake_up_after_it_holds_it(daemon: Any) -> None:
    served = daemon()
    projects = served.home.root / ".claude" / "projects"
    shutil.copytree(FIXTURES / "claude" / "projects", projects)
    transcript = projects / "-home-alex-code-shop" / "4f35e220-c435-4cf7-b9b9-f40426042847.jsonl"
    payload = {"session_id": "4f35e220", "transcript_path": str(transcript), "hook_event_name": "PreCompact",
               "trigger": "auto"}  # fmt: skip
    for _ in range(2):  # compacted twice: one emergency checkpoint, replaced
        run_hook(served, "pre-compact", "claude", payload)
    after = {"session_id": "4f35e220", "hook_event_name": "SessionStart", "source": "compact"}
    out, _ = run_hook(served, "session-start", "claude", after)
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "Before compacting the context of session 4f35e220" in context
    assert "Answered: Fixed both call sites and committed." in context
    with served.http() as http:
        listed = http.get("/api/drawers", params={"wing": "default", "room": "checkpoints"}).json()["drawers"]
    (emergency,) = [d for d in listed if d["name"] == "claude-4f35e220-pre-compact"]
    assert "pre-compact" in emergency["tags"] and emergency["supersedes"], "the second replaced the first"
