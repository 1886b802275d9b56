"""Settings: built-in defaults < config.toml < MEMCASTLE_* environment < command-line flags (SPEC §7).

Every setting is declared once in `SETTINGS`; a key that is not declared is an error naming the key (and the file
and line when it came from a file). `Settings.origin(key)` says where each effective value came from.
Only composition roots (`memcastle.app`, the CLI entry point) read settings.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from memcastle.config.declared import APP, SETTINGS, SettingSpec
from memcastle.config.sections import Sections, sections
from memcastle.config.toml import line_for, read_toml
from memcastle.errors import ConfigError

SPEC_BY_KEY = {spec.key: spec for spec in SETTINGS}
FLAG_ALIASES = {"palace": "palace.path"}  # --palace sets palace.path
# Tables that are validated by their own modules rather than key by key here.
STRUCTURED_TABLES = ("miners", "lifecycle", "preferences", "palace.preferences")


@dataclass(frozen=True)
class RawTable:
    """A structured table kept for its own validator, with the file it came from."""

    value: Any
    file: str
    text: str


@dataclass(frozen=True)
class Settings(Sections):
    """The effective settings, read by section and attribute (`settings.server.port`, typed: `config/sections.py`),
    and for each key where its value came from."""

    values: Mapping[str, Any]
    origins: Mapping[str, str]
    config_file: Path
    tables: Mapping[str, RawTable] = field(default_factory=dict)
    text: str = ""  # the config file's text, to find a key's line in

    def error(self, key: str, message: str, *, help: str | None = None) -> ConfigError:
        """An error about a setting's value, naming where it came from: the file and line, or the variable."""
        origin = self.origins.get(key, "")
        if origin.startswith("file "):
            return ConfigError(message, file=str(self.config_file), line=line_for(self.text, key), key=key, help=help)
        return ConfigError(message, key=origin.removeprefix("env ") if origin.startswith("env ") else key, help=help)

    def origin(self, key: str) -> str:
        return self.origins[FLAG_ALIASES.get(key, key)]

    @property
    def palace(self) -> Path:
        return Path(self.values["palace.path"]).expanduser()

    def describe(self) -> list[dict[str, Any]]:
        """Every setting with its effective value (secrets masked) and origin."""
        rows = []
        for spec in SETTINGS:
            value = self.values[spec.key]
            if spec.secret and value:
                value = "********"
            elif isinstance(value, str) and "://" in value:
                value = mask_url_password(value)
            rows.append(
                {"key": spec.key, "value": value, "origin": self.origins[spec.key], "description": spec.description}
            )
        return rows


def mask_url_password(url: str) -> str:
    """`postgresql://user:secret@host/db` → `postgresql://user:********@host/db`; other text as it is."""
    return re.sub(r"(://[^/@:\s]*:)[^/\s]*@", r"\1********@", url)


def default_config_file() -> Path:
    return Path(platformdirs.user_config_dir(APP)) / "config.toml"


