"""Project-local settings: the nearest `.config/memcastle.toml` with `[memcastle] wing, room`."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from memcastle.errors import ConfigError

_ALLOWED = {"wing", "room", "source"}


@dataclass(frozen=True)
class ProjectSettings:
    """Defaults a project declares for itself; `root` is the folder that holds `.config/memcastle.toml`."""

    root: Path
    wing: str | None = None
    room: str | None = None
    source: str | None = None  # the connector `memcastle mine .` mines the project with (default: directory)


def find_project_settings(start: Path) -> ProjectSettings | None:
    """Walk up from `start` to the nearest `.config/memcastle.toml` and read its `[memcastle]` table."""
    here = start.expanduser().resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / ".config" / "memcastle.toml"
        if candidate.is_file():
            return _read(candidate, folder)
    return None


def project_wing(start: Path) -> str:
    """The project's wing: `[memcastle] wing` from the nearest project file, else the folder's name."""
    found = find_project_settings(start)
    if found and found.wing:
        return found.wing
    resolved = start.expanduser().resolve()
    return (resolved if resolved.is_dir() else resolved.parent).name or "default"


def _read(path: Path, root: Path) -> ProjectSettings:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(exc), file=str(path), line=getattr(exc, "lineno", None)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=str(path)) from None
    table = data.get("memcastle", {})
    for key in data:
        if key != "memcastle":
            raise ConfigError("only a [memcastle] table is allowed here", file=str(path), key=key)
    if not isinstance(table, dict):
        raise ConfigError("must be a table", file=str(path), key="memcastle")
    for key, value in table.items():
        if key not in _ALLOWED:
            raise ConfigError(
                f"unknown key; allowed: {', '.join(sorted(_ALLOWED))}", file=str(path), key=f"memcastle.{key}"
            )
        if not isinstance(value, str) or not value.strip():
            raise ConfigError("must be a non-empty string", file=str(path), key=f"memcastle.{key}")
    return ProjectSettings(root=root, wing=table.get("wing"), room=table.get("room"), source=table.get("source"))
