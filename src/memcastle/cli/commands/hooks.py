"""Agent hooks: `hooks install|uninstall|status AGENT`, and `hook EVENT`, the command an agent runs."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, group, pass_invocation
from memcastle.errors import MemCastleError

F = TypeVar("F", bound=Callable[..., Any])

hooks_app = group("hooks", app, "Agent hooks: MemCastle in Claude Code's or Codex CLI's session lifecycle.")

AGENTS = ("claude", "codex")
SCOPES = ("user", "project")
PROJECT = click.Path(file_okay=False, path_type=Path)


def _target(agent: str, scope: str, project: Path) -> Path:
    from memcastle.hooks import settings_file

    return settings_file(agent, scope, project.resolve())


def _apply(inv: Invocation, change: Any, dry_run: bool, done: str) -> None:
    diff = change.diff()
    if change.changed and not dry_run:
        change.write()
    data = {"file": str(change.path), "changed": change.changed, "dry_run": dry_run, "diff": diff}

    def show(data: Any) -> None:
        if not change.changed:
            render.console.print(f"{change.path}: nothing to change")
            return
        sys.stdout.write(diff)
        verb = "would be" if dry_run else "was"
        render.console.print(f"[dim]{change.path} {verb} {done}[/dim]")

    inv.emit(data, show)


def _settings_change(command: F) -> F:
    """The agent whose settings change, whose settings (a user's or a project's) and whether only to show it."""
    command = click.option("--dry-run", is_flag=True, help="show the change, write nothing")(command)
    command = click.option(
        "--project",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("."),
        help="the project (--scope project)",
    )(command)
    command = click.option(
        "--scope", type=click.Choice(SCOPES), default="user", show_default=True, help="whose settings"
    )(command)
    return click.argument("agent", type=click.Choice(AGENTS))(command)


@hooks_app.command("install")
@_settings_change
@pass_invocation
def hooks_install(inv: Invocation, agent: str, scope: str, project: Path, dry_run: bool) -> None:
    """Merge MemCastle's hooks into the agent's settings and show the change: at session start the agent gets its
    wake-up bundle; when a session stops or compacts, its transcript is mined. Running it again changes nothing."""
    from memcastle.hooks import install

    palace = str(inv.palace.expanduser().absolute()) if inv.palace else None
    _apply(inv, install(agent, _target(agent, scope, project), palace=palace), dry_run, "updated")


@hooks_app.command("uninstall")
@_settings_change
@pass_invocation
def hooks_uninstall(inv: Invocation, agent: str, scope: str, project: Path, dry_run: bool) -> None:
    """Remove MemCastle's hooks from the agent's settings (every other hook and setting stays)."""
    from memcastle.hooks import uninstall

    _apply(inv, uninstall(agent, _target(agent, scope, project)), dry_run, "updated")


@hooks_app.command("status")
@click.option(
    "--project", type=click.Path(file_okay=False, path_type=Path), default=Path("."), help="the project to look in"
)
@pass_invocation
def hooks_status(inv: Invocation, project: Path) -> None:
    """Where MemCastle's hooks are installed, for each agent and scope."""
    from memcastle.hooks import installed

    rows = []
    for agent in AGENTS:
        for scope in SCOPES:
            path = _target(agent, scope, project)
            rows.append({"agent": agent, "scope": scope, "file": str(path), "events": installed(agent, path)})
    inv.emit(
        {"hooks": rows},
        lambda data: render.table(
            "agent hooks",
            ["agent", "scope", "file", "installed for"],
            [(r["agent"], r["scope"], r["file"], ", ".join(r["events"]) or "—") for r in data["hooks"]],
        ),
    )


def _project(cwd: object) -> str | None:
    """The wing of the folder an agent works in (its `.config/memcastle.toml` wing, else its name), when known."""
    if not isinstance(cwd, str) or not cwd.startswith("/"):
        return None
    from memcastle.connectors.project import project_wing

    folder = Path(cwd)
    if not folder.is_dir():
        return None  # a folder of another machine (a payload replayed elsewhere): no project to scope to
    try:
        return project_wing(folder)
    except MemCastleError:
        return None


def _why(exc: BaseException, deadline: float) -> str:
    """One line on why a hook did nothing."""
    if isinstance(exc, TimeoutError):
        return f"the daemon did not answer within {deadline:g} s; nothing was done this time"
    if isinstance(exc, MemCastleError):
        return " ".join(exc.message.split())
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]


@app.command("hook")
@click.argument("event", type=click.Choice(("session-start", "prompt", "stop", "pre-compact")))
@click.option(
    "--agent",
    required=True,
    help="the agent running the hook: claude, codex, pi or opencode (any name at session start)",
)
@click.option("--checkpoint", is_flag=True, help="also save the payload's last assistant message as a checkpoint")
@pass_invocation
def hook(inv: Invocation, event: str, agent: str, checkpoint: bool) -> None:
    """Run by an agent's hook with its JSON on standard input (see `hooks install`); never fails the agent."""
    from memcastle.clock import utc_now
    from memcastle.hooks.dispatch import CALL_TIMEOUT, DEADLINE, SavedWakeUp, handle, read_payload
    from memcastle.runtime.daemons import state_dir

    def give_up(*_: object) -> None:
        raise TimeoutError

    def stop_timer() -> None:
        if hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, 0)

    if hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, give_up)
        signal.setitimer(signal.ITIMER_REAL, DEADLINE)
    saved: SavedWakeUp | None = None
    try:
        payload = read_payload(sys.stdin.read() if not sys.stdin.isatty() else "")
        if event == "prompt":  # the search reminder: decided here, without the daemon, in milliseconds
            from memcastle.hooks.dispatch import PromptCount, reminder_output

            level = inv.settings().hooks.reminder
            session = str(payload.get("session_id") or "")
            count = PromptCount(state_dir(), agent, session).next() if session and level == "sometimes" else 1
            output = reminder_output(level, payload, count)
            if output:
                sys.stdout.write(output + "\n")
            return
        project = _project(payload.get("cwd"))
        if event == "session-start":
            saved = SavedWakeUp(state_dir(), inv.settings().palace, agent, project)
        from memcastle.cli.client import DaemonClient

        output = handle(
            agent,
            event,
            payload,
            DaemonClient(inv.settings(), timeout=CALL_TIMEOUT),
            checkpoint=checkpoint,
            project=project,
            saved=saved,
            now=utc_now(),
        )
        stop_timer()
        if output:
            sys.stdout.write(output + "\n")
    except Exception as exc:  # noqa: BLE001 - no daemon, a slow one, a refusal, a payload it cannot use: the agent goes on
        stop_timer()
        why = _why(exc, DEADLINE)
        fallback = saved.answer(utc_now(), why.split(";")[0]) if saved is not None else None
        if fallback is not None:  # a session start is answered from the last wake-up rather than left empty
            output, why = fallback
            if output:
                sys.stdout.write(output + "\n")
        sys.stderr.write(f"memcastle hook {event}: {why}\n")
    finally:
        stop_timer()
