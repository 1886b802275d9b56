"""Agent hooks (docs/agents.md): MemCastle's entries in Claude Code's and Codex CLI's hook settings, and what the
`memcastle hook EVENT` command does when an agent runs it.

Both agents read the same shape — `{"hooks": {Event: [{"matcher"?, "hooks": [{"type": "command", "command",
"timeout"}]}]}}` — from a JSON file: Claude Code from `~/.claude/settings.json` (user) or `<project>/.claude/
settings.json` (project), Codex CLI from `~/.codex/hooks.json` or `<project>/.codex/hooks.json`. Installing merges
MemCastle's three entries (session start, stop, pre-compact) into that file and leaves every other key and hook as
it was; installing again changes nothing; uninstalling removes exactly MemCastle's entries.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memcastle.errors import ConfigError

AGENTS = ("claude", "codex")
SCOPES = ("user", "project")
HOOK_TIMEOUT = 10  # seconds the agent gives a hook; the hook itself answers within one
MARK = " hook "  # MemCastle's entries are the commands that run `memcastle … hook EVENT --agent …`

# Agent event → MemCastle hook event, and the matcher it is registered with (None: the event takes none).
EVENTS: Mapping[str, Mapping[str, tuple[str, str | None]]] = {
    "claude": {
        "SessionStart": ("session-start", "startup|resume|clear|compact"),
        "UserPromptSubmit": ("prompt", None),  # the search reminder, at the level of `hooks.reminder`
        "Stop": ("stop", None),
        "PreCompact": ("pre-compact", "manual|auto"),
    },
    "codex": {
        "SessionStart": ("session-start", "startup|resume|clear"),
        # codex-rs/hooks/src/events/user_prompt_submit.rs: the same input (`session_id`, `prompt`) and output
        # (`hookSpecificOutput.additionalContext`) as Claude Code's.
        "UserPromptSubmit": ("prompt", None),
        "Stop": ("stop", None),
        "PreCompact": ("pre-compact", None),
    },
}


@dataclass(frozen=True)
class Change:
    """What installing or uninstalling does to one file: a settings file merged into, or a file MemCastle owns
    (written whole, removed by uninstalling)."""

    path: Path
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file is removed
    backup: bool = True  # keep a `.bak` copy of the file as it was before the first change (settings files)
    own_folder: bool = False  # the file's folder is MemCastle's too: removed with the file when left empty

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        label = str(self.path)
        return "".join(difflib.unified_diff(old, new, f"{label} (now)", f"{label} (after)"))

    def write(self) -> None:
        """Write the new text next to the old and rename it over; the first change of a settings file keeps a `.bak`
        copy. A removal deletes the file (and its own folder, when that is left empty)."""
        if self.after is None:
            if self.before is not None:
                self.path.unlink(missing_ok=True)
                if self.own_folder:
                    with contextlib.suppress(OSError):
                        self.path.parent.rmdir()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.before is not None and self.backup:
            backup = self.path.with_name(self.path.name + ".bak")
            if not backup.exists():
                backup.write_text(self.before, encoding="utf-8")
        temporary = self.path.with_name(f".{self.path.name}.memcastle-{os.getpid()}")
        temporary.write_text(self.after, encoding="utf-8")
        os.replace(temporary, self.path)


def settings_file(agent: str, scope: str, project: Path, home: Path | None = None) -> Path:
    """Where the agent reads its hooks for that scope."""
    home = home or Path.home()
    if agent == "claude":
        return (home / ".claude" if scope == "user" else project / ".claude") / "settings.json"
    codex_home = Path(os.environ["CODEX_HOME"]) if os.environ.get("CODEX_HOME") and scope == "user" else None
    return (codex_home or (home / ".codex" if scope == "user" else project / ".codex")) / "hooks.json"


def memcastle_argv(*, palace: str | None = None) -> list[str]:
    """This installation's `memcastle`, by absolute path (an agent started from a desktop launcher does not share the
    shell's PATH), with the palace when one was named."""
    script = Path(sys.executable).with_name("memcastle")
    program = [str(script)] if script.exists() else [sys.executable, "-m", "memcastle"]
    return [*program, *(["--palace", palace] if palace else [])]


def hook_command(agent: str, event: str, *, palace: str | None = None) -> str:
    """The command line an agent runs."""
    return shlex.join([*memcastle_argv(palace=palace), "hook", event, "--agent", agent])


def install(agent: str, path: Path, *, palace: str | None = None) -> Change:
    before, settings = _read(path)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError("`hooks` must be an object", file=str(path), key="hooks")
    for agent_event, (event, matcher) in EVENTS[agent].items():
        command = hook_command(agent, event, palace=palace)
        groups = [g for g in hooks.get(agent_event, []) if isinstance(g, dict)]
        groups = [_without_ours(g) for g in groups]
        groups = [g for g in groups if g.get("hooks")]
        entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]}
        if matcher is not None:
            entry = {"matcher": matcher, **entry}
        hooks[agent_event] = [*groups, entry]
    return Change(path, before, _dump(settings, before))


def uninstall(agent: str, path: Path) -> Change:
    before, settings = _read(path)
    hooks = settings.get("hooks")
    if before is None or not isinstance(hooks, dict):
        return Change(path, before, before)
    for agent_event in list(hooks):
        groups = hooks[agent_event]
        if not isinstance(groups, list):
            continue
        kept = [_without_ours(g) if isinstance(g, dict) else g for g in groups]
        kept = [g for g in kept if not isinstance(g, dict) or g.get("hooks")]
        if kept:
            hooks[agent_event] = kept
        else:
            del hooks[agent_event]
    if not hooks:
        del settings["hooks"]
    return Change(path, before, _dump(settings, before))


def installed(agent: str, path: Path) -> list[str]:
    """The agent events MemCastle's hooks are installed for in that file."""
    _, settings = _read(path)
    hooks = settings.get("hooks") if isinstance(settings.get("hooks"), dict) else {}
    assert isinstance(hooks, dict)
    return sorted(
        event
        for event, groups in hooks.items()
        if isinstance(groups, list) and any(_is_ours(h) for g in groups if isinstance(g, dict) for h in _hooks_of(g))
    )


def _hooks_of(group: Mapping[str, Any]) -> list[Any]:
    found = group.get("hooks")
    return found if isinstance(found, list) else []


def _is_ours(hook: Any) -> bool:
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    words = shlex.split(hook["command"]) if hook["command"].strip() else []
    return any(Path(w).name == "memcastle" or w == "memcastle" for w in words[:3]) and MARK.strip() in words


def _without_ours(group: dict[str, Any]) -> dict[str, Any]:
    return {**group, "hooks": [h for h in _hooks_of(group) if not _is_ours(h)]}


def _read(path: Path) -> tuple[str | None, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, {}
    if not text.strip():
        return text, {}
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"not valid JSON ({exc.msg}); fix it or move it away, nothing was changed",
            file=str(path),
            line=exc.lineno,
        ) from None
    if not isinstance(settings, dict):
        raise ConfigError("must be a JSON object", file=str(path))
    return text, settings


def _dump(settings: Mapping[str, Any], before: str | None) -> str:
    """Two-space JSON as both agents write it; an untouched file keeps its exact text."""
    text = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    if before is not None:
        try:
            if json.loads(before) == settings:
                return before
        except json.JSONDecodeError:
            pass
    return text
