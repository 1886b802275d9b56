"""Agent integrations (docs/agents.md): what `memcastle integration install NAME` puts where each agent looks, so
that a session starts with the agent's wake-up bundle and its transcript is mined as it goes.

Each agent's own mechanism is used, and each runs the same `memcastle hook EVENT --agent NAME` command
(`memcastle.hooks.dispatch`); the model gets MemCastle's tools (the `core` profile) in the same step:
- `claude` — hooks merged into Claude Code's `settings.json` (`memcastle.hooks`), the MCP server entry
  (`registration`), and the agent skill `SKILL.md`;
- `codex` — hooks merged into Codex CLI's `hooks.json`, the MCP server entry in its `config.toml`, and the skill;
- `pi` — an extension file in Pi's extensions folder (`pi.on("session_start" | "agent_end" | …)`, and the tools it
  registers itself: Pi has no MCP), and the skill;
- `opencode` — a plugin file in OpenCode's plugins folder (1.x's hooks and OpenCode 2's `setup`), the MCP server
  entry in its `opencode.json`, and the skill.

A file MemCastle writes whole (an extension, a plugin, a skill) carries `MARK`; a file of the same name without it is
the user's and is never overwritten or removed. Installing again changes nothing when nothing changed; uninstalling
removes exactly what installing wrote.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict, Unpack

from memcastle.errors import ConfigError
from memcastle.hooks import Change, installed, memcastle_argv, settings_file
from memcastle.hooks import install as install_hooks
from memcastle.hooks import uninstall as uninstall_hooks
from memcastle.hooks.dispatch import CUES, REMIND_EVERY, REMINDER
from memcastle.integrations.registration import (
    TOKEN_VARIABLE,
    Endpoint,
    register,
    registered,
    registration_file,
    unregister,
)
from memcastle.integrations.registration import entry as mcp_entry

INTEGRATIONS = ("claude", "codex", "pi", "opencode")
SCOPES = ("user", "project")
MARK = "memcastle integration uninstall"  # in every file MemCastle writes whole
TITLES = {"claude": "Claude Code", "codex": "Codex CLI", "pi": "Pi", "opencode": "OpenCode"}


@dataclass(frozen=True)
class Part:
    """One thing an integration installs: `hooks` merged into a settings file, or a file of MemCastle's own (an
    `extension`, a `plugin`, a `skill`)."""

    kind: str
    path: Path


@dataclass(frozen=True)
class PartStatus:
    """Whether a part is there: `installed` (as installing would write it now), `outdated` (MemCastle's, written by
    another version or for another palace or address: install again), `missing`, or `foreign` (a file of that name
    that is not MemCastle's, left alone). `events` are the agent events hooks are installed for; `mcp` is the MCP
    server entry as the agent's file holds it."""

    kind: str
    path: Path
    state: str
    events: tuple[str, ...] = ()
    mcp: dict[str, Any] | None = None


def default_endpoint(palace: str | None = None) -> Endpoint:
    """The daemon's `/mcp` at the default address (`server.host`, `server.port`); the CLI passes the configured one."""
    return endpoint_of("127.0.0.1", 8420, auth=False, palace=palace)


def endpoint_of(host: str, port: int, *, auth: bool, palace: str | None) -> Endpoint:
    """How an agent reaches a daemon configured with that address: HTTP when the port is fixed (a wildcard host is
    reached on loopback), the stdio bridge (which finds the daemon, or starts one) when it is chosen at start."""
    bridge = (*memcastle_argv(palace=palace), "mcp", "--start", "--tools", "core")
    if port == 0:
        return Endpoint(None, bridge, auth)
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    shown = f"[{shown}]" if ":" in shown else shown
    return Endpoint(f"http://{shown}:{port}/mcp", bridge, auth)


def parts(name: str, scope: str, project: Path, home: Path | None = None) -> list[Part]:
    """What the integration installs for that scope (`project` is the project folder of the `project` scope)."""
    if name not in INTEGRATIONS:
        raise ConfigError(f"no integration named {name!r}; one of {', '.join(INTEGRATIONS)}")
    home = home or Path.home()
    user = scope == "user"
    found = []
    if name in ("claude", "codex"):
        found.append(Part("hooks", settings_file(name, scope, project, home)))
    if name == "claude":
        folder = home / ".claude" if user else project / ".claude"
        found.append(Part("skill", folder / "skills" / "memcastle" / "SKILL.md"))
    if name == "pi":
        folder = _pi_agent_dir(home) if user else project / ".pi"
        found.append(Part("extension", folder / "extensions" / "memcastle.ts"))
        found.append(Part("skill", folder / "skills" / "memcastle" / "SKILL.md"))
    if name == "codex":  # Codex reads skills from $CODEX_HOME/skills, and from a repository's .agents/skills
        folder = _codex_home(home) if user else project / ".agents"
        found.append(Part("skill", folder / "skills" / "memcastle" / "SKILL.md"))
    if name == "opencode":
        folder = _opencode_dir(home) if user else project / ".opencode"
        found.append(Part("plugin", folder / "plugins" / "memcastle.js"))
        found.append(Part("skill", folder / "skill" / "memcastle" / "SKILL.md"))
    command = _command_file(name, user, project, home)
    if command is not None:
        found.append(Part("command", command))
    config_dir = _codex_home(home) if name == "codex" else _opencode_dir(home)
    registration = registration_file(name, scope, project, home, config_dir)
    if registration is not None:
        found.append(Part("mcp", registration))
    return found


class Wanted(TypedDict, total=False):
    """What an install writes beyond the agent and scope: the palace its hooks name, the home folder (a test's),
    `endpoint` (how the agent reaches the daemon's MCP tools: `endpoint_of` the configured address) and how often
    the hooks remind the agent of its tools."""

    palace: str | None
    home: Path | None
    endpoint: Endpoint | None
    reminder: str


def _settled(wanted: Wanted) -> tuple[str | None, Path | None, Endpoint, str]:
    """What is wanted, with the defaults: the configured address's endpoint, reminders `sometimes`."""
    palace = wanted.get("palace")
    return (
        palace,
        wanted.get("home"),
        wanted.get("endpoint") or default_endpoint(palace),
        wanted.get("reminder", "sometimes"),
    )


def install(name: str, scope: str, project: Path, **wanted: Unpack[Wanted]) -> list[Change]:
    """The changes installing makes (nothing is written: `Change.write` does it)."""
    palace, home, endpoint, reminder = _settled(wanted)
    changes = []
    for part in parts(name, scope, project, home):
        if part.kind == "hooks":
            changes.append(install_hooks(name, part.path, palace=palace))
        elif part.kind == "mcp":
            changes.append(register(name, part.path, endpoint))
        else:
            before = _read_own(part.path, refuse=True)
            after = render(name, part.kind, palace=palace, endpoint=endpoint, reminder=reminder)
            changes.append(Change(part.path, before, after, backup=False, own_folder=part.kind == "skill"))
    return changes


def uninstall(name: str, scope: str, project: Path, home: Path | None = None) -> list[Change]:
    """The changes uninstalling makes: MemCastle's hooks out of the settings file, its own files removed (a file of
    the same name that is not MemCastle's stays)."""
    changes = []
    for part in parts(name, scope, project, home):
        if part.kind == "hooks":
            changes.append(uninstall_hooks(name, part.path))
            continue
        if part.kind == "mcp":
            changes.append(unregister(name, part.path))
            continue
        before = _read_own(part.path, refuse=False)
        ours = before is not None and MARK in before
        changes.append(Change(part.path, before, None if ours else before, own_folder=part.kind == "skill"))
    return changes


def status(name: str, scope: str, project: Path, **wanted: Unpack[Wanted]) -> list[PartStatus]:
    """Each part's state, compared with what installing (for `palace` and `endpoint`) would write."""
    palace, home, endpoint, reminder = _settled(wanted)
    found = []
    for part in parts(name, scope, project, home):
        if part.kind == "mcp":
            held = registered(name, part.path)
            state = "missing" if held is None else "installed" if held == mcp_entry(name, endpoint) else "outdated"
            found.append(PartStatus(part.kind, part.path, state, mcp=held))
            continue
        if part.kind == "hooks":
            events = tuple(installed(name, part.path))
            state = "installed" if events and not install_hooks(name, part.path, palace=palace).changed else (
                "outdated" if events else "missing"
            )  # fmt: skip
            found.append(PartStatus(part.kind, part.path, state, events))
            continue
        text = _read_own(part.path, refuse=False)
        if text is None:
            state = "missing"
        elif MARK not in text:
            state = "foreign"
        else:
            written = render(name, part.kind, palace=palace, endpoint=endpoint, reminder=reminder)
            state = "installed" if text == written else "outdated"
        found.append(PartStatus(part.kind, part.path, state))
    return found


def render(
    name: str, kind: str, *, palace: str | None = None, endpoint: Endpoint | None = None, reminder: str = "sometimes"
) -> str:
    """The text of a file MemCastle writes whole: the skill, or the extension/plugin — the shared bridge to
    `memcastle hook` (`assets/hook.js`) followed by the agent's part — naming this installation's `memcastle`."""
    if kind == "skill":
        return _asset("SKILL.md").replace("{uninstall}", f"`{MARK} {name}`")
    if kind == "command":
        return _asset("checkpoint.md").replace("{agent}", name).replace("{uninstall}", f"`{MARK} {name}`")
    agent_part = _asset("pi.ts" if name == "pi" else "opencode.js")
    header = (
        f"// MemCastle for {TITLES[name]}: written by `memcastle integration install {name}`, removed by `{MARK} "
        f"{name}`.\n// Install again rather than edit: an edit is overwritten.\n"
    )
    constants = (
        f"const MEMCASTLE = {json.dumps(memcastle_argv(palace=palace))}; // this installation's memcastle\n"
        f"const AGENT = {json.dumps(name)};\n"
        f"const REMINDER_LEVEL = {json.dumps(reminder)}; // hooks.reminder when this was written\n"
        f"const REMINDER = {json.dumps(REMINDER)};\n"
        f"const CUES = {json.dumps(CUES)};\n"
        f"const REMIND_EVERY = {REMIND_EVERY};\n"
    )
    if name == "pi":  # the daemon's MCP endpoint, for the tools the extension registers (None: none to register)
        endpoint = endpoint or default_endpoint(palace)
        token = json.dumps(TOKEN_VARIABLE if endpoint.token else None)
        constants += f"const MCP_URL = {json.dumps(endpoint.url)};\nconst TOKEN_VARIABLE = {token};\n"
    return f"{header}\n{_asset('hook.js')}\n{constants}\n{agent_part}"


def _asset(name: str) -> str:
    return resources.files("memcastle.integrations").joinpath("assets", name).read_text(encoding="utf-8")


def _read_own(path: Path, *, refuse: bool) -> str | None:
    """A file's text (None when there is none); with `refuse`, a file that is not MemCastle's is a `ConfigError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot be read ({exc}); nothing was changed", file=str(path)) from None
    if refuse and MARK not in text:
        raise ConfigError("exists and is not MemCastle's; move it away to install, nothing was changed", file=str(path))
    return text


COMMAND = "memcastle-checkpoint"  # `/memcastle-checkpoint [focus]`: the agent's model files its own checkpoint


def _command_file(name: str, user: bool, project: Path, home: Path) -> Path | None:
    """Where the agent reads user commands: Claude Code's `commands/`, Codex CLI's `prompts/` (its home only),
    OpenCode's `command/`, Pi's prompt templates (`prompts/`)."""
    if name == "claude":
        return (home / ".claude" if user else project / ".claude") / "commands" / f"{COMMAND}.md"
    if name == "codex":
        return _codex_home(home) / "prompts" / f"{COMMAND}.md" if user else None
    if name == "opencode":
        return (_opencode_dir(home) if user else project / ".opencode") / "command" / f"{COMMAND}.md"
    return (_pi_agent_dir(home) if user else project / ".pi") / "prompts" / f"{COMMAND}.md"


def _pi_agent_dir(home: Path) -> Path:
    """Pi's agent folder: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent` (Pi's `getAgentDir`)."""
    configured = os.environ.get("PI_CODING_AGENT_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    return home / ".pi" / "agent"


def _opencode_dir(home: Path) -> Path:
    """Where OpenCode keeps its user configuration: `$OPENCODE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/opencode`, else
    `~/.config/opencode`."""
    configured = os.environ.get("OPENCODE_CONFIG_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(xdg) if xdg else home / ".config") / "opencode"


def _codex_home(home: Path) -> Path:
    """Codex CLI's folder: `$CODEX_HOME`, else `~/.codex`."""
    configured = os.environ.get("CODEX_HOME", "").strip()
    return Path(configured).expanduser() if configured else home / ".codex"