def load_settings(
    *,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Merge defaults, the config file, MEMCASTLE_* variables and flags (None flags are ignored)."""
    env = os.environ if env is None else env
    flags = {FLAG_ALIASES.get(k, k): v for k, v in (flags or {}).items() if v is not None}
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for spec in SETTINGS:
        values[spec.key] = spec.default() if callable(spec.default) else spec.default
        origins[spec.key] = "default"

    path = config_file or (Path(env["MEMCASTLE_CONFIG"]) if env.get("MEMCASTLE_CONFIG") else default_config_file())
    tables: dict[str, RawTable] = {}
    text = ""
    if path.exists():
        text = _apply_file(path, values, origins, tables)
    elif config_file is not None or env.get("MEMCASTLE_CONFIG"):
        raise ConfigError("config file does not exist", file=str(path))

    _apply_env(env, values, origins)
    for key, value in flags.items():
        flag_spec = SPEC_BY_KEY.get(key)
        if flag_spec is None:
            raise ConfigError("unknown setting", key=key)
        values[key] = _coerce(flag_spec, value, where=f"flag for {key}")
        origins[key] = "flag"
    typed = vars(sections(values))
    return Settings(**typed, values=values, origins=origins, config_file=path, tables=tables, text=text)


def file_tables(path: Path) -> dict[str, RawTable]:
    """The structured tables (`[[miners]]`, `[[lifecycle]]`, …) of the config file as it reads now — none when it is
    gone; a malformed file is refused naming its line."""
    tables: dict[str, RawTable] = {}
    if path.is_file():
        _apply_file(path, {}, {}, tables)
    return tables


def _apply_file(path: Path, values: dict[str, Any], origins: dict[str, str], tables: dict[str, RawTable]) -> str:
    text, data = read_toml(path)
    origin = f"file {path}"
    for key, value in _flatten(data):
        spec = SPEC_BY_KEY.get(key)
        line = line_for(text, key)
        if spec is None:
            raise ConfigError(_unknown_message(key), file=str(path), line=line, key=key)
        try:
            values[key] = _coerce(spec, value, where=key)
        except ConfigError as exc:
            raise ConfigError(exc.reason, file=str(path), line=line, key=key) from None
        origins[key] = origin
    for name in STRUCTURED_TABLES:
        node: Any = data
        for part in name.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            tables[name] = RawTable(value=node, file=str(path), text=text)
    return text


def _apply_env(env: Mapping[str, str], values: dict[str, Any], origins: dict[str, str]) -> None:
    by_var = {spec.env_var: spec for spec in SETTINGS}
    for var, raw in env.items():
        if not var.startswith("MEMCASTLE_") or var == "MEMCASTLE_CONFIG":
            continue
        spec = by_var.get(var)
        if spec is None:
            known = ", ".join(sorted(by_var)[:6])
            raise ConfigError(f"unknown environment variable {var} (known ones look like {known}, …)", key=var)
        values[spec.key] = _coerce(spec, _parse_env_value(spec, raw, var), where=var)
        origins[spec.key] = f"env {var}"


def _parse_env_value(spec: SettingSpec, raw: str, var: str) -> Any:
    if spec.type is list:
        try:
            return tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            raise ConfigError('expected a TOML array such as ["a", "b"]', key=var) from None
    if spec.type is bool:
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"expected true or false, got {raw!r}", key=var)
    return raw


def _coerce(spec: SettingSpec, value: Any, *, where: str) -> Any:
    converters: dict[type, Callable[[Any], Any]] = {int: int, float: float, str: str}
    if spec.type is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"expected true or false, got {value!r}", key=where)
        return value
    if spec.type is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"expected a list of strings, got {value!r}", key=where)
        return list(value)
    if spec.type in (int, float) and isinstance(value, bool):
        raise ConfigError(f"expected a number, got {value!r}", key=where)
    if spec.type is str and not isinstance(value, str):
        raise ConfigError(f"expected a string, got {value!r}", key=where)
    try:
        coerced = converters[spec.type](value)
    except (TypeError, ValueError):
        raise ConfigError(f"expected {spec.type.__name__}, got {value!r}", key=where) from None
    if spec.type is int and isinstance(value, float) and not value.is_integer():
        raise ConfigError(f"expected an integer, got {value!r}", key=where)
    if spec.choices and coerced not in spec.choices:
        raise ConfigError(f"{coerced!r} is not one of {', '.join(spec.choices)}", key=where)
    if spec.minimum is not None and coerced < spec.minimum:
        raise ConfigError(f"{coerced!r} is below the minimum {spec.minimum:g}", key=where)
    if spec.maximum is not None and coerced > spec.maximum:
        raise ConfigError(f"{coerced!r} is above the maximum {spec.maximum:g}", key=where)
    return coerced


def _flatten(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if dotted in STRUCTURED_TABLES:
            continue
        if isinstance(value, dict) and dotted not in SPEC_BY_KEY:
            out.extend(_flatten(value, dotted + "."))
        else:
            out.append((dotted, value))
    return out


def _unknown_message(key: str) -> str:
    section = key.rsplit(".", 1)[0] if "." in key else ""
    siblings = [s.key for s in SETTINGS if section and s.key.startswith(section + ".")]
    hint = f"; known keys in [{section}]: {', '.join(siblings)}" if siblings else ""
    return f"unknown setting{hint}"
