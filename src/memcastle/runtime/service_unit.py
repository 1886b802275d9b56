"""A per-user service that starts a palace's daemon at login: a systemd user unit on Linux, a launchd agent on macOS.

The service runs the same command line as a background start (`launcher.serve_command`), with its standard error
appended to the same log file, so `memcastle daemon status` and `memcastle daemon stop` work on it as on any
daemon. The unit's name carries the palace's registry key, so two palaces get two services.
"""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from memcastle.runtime.daemons import registry_file

PLATFORMS = ("systemd", "launchd")


def default_platform() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


@dataclass(frozen=True)
class ServiceUnit:
    """A service definition: what to write where, and the commands that load and unload it."""

    platform: str
    name: str
    path: Path
    text: str
    load: tuple[list[str], ...]
    unload: tuple[list[str], ...]


def service_name(states: Path, palace: Path, platform: str) -> str:
    key = registry_file(states, palace).stem
    return f"dev.memcastle.{key}" if platform == "launchd" else f"memcastle-{key}.service"


# The directories the daemon finds its config, palace and registry through, and the PATH it finds the programs
# connectors run on (git, opencode, an out-of-process connector's interpreter — often in ~/.local/bin or a tool's own
# folder): a service manager starts it without the user's shell, so the values the installing shell has are written
# into the service (never MEMCASTLE_* variables, which may hold a token).
CARRIED_ENVIRONMENT = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "PATH")


def carried_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {name: environ[name] for name in CARRIED_ENVIRONMENT if environ.get(name)}


def service_unit(
    platform: str,
    states: Path,
    palace: Path,
    command: Sequence[str],
    log: Path,
    *,
    environment: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> ServiceUnit:
    """The service of `palace` for `platform`, running `command` with `environment` added, its output appended to
    `log`."""
    environment = {"PYTHONUNBUFFERED": "1", **(environment or {})}
    name = service_name(states, palace, platform)
    resolved = palace.expanduser().resolve()
    if platform == "launchd":
        folder = (home or Path.home()) / "Library" / "LaunchAgents"
        path = folder / f"{name}.plist"
        text = plistlib.dumps(
            {
                "Label": name,
                "ProgramArguments": list(command),
                "RunAtLoad": True,
                "KeepAlive": {"SuccessfulExit": False},  # restarted after a crash, not after `memcastle shutdown`
                "StandardOutPath": str(log),
                "StandardErrorPath": str(log),
                "ProcessType": "Background",
                "EnvironmentVariables": environment,
            }
        ).decode("utf-8")
        return ServiceUnit(
            "launchd",
            name,
            path,
            text,
            load=(["launchctl", "load", "-w", str(path)],),
            unload=(["launchctl", "unload", "-w", str(path)],),
        )
    folder = Path(platformdirs.user_config_dir("systemd")) / "user"
    path = folder / name
    text = "\n".join(
        [
            "[Unit]",
            f"Description=MemCastle memory server for the palace {_systemd_text(str(resolved))}",
            "After=network.target",
            "",
            "[Service]",
            "Type=simple",
            f"ExecStart={systemd_command(command)}",
            # A clean `memcastle daemon stop` exits 0 and stays stopped; a crash is restarted.
            "Restart=on-failure",
            "RestartSec=5",
            # SIGTERM drains the jobs (the daemon's own handler); give the drain time before systemd kills it.
            "TimeoutStopSec=90",
            *(f'Environment="{_systemd_text(f"{name}={value}")}"' for name, value in environment.items()),
            f"StandardOutput=append:{_systemd_text(str(log))}",
            f"StandardError=append:{_systemd_text(str(log))}",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )
    return ServiceUnit(
        "systemd",
        name,
        path,
        text,
        load=(["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", name]),
        unload=(["systemctl", "--user", "disable", "--now", name], ["systemctl", "--user", "daemon-reload"]),
    )


def systemd_command(command: Sequence[str]) -> str:
    """A command line as systemd's `ExecStart=` reads it: every word double-quoted, with `\\`, `"`, `%` and `$`
    escaped (systemd expands the last two itself)."""
    return " ".join(f'"{_systemd_text(word)}"' for word in command)


def _systemd_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")


def parse_systemd_command(line: str) -> list[str]:
    """The words of an `ExecStart=` value written by `systemd_command` (for tests and `daemon status`)."""
    words: list[str] = []
    rest = line.strip()
    while rest:
        if not rest.startswith('"'):
            word, _, rest = rest.partition(" ")
            words.append(word)
        else:
            out, i = [], 1
            while rest[i] != '"':
                if rest[i] == "\\":
                    i += 1
                out.append(rest[i])
                i += 1
            words.append("".join(out).replace("%%", "%").replace("$$", "$"))
            rest = rest[i + 1 :]
        rest = rest.lstrip()
    return words


def run_commands(commands: Sequence[Sequence[str]]) -> tuple[bool, str]:
    """Run each command in turn; (all succeeded, what failed and why) — a missing tool or no user session is a
    failure to report, not an error: the unit file is written either way."""
    for command in commands:
        if shutil.which(command[0]) is None:
            return False, f"{command[0]} is not installed here"
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=os.environ.copy())
        if done.returncode != 0:
            reason = (done.stderr or done.stdout).strip().splitlines()
            return False, f"`{' '.join(command)}` failed: {reason[-1] if reason else f'exit {done.returncode}'}"
    return True, ""
