"""Source-preference layers read from TOML: global `[preferences]`, `[palace.preferences]`, `<palace>/preferences.toml`.

Each layer is validated here, with errors that name the file, the line and the key; `memcastle.preferences`
merges and applies them.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from memcastle.config import Settings
from memcastle.config.toml import line_for, read_toml
from memcastle.errors import ConfigError
from memcastle.preferences import LEVELS, Criterion, Layer, Scalar, scalar_kind


def parse_layer(
    name: str, table: Any, *, file: str | None = None, text: str = "", key_prefix: str = "preferences"
) -> Layer:
    """Validate one `[preferences]` table; errors name the file, the line where it can be found, and the key."""

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(message, file=file, line=line_for(text, key) if text else None, key=key)

    if not isinstance(table, dict):
        raise fail(key_prefix, "must be a table")
    for key in table:
        if key not in ("default", "sources"):
            raise fail(f"{key_prefix}.{key}", "unknown key; allowed: default, sources")
    default = table.get("default")
    if default is not None:
        _check_level(default, f"{key_prefix}.default", fail)
    sources = table.get("sources", {})
    if not isinstance(sources, dict):
        raise fail(f"{key_prefix}.sources", "must be a table of connectors")
    levels: dict[str, str] = {}
    criteria: dict[str, tuple[Criterion, ...]] = {}
    for connector, entry in sources.items():
        where = f"{key_prefix}.sources.{connector}"
        if not connector.strip():
            raise fail(f"{key_prefix}.sources", "a connector name must not be blank")
        if not isinstance(entry, dict):
            raise fail(where, "must be a table with level and/or criteria")
        for key in entry:
            if key not in ("level", "criteria"):
                raise fail(f"{where}.{key}", "unknown key; allowed: level, criteria")
        if "level" in entry:
            levels[connector] = _check_level(entry["level"], f"{where}.level", fail)
        if "criteria" in entry:
            criteria[connector] = _parse_criteria(entry["criteria"], f"{where}.criteria", fail)
    return Layer(name=name, file=file, default=default, levels=levels, criteria=criteria, connectors=tuple(sources))


def _check_level(value: Any, key: str, fail: Any) -> str:
    if not isinstance(value, str) or value not in LEVELS:
        raise fail(key, f"unknown level {value!r}; one of low, normal, high")
    return value


_SEGMENT = re.compile(r"^[^.\s][^.]*$")


def _parse_criteria(value: Any, key: str, fail: Any) -> tuple[Criterion, ...]:
    if not isinstance(value, list):
        raise fail(key, "must be an array of tables ([[…criteria]] or criteria = [])")
    seen: set[tuple[tuple[str, ...], str, Scalar]] = set()
    out = []
    for index, item in enumerate(value):
        where = f"{key}[{index}]"
        if not isinstance(item, dict):
            raise fail(where, "must be a table with path, equals and level")
        for extra in item:
            if extra not in ("path", "equals", "level"):
                raise fail(f"{where}.{extra}", "unknown key; allowed: path, equals, level")
        path = item.get("path")
        if not isinstance(path, str) or not path:
            raise fail(f"{where}.path", "required: a dot-separated path into the origin metadata")
        segments = tuple(path.split("."))
        if not all(_SEGMENT.match(s) and s.strip() == s for s in segments):
            raise fail(
                f"{where}.path",
                f"malformed path {path!r}: every dot-separated segment must be non-empty and not padded with spaces",
            )
        if "equals" not in item:
            raise fail(f"{where}.equals", "required: a string, number or boolean")
        equals = item["equals"]
        if not isinstance(equals, (str, int, float, bool)) or (isinstance(equals, float) and not math.isfinite(equals)):
            raise fail(f"{where}.equals", f"must be a JSON scalar (string, number or boolean), not {equals!r}")
        level = _check_level(item.get("level"), f"{where}.level", fail)
        identity = (segments, scalar_kind(equals), equals)
        if identity in seen:
            raise fail(f"{where}", f"duplicate criterion (path {path!r}, equals {equals!r}) in one connector")
        seen.add(identity)
        out.append(Criterion(path=segments, equals=equals, level=level, order=index))
    return tuple(out)


PALACE_FILE = "preferences.toml"


def layers_from_settings(settings: Settings) -> list[Layer]:
    """The declared layers in merge order: global [preferences], global [palace.preferences], the palace file."""
    layers = []
    for table, key, label in (
        ("preferences", "preferences", "global [preferences]"),
        ("palace.preferences", "palace.preferences", "global [palace.preferences]"),
    ):
        raw = settings.tables.get(table)
        if raw is not None:
            layers.append(
                parse_layer(f"{label} in {raw.file}", raw.value, file=raw.file, text=raw.text, key_prefix=key)
            )
    local = palace_layer(settings.palace)
    if local is not None:
        layers.append(local)
    return layers


def palace_layer(palace: Path) -> Layer | None:
    """`<palace>/preferences.toml`, which may contain only a `[preferences]` table."""
    path = palace / PALACE_FILE
    if not path.exists():
        return None
    text, data = read_toml(path)
    for key in data:
        if key != "preferences":
            raise ConfigError(
                "only a [preferences] table is allowed in a palace's preferences.toml",
                file=str(path),
                line=line_for(text, key),
                key=key,
            )
    return parse_layer(f"palace file {path}", data.get("preferences", {}), file=str(path), text=text)
