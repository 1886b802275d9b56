"""Source preferences (SPEC §5, ADR 048): a layered TOML policy, resolution against frozen origins, bounded rerank.

    load_policy(layers) -> Policy             field-wise merge of validated layers, each field remembering its layer
    resolve(policy, origin) -> PreferenceMatch   pure: connector level or default, then the most specific criterion
    explain(policy, origin) -> dict           the resolution trace: every criterion tried, which matched, which won
    rerank(policy, pooled, drawers) -> hits   relevance normalized in the pool, ± at most BOUND, never filtering

Layers are read from TOML by `memcastle.config.layers`; this module never reads a file.

Preferences only order evidence that is already relevant and eligible. They never make a claim true, never merge
sources, and never hide evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memcastle.clock import to_datetime
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
                    "criteria": {
                        "value": [c.to_json() for c in pref.criteria],
                        "layer": self.origins.get(f"sources.{name}.criteria"),
                    },
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
        return {
            "level": self.level,
            "connector": self.connector,
            "criterion": self.criterion.to_json() if self.criterion else None,
            "adjustment": self.adjustment,
        }


NEUTRAL = Policy(default="normal", connectors={}, origins={"default": BUILTIN_LAYER})


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


# --- resolution -----------------------------------------------------------------------------------


def scalar_kind(value: Any) -> str:
    """The JSON kind of a scalar: boolean, number or string (criteria compare type-strictly)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def scalar_equals(found: Any, expected: Scalar) -> bool:
    """Type-strict: 1 ≠ "1" ≠ true; numbers compare as JSON numbers (1 == 1.0)."""
    kind = scalar_kind(found)
    return kind != "other" and kind == scalar_kind(expected) and found == expected


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
        return {
            "result": match.to_json(),
            "steps": [
                f"no origin (a manual write): the default level {policy.default!r} "
                f"(from {policy.origins.get('default', BUILTIN_LAYER)})"
            ],
        }
    steps = []
    preference = policy.connectors.get(origin.connector)
    if preference is None or preference.level is None:
        steps.append(
            f"connector {origin.connector!r} sets no level: the default {policy.default!r} "
            f"(from {policy.origins.get('default', BUILTIN_LAYER)})"
        )
    else:
        steps.append(
            f"connector {origin.connector!r} level {preference.level!r} "
            f"(from {policy.origins.get(f'sources.{origin.connector}.level')})"
        )
    tried = []
    for criterion in preference.criteria if preference else ():
        found = lookup(origin.metadata, criterion.path)
        matched = scalar_equals(found, criterion.equals)
        tried.append(
            {
                **criterion.to_json(),
                "found": None if found is _MISSING else found,
                "present": found is not _MISSING,
                "matched": matched,
                "won": match.criterion is criterion,
            }
        )
    if match.criterion is not None:
        steps.append(
            f"criterion {'.'.join(match.criterion.path)} = {match.criterion.equals!r} matched and won "
            f"({len(match.criterion.path)} path segment(s); more segments win, then declaration order): "
            f"level {match.level!r}"
        )
    elif tried:
        steps.append("no criterion matched the metadata snapshot")
    return {
        "result": match.to_json(),
        "steps": steps,
        "criteria": tried,
        "metadata": dict(origin.metadata),
        "connector": origin.connector,
    }


# --- search ---------------------------------------------------------------------------------------


# The candidate pools a search ranks, whatever its policy: a pool that grew with the limit made the top 5 at `limit 5`
# differ from the first 5 at `limit 50` (docs/adr/0024). Every search ranks the first pool for its first 50 hits; a
# larger limit takes its next hits from the next pool's ranking (the ones not shown yet), and so on, so the first k
# hits are the same at every limit from k up.
POOLS = (50, 100, 200)
POOL = POOLS[0]


def pools_for(limit: int) -> list[int]:
    """The pools ranked for `limit` hits: each one's ranking gives the hits up to its size (the last one, or `limit`
    when that is larger still, the rest)."""
    pools = []
    for size in POOLS:
        pools.append(size)
        if size >= limit:
            return pools
    pools[-1] = max(pools[-1], limit)
    return pools


@dataclass(frozen=True)
class PoolEntry:
    """A candidate as the preference rerank sees it: its base signal, all signals, and its normalized relevance."""

    drawer_id: str
    base: float
    signals: Mapping[str, float]
    relevance: float


@dataclass(frozen=True)
class Freshness:
    """An optional bounded boost for recent evidence (`search.freshness`, a half-life; off by default): a drawer
    `half_life` seconds old (by `valid_from`, against the instant the search is about) gets half of `BOUND`, one just
    written all of it, an old one nearly nothing. Like a preference it only moves a candidate already relevant and
    eligible, by at most `BOUND`, and says so on the hit."""

    half_life: float = 0.0

    @property
    def is_off(self) -> bool:
        return self.half_life <= 0

    def adjustment(self, valid_from: str, at: str) -> tuple[float, float]:
        """(the boost, the drawer's age in days) at the instant `at`."""
        age = max(0.0, (to_datetime(at) - to_datetime(valid_from)).total_seconds())
        return BOUND * 0.5 ** (age / self.half_life), age / 86400


NO_FRESHNESS = Freshness()


def rerank(
    policy: Policy,
    pool: Sequence[PoolEntry],
    drawers: Mapping[str, Drawer],
    *,
    freshness: Freshness = NO_FRESHNESS,
    at: str = "",
) -> list[Hit]:
    """`score = relevance + preference adjustment + freshness boost`, sorted by score, then base signal, then id.
    Nothing is dropped; each hit's signals say what each rule added."""
    hits = []
    for entry in pool:
        drawer = drawers[entry.drawer_id]
        match = resolve(policy, drawer.source.origin)
        signals = {**entry.signals, "relevance": entry.relevance, "preference": match.to_json()}
        score = entry.relevance + match.adjustment
        if not freshness.is_off:
            boost, age = freshness.adjustment(drawer.valid_from, at)
            signals["freshness"] = {"adjustment": round(boost, 6), "age_days": round(age, 2)}
            score += boost
        hits.append(Hit(drawer=drawer, score=score, signals=signals))
    base = {entry.drawer_id: entry.base for entry in pool}
    hits.sort(key=lambda h: (-h.score, -base[h.drawer.id], h.drawer.id))
    return hits
