"""Source preferences (SPEC §5, ADR 048): a layered TOML policy, resolution against frozen origins, bounded rerank.

    load_policy(layers) -> Policy             field-wise merge of validated layers, each field remembering its layer
    resolve(policy, origin) -> PreferenceMatch   pure: connector level or default, then the most specific criterion
    explain(policy, origin) -> dict           the resolution trace: every criterion tried, which matched, which won
    rerank(policy, pooled, drawers) -> hits   relevance normalized in the pool, ± at most BOUND, never filtering

Preferences only order evidence that is already relevant and eligible. They never make a claim true, never merge
sources, and never hide evidence.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcastle.config import Settings, line_of_key
from memcastle.errors import ConfigError
from memcastle.model import Drawer, Hit, Origin

LEVELS: Mapping[str, float] = {"low": -0.08, "normal": 0.0, "high": 0.08}
BOUND = 0.08
BUILTIN_LAYER = "built-in"
Scalar = str | int | float | bool


@dataclass(frozen=True)
class Criterion:
    """A metadata test: the value at `path` in the origin snapshot equals `equals` (type-strict)."""

    path: tuple[str, ...]
    equals: Scalar
    level: str
    order: int

    def to_json(self) -> dict[str, Any]:
        return {"path": ".".join(self.path), "equals": self.equals, "level": self.level}


@dataclass(frozen=True)
class ConnectorPreference:
    level: str | None = None
    criteria: tuple[Criterion, ...] = ()


@dataclass(frozen=True)
class Layer:
    """One declared layer, validated: only the fields it mentions (None / absent = not mentioned)."""

    name: str
    file: str | None
    default: str | None = None
    levels: Mapping[str, str] = field(default_factory=dict)  # connector → level, when the layer sets it
    criteria: Mapping[str, tuple[Criterion, ...]] = field(default_factory=dict)  # when the layer has the key
    connectors: tuple[str, ...] = ()  # every connector the layer mentions


@dataclass(frozen=True)
class Policy:
    """The effective policy and, per field, the layer it came from."""

    default: str
    connectors: Mapping[str, ConnectorPreference]
    origins: Mapping[str, str]
    layers: tuple[Layer, ...] = ()

    @property
    def is_neutral(self) -> bool:
        """True when every drawer would resolve to `normal`: then search leaves scores and pool untouched."""
        if self.default != "normal":
            return False
        return all(
            (pref.level in (None, "normal")) and all(c.level == "normal" for c in pref.criteria)
            for pref in self.connectors.values()
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "default": {"value": self.default, "layer": self.origins.get("default", BUILTIN_LAYER)},
            "sources": {
                name: {
                    "level": {"value": pref.level, "layer": self.origins.get(f"sources.{name}.level")},
                    "criteria": {"value": [c.to_json() for c in pref.criteria],
                                 "layer": self.origins.get(f"sources.{name}.criteria")},
                }
                for name, pref in sorted(self.connectors.items())
            },
            "neutral": self.is_neutral,
            "layers": [{"name": layer.name, "file": layer.file} for layer in self.layers],
        }


@dataclass(frozen=True)
class PreferenceMatch:
    level: str
    connector: str | None
    criterion: Criterion | None = None

    @property
    def adjustment(self) -> float:
        return LEVELS[self.level]

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "connector": self.connector,
                "criterion": self.criterion.to_json() if self.criterion else None, "adjustment": self.adjustment}


NEUTRAL = Policy(default="normal", connectors={}, origins={"default": BUILTIN_LAYER})


# --- layers ---------------------------------------------------------------------------------------


def parse_layer(name: str, table: Any, *, file: str | None = None, text: str = "",
                key_prefix: str = "preferences") -> Layer:
    """Validate one `[preferences]` table; errors name the file, the line where it can be found, and the key."""

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(message, file=file, line=_line_for(text, key) if text else None, key=key)

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
    return Layer(name=name, file=file, default=default, levels=levels, criteria=criteria,
                 connectors=tuple(sources))


_INDEXED = re.compile(r"^(?P<table>.+)\[(?P<index>\d+)\](?:\.(?P<leaf>[\w-]+))?$")


def _line_for(text: str, key: str) -> int | None:
    """The line of `key` in TOML text, including keys inside the n-th `[[…criteria]]` table."""
    match = _INDEXED.match(key)
    if match is None:
        found = line_of_key(text, key)
        if found is None and key.endswith(".sources"):
            found = _first_line(text, re.compile(r'^\s*\[\[?[^\]]*sources\.\s*"\s*"'))
        return found or _header_line(text, key.split(".")[-1])
    table, index, leaf = match["table"], int(match["index"]), match["leaf"]
    lines = text.splitlines()
    header = re.compile(rf"^\s*\[\[\s*{re.escape(table)}\s*\]\]")
    starts = [n for n, line in enumerate(lines, start=1) if header.match(line)]
    if index >= len(starts):
        return line_of_key(text, table)  # the inline form: criteria = [ … ]
    start = starts[index]
    for number in range(start + 1, len(lines) + 1):
        line = lines[number - 1].strip()
        if line.startswith("["):
            break
        if leaf and re.match(rf"^{re.escape(leaf)}\s*=", line):
            return number
    return start


def _first_line(text: str, pattern: re.Pattern[str]) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


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
            raise fail(f"{where}.path", f"malformed path {path!r}: every dot-separated segment must be non-empty "
                                        "and not padded with spaces")
        if "equals" not in item:
            raise fail(f"{where}.equals", "required: a string, number or boolean")
        equals = item["equals"]
        if not isinstance(equals, (str, int, float, bool)) or (isinstance(equals, float) and not math.isfinite(equals)):
            raise fail(f"{where}.equals", f"must be a JSON scalar (string, number or boolean), not {equals!r}")
        level = _check_level(item.get("level"), f"{where}.level", fail)
        identity = (segments, _kind(equals), equals)
        if identity in seen:
            raise fail(f"{where}", f"duplicate criterion (path {path!r}, equals {equals!r}) in one connector")
        seen.add(identity)
        out.append(Criterion(path=segments, equals=equals, level=level, order=index))
    return tuple(out)


def load_policy(layers: Sequence[Layer]) -> Policy:
    """Merge layers in order: `default` and each connector's `level` replace when present; a connector's
    `criteria` is replaced wholesale only when its key is present (`criteria = []` clears); connectors a layer does
    not mention are kept."""
    default = "normal"
    origins: dict[str, str] = {"default": BUILTIN_LAYER}
    levels: dict[str, str | None] = {}
    criteria: dict[str, tuple[Criterion, ...]] = {}
    for layer in layers:
        if layer.default is not None:
            default = layer.default
            origins["default"] = layer.name
        for connector in layer.connectors:
            levels.setdefault(connector, None)
            criteria.setdefault(connector, ())
        for connector, level in layer.levels.items():
            levels[connector] = level
            origins[f"sources.{connector}.level"] = layer.name
        for connector, items in layer.criteria.items():
            criteria[connector] = items
            origins[f"sources.{connector}.criteria"] = layer.name
    connectors = {name: ConnectorPreference(level=levels[name], criteria=criteria[name]) for name in levels}
    return Policy(default=default, connectors=connectors, origins=origins, layers=tuple(layers))


# --- where layers come from -----------------------------------------------------------------------


PALACE_FILE = "preferences.toml"


def layers_from_settings(settings: Settings) -> list[Layer]:
    """The declared layers in merge order: global [preferences], global [palace.preferences], the palace file."""
    layers = []
    for table, key, label in (("preferences", "preferences", "global [preferences]"),
                              ("palace.preferences", "palace.preferences", "global [palace.preferences]")):
        raw = settings.tables.get(table)
        if raw is not None:
            layers.append(parse_layer(f"{label} in {raw.file}", raw.value, file=raw.file, text=raw.text,
                                      key_prefix=key))
    local = palace_layer(settings.palace)
    if local is not None:
        layers.append(local)
    return layers


def palace_layer(palace: Path) -> Layer | None:
    """`<palace>/preferences.toml`, which may contain only a `[preferences]` table."""
    path = palace / PALACE_FILE
    if not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = int(m.group(1)) if (m := re.search(r"line (\d+)", str(exc))) else None
        raise ConfigError(str(exc), file=str(path), line=line) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=str(path)) from None
    for key in data:
        if key != "preferences":
            raise ConfigError("only a [preferences] table is allowed in a palace's preferences.toml",
                              file=str(path), line=line_of_key(text, key) or _header_line(text, key), key=key)
    return parse_layer(f"palace file {path}", data.get("preferences", {}), file=str(path), text=text)


def _header_line(text: str, table: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(rf"^\s*\[\[?\s*{re.escape(table)}[\].]", line):
            return number
    return None


# --- resolution -----------------------------------------------------------------------------------


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def scalar_equals(found: Any, expected: Scalar) -> bool:
    """Type-strict: 1 ≠ "1" ≠ true; numbers compare as JSON numbers (1 == 1.0)."""
    kind = _kind(found)
    return kind != "other" and kind == _kind(expected) and found == expected


_MISSING = object()


def lookup(metadata: Mapping[str, Any], path: Sequence[str]) -> Any:
    """The value at a dot path into nested objects; a path through a list or a missing key finds nothing."""
    node: Any = metadata
    for segment in path:
        if not isinstance(node, Mapping) or segment not in node:
            return _MISSING
        node = node[segment]
    return node


def resolve(policy: Policy, origin: Origin | None) -> PreferenceMatch:
    """No origin (a manual write) → default. Else the connector's level or the default; then the matching
    criterion with the most path segments wins, declaration order breaking ties."""
    if origin is None:
        return PreferenceMatch(level=policy.default, connector=None)
    preference = policy.connectors.get(origin.connector)
    if preference is None:
        return PreferenceMatch(level=policy.default, connector=origin.connector)
    level = preference.level or policy.default
    winner: Criterion | None = None
    for criterion in preference.criteria:
        if scalar_equals(lookup(origin.metadata, criterion.path), criterion.equals):
            if winner is None or len(criterion.path) > len(winner.path):
                winner = criterion
    if winner is not None:
        level = winner.level
    return PreferenceMatch(level=level, connector=origin.connector, criterion=winner)


def explain(policy: Policy, origin: Origin | None) -> dict[str, Any]:
    """The resolution trace of one origin, step by step."""
    match = resolve(policy, origin)
    if origin is None:
        return {"result": match.to_json(), "steps": [
            f"no origin (a manual write): the default level {policy.default!r} "
            f"(from {policy.origins.get('default', BUILTIN_LAYER)})"]}
    steps = []
    preference = policy.connectors.get(origin.connector)
    if preference is None or preference.level is None:
        steps.append(f"connector {origin.connector!r} sets no level: the default {policy.default!r} "
                     f"(from {policy.origins.get('default', BUILTIN_LAYER)})")
    else:
        steps.append(f"connector {origin.connector!r} level {preference.level!r} "
                     f"(from {policy.origins.get(f'sources.{origin.connector}.level')})")
    tried = []
    for criterion in preference.criteria if preference else ():
        found = lookup(origin.metadata, criterion.path)
        matched = scalar_equals(found, criterion.equals)
        tried.append({
            **criterion.to_json(),
            "found": None if found is _MISSING else found,
            "present": found is not _MISSING,
            "matched": matched,
            "won": match.criterion is criterion,
        })
    if match.criterion is not None:
        steps.append(f"criterion {'.'.join(match.criterion.path)} = {match.criterion.equals!r} matched and won "
                     f"({len(match.criterion.path)} path segment(s); more segments win, then declaration order): "
                     f"level {match.level!r}")
    elif tried:
        steps.append("no criterion matched the metadata snapshot")
    return {"result": match.to_json(), "steps": steps, "criteria": tried,
            "metadata": dict(origin.metadata), "connector": origin.connector}


# --- search ---------------------------------------------------------------------------------------


def pool_size(limit: int) -> int:
    """The candidate pool a non-neutral policy reranks: clamp(4·limit, 20, 200)."""
    return max(20, min(200, 4 * limit))


@dataclass(frozen=True)
class PoolEntry:
    """A candidate as the preference rerank sees it: its base signal, all signals, and its normalized relevance."""

    drawer_id: str
    base: float
    signals: Mapping[str, float]
    relevance: float


def rerank(policy: Policy, pool: Sequence[PoolEntry], drawers: Mapping[str, Drawer]) -> list[Hit]:
    """`score = relevance + adjustment`, sorted by score, then base signal, then id. Nothing is dropped."""
    hits = []
    for entry in pool:
        drawer = drawers[entry.drawer_id]
        match = resolve(policy, drawer.source.origin)
        hits.append(Hit(
            drawer=drawer,
            score=entry.relevance + match.adjustment,
            signals={**entry.signals, "relevance": entry.relevance, "preference": match.to_json()},
        ))
    base = {entry.drawer_id: entry.base for entry in pool}
    hits.sort(key=lambda h: (-h.score, -base[h.drawer.id], h.drawer.id))
    return hits
