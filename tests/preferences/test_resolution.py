"""Resolution (SPEC §5): `resolve(policy, origin)` is a pure function of the policy and the drawer's frozen origin.

No origin → default; else the connector's level or the default; then, among the connector's criteria whose path
finds a type-strictly equal JSON scalar in the metadata snapshot, the most path segments win and declaration order
breaks ties. The last section shows the snapshot being frozen at mine time, through a real palace.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcastle.config.layers import parse_layer
from memcastle.model import Origin
from memcastle.preferences import (
    LEVELS,
    Policy,
    explain,
    load_policy,
    resolve,
    scalar_equals,
)

if TYPE_CHECKING:
    from conftest import Bench  # tests/preferences/conftest.py


def origin(connector: str = "notes", metadata: Mapping[str, Any] | None = None) -> Origin:
    return Origin(
        connector=connector, source_id="src", document="doc.md", chunk=0, revision="r1", metadata=dict(metadata or {})
    )


def policy(default: str | None = None, **sources: Mapping[str, Any]) -> Policy:
    """A one-layer policy from a table shaped like the TOML one (`criteria` as a list of dicts)."""
    table: dict[str, Any] = {"sources": {name: dict(entry) for name, entry in sources.items()}}
    if default is not None:
        table["default"] = default
    return load_policy([parse_layer("test layer", table)])


def crit(path: str, equals: Any, level: str) -> dict[str, Any]:
    return {"path": path, "equals": equals, "level": level}


# --- type-strict scalar equality --------------------------------------------------------------------

# (found in the metadata, `equals` in the policy, matched)
SCALARS: list[tuple[Any, Any, bool]] = [
    ("draft", "draft", True),
    ("Draft", "draft", False),
    ("draft ", "draft", False),
    ("", "", True),
    (1, 1, True),
    (1, 1.0, True),  # JSON has one number type: 1 and 1.0 are the same number
    (1.0, 1, True),
    (1.5, 1.5, True),
    (2, 1.5, False),
    (-0.0, 0, True),
    (1, "1", False),
    ("1", 1, False),
    (True, 1, False),
    (1, True, False),
    (0, False, False),
    (False, 0, False),
    (True, True, True),
    (False, False, True),
    (True, False, False),
    ("true", True, False),
    (True, "true", False),
    (None, "", False),
    (None, "null", False),
    (None, 0, False),
    (None, False, False),
    (["draft"], "draft", False),
    ({"value": 1}, 1, False),
    ([], False, False),
]


@pytest.mark.parametrize(("found", "equals", "matched"), SCALARS, ids=[f"{f!r}~{e!r}" for f, e, _ in SCALARS])
def test_scalar_equality_is_type_strict_over_json_values(found: Any, equals: Any, matched: bool) -> None:
    assert scalar_equals(found, equals) is matched


@pytest.mark.parametrize(("found", "equals", "matched"), SCALARS, ids=[f"{f!r}~{e!r}" for f, e, _ in SCALARS])
def test_a_criterion_matches_only_a_type_strictly_equal_value(found: Any, equals: Any, matched: bool) -> None:
    result = resolve(policy(notes={"criteria": [crit("value", equals, "high")]}), origin(metadata={"value": found}))
    assert result.level == ("high" if matched else "normal")
    assert (result.criterion is not None) is matched


# --- paths ------------------------------------------------------------------------------------------

METADATA: dict[str, Any] = {
    "status": "draft",
    "review": {"owner": "ana", "tags": ["x"], "round": 2, "final": False},
    "reviews": [{"owner": "ana"}],
    "numbered": {"0": "zero"},
    "dotted.key": "v",
    "empty": {},
    "nothing": None,
}

# (criterion path, equals, matched)
PATHS: list[tuple[str, Any, bool]] = [
    ("status", "draft", True),
    ("review.owner", "ana", True),
    ("review.round", 2, True),
    ("review.final", False, True),
    ("numbered.0", "zero", True),  # a digit is an ordinary key of a table
    ("reviews.0.owner", "ana", False),  # a path never steps into a list
    ("reviews.owner", "ana", False),
    ("review.tags.0", "x", False),
    ("missing", "draft", False),
    ("review.missing", "ana", False),
    ("missing.owner", "ana", False),
    ("status.length", 5, False),  # through a scalar
    ("empty.anything", "", False),
    ("nothing.inside", "", False),
    ("dotted.key", "v", False),  # segments are split on dots, so a dotted key cannot be addressed
    ("review", "ana", False),  # a table is not a scalar
]


@pytest.mark.parametrize(("path", "equals", "matched"), PATHS, ids=[p for p, _, _ in PATHS])
def test_a_path_finds_a_value_only_through_nested_tables(path: str, equals: Any, matched: bool) -> None:
    result = resolve(policy(notes={"criteria": [crit(path, equals, "low")]}), origin(metadata=METADATA))
    assert result.level == ("low" if matched else "normal")
    assert (result.criterion.to_json() if result.criterion else None) == (
        crit(path, equals, "low") if matched else None
    )


# --- specificity and order --------------------------------------------------------------------------

SNAPSHOT = {"status": "draft", "review": {"owner": "ana", "team": {"lead": "bo"}}}


@pytest.mark.parametrize("order", ["shallow first", "deep first"])
def test_the_criterion_with_more_path_segments_wins_whatever_its_place(order: str) -> None:
    shallow, deep = crit("status", "draft", "low"), crit("review.owner", "ana", "high")
    criteria = [shallow, deep] if order == "shallow first" else [deep, shallow]
    result = resolve(policy(notes={"criteria": criteria}), origin(metadata=SNAPSHOT))
    assert result.level == "high" and result.criterion is not None
    assert result.criterion.to_json() == deep


def test_three_segments_beat_two_and_two_beat_one() -> None:
    criteria = [
        crit("status", "draft", "high"),
        crit("review.team.lead", "bo", "low"),
        crit("review.owner", "ana", "normal"),
    ]
    result = resolve(policy(notes={"criteria": criteria}), origin(metadata=SNAPSHOT))
    assert result.criterion is not None and result.criterion.path == ("review", "team", "lead")
    assert result.level == "low"


@pytest.mark.parametrize(("first", "second"), [("low", "high"), ("high", "low"), ("normal", "high")])
def test_declaration_order_breaks_a_tie_between_equally_specific_matches(first: str, second: str) -> None:
    snapshot = {**SNAPSHOT, "owner": "ana"}
    declared = [crit("status", "draft", first), crit("owner", "ana", second)]
    result = resolve(policy(notes={"criteria": declared}), origin(metadata=snapshot))
    assert result.level == first and result.criterion is not None and result.criterion.path == ("status",)
    result = resolve(policy(notes={"criteria": declared[::-1]}), origin(metadata=snapshot))
    assert result.level == second and result.criterion is not None and result.criterion.path == ("owner",)


def test_a_more_specific_criterion_that_does_not_match_does_not_win() -> None:
    criteria = [crit("status", "draft", "low"), crit("review.owner", "bo", "high")]
    result = resolve(policy(notes={"criteria": criteria}), origin(metadata=SNAPSHOT))
    assert result.level == "low" and result.criterion is not None and result.criterion.path == ("status",)


def test_another_connectors_criteria_never_apply() -> None:
    the_policy = policy(claude={"criteria": [crit("status", "draft", "low")]})
    result = resolve(the_policy, origin("notes", SNAPSHOT))
    assert result.level == "normal" and result.criterion is None


# --- levels: every combination of default, connector level and winning criterion ---------------------

LEVEL_NAMES = list(LEVELS)


@pytest.mark.parametrize(
    ("default", "connector_level", "criterion_level"),
    list(itertools.product(LEVEL_NAMES, [None, *LEVEL_NAMES], [None, *LEVEL_NAMES])),
)
def test_a_criterion_overrides_the_connector_level_which_overrides_the_default(
    default: str,
    connector_level: str | None,
    criterion_level: str | None,
) -> None:
    entry: dict[str, Any] = {"criteria": [crit("status", "final", "high")]}  # present but never matching
    if connector_level is not None:
        entry["level"] = connector_level
    if criterion_level is not None:
        entry["criteria"].append(crit("status", "draft", criterion_level))
    result = resolve(policy(default, notes=entry), origin(metadata=SNAPSHOT))
    expected = criterion_level or connector_level or default
    assert result.level == expected
    assert result.adjustment == LEVELS[expected]
    assert result.connector == "notes"
    assert (result.criterion is not None) is (criterion_level is not None)


@pytest.mark.parametrize("default", LEVEL_NAMES)
def test_a_drawer_without_an_origin_resolves_to_the_default(default: str) -> None:
    the_policy = policy(default, notes={"level": "high", "criteria": [crit("status", "draft", "low")]})
    result = resolve(the_policy, None)
    assert (result.level, result.connector, result.criterion) == (default, None, None)
    assert result.to_json() == {"level": default, "connector": None, "criterion": None, "adjustment": LEVELS[default]}


@pytest.mark.parametrize("default", LEVEL_NAMES)
def test_an_unknown_connector_resolves_to_the_default_and_keeps_its_name(default: str) -> None:
    the_policy = policy(default, notes={"level": "high", "criteria": [crit("status", "draft", "low")]})
    result = resolve(the_policy, origin("a-connector-from-the-future", SNAPSHOT))
    assert (result.level, result.connector, result.criterion) == (default, "a-connector-from-the-future", None)


def test_the_adjustment_is_minus_008_zero_or_plus_008() -> None:
    assert dict(LEVELS) == {"low": -0.08, "normal": 0.0, "high": 0.08}
    for level, adjustment in LEVELS.items():
        assert resolve(policy(level), None).adjustment == adjustment


def test_resolution_reads_but_never_changes_the_origin() -> None:
    snapshot = {"status": "draft", "review": {"owner": "ana"}}
    frozen = origin(metadata=snapshot)
    the_policy = policy(notes={"criteria": [crit("review.owner", "ana", "high")]})
    first, second = resolve(the_policy, frozen), resolve(the_policy, frozen)
    explain(the_policy, frozen)
    assert first == second and frozen.metadata == {"status": "draft", "review": {"owner": "ana"}}


def test_criteria_inherited_from_an_earlier_layer_are_gone_once_a_later_layer_replaces_them() -> None:
    merged = load_policy(
        [
            parse_layer("one", {"sources": {"notes": {"criteria": [crit("status", "draft", "low")]}}}),
            parse_layer("two", {"sources": {"notes": {"criteria": [crit("review.owner", "bo", "high")]}}}),
        ]
    )
    assert resolve(merged, origin(metadata=SNAPSHOT)).level == "normal"


# --- resolution as a property against an independent reference model ---------------------------------

PATH_CHOICES = ("status", "git_branch", "review.owner", "a.b.c", "a.b")
SCALAR = st.one_of(
    st.sampled_from(("draft", "final", "main", "1", "")), st.integers(-2, 2), st.sampled_from((1.0, 2.5)), st.booleans()
)
LEVEL = st.sampled_from(LEVEL_NAMES)
CRITERIA = st.lists(
    st.fixed_dictionaries({"path": st.sampled_from(PATH_CHOICES), "equals": SCALAR, "level": LEVEL}),
    max_size=5,
    unique_by=lambda c: (c["path"], json_kind(c["equals"]), c["equals"]),
)
SOURCES = st.dictionaries(
    st.sampled_from(("notes", "claude")),
    st.fixed_dictionaries({}, optional={"level": LEVEL, "criteria": CRITERIA}),
    max_size=2,
)
VALUE = st.one_of(SCALAR, st.none(), st.lists(SCALAR, max_size=2))
METADATA_STRATEGY = st.fixed_dictionaries(
    {},
    optional={
        "status": VALUE,
        "git_branch": VALUE,
        "review": st.one_of(VALUE, st.fixed_dictionaries({}, optional={"owner": VALUE})),
        "a": st.one_of(
            VALUE,
            st.fixed_dictionaries(
                {}, optional={"b": st.one_of(VALUE, st.fixed_dictionaries({}, optional={"c": VALUE}))}
            ),
        ),
    },
)


def json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else "other"


def reference_resolve(
    default: str, sources: Mapping[str, Any], connector: str | None, metadata: Mapping[str, Any]
) -> tuple[str, tuple[str, ...] | None]:
    """SPEC §5 resolution written independently: (level, winning criterion's path or None)."""
    if connector is None:
        return default, None
    entry = sources.get(connector, {})
    level = entry.get("level") or default
    winner: tuple[int, int, dict[str, Any]] | None = None
    for place, item in enumerate(entry.get("criteria", [])):
        node: Any = metadata
        segments: Sequence[str] = item["path"].split(".")
        for segment in segments:
            node = node.get(segment, KeyError) if isinstance(node, dict) else KeyError
        if node is KeyError or json_kind(node) == "other" or json_kind(node) != json_kind(item["equals"]):
            continue
        if node != item["equals"]:
            continue
        rank = (-len(segments), place)
        if winner is None or rank < winner[:2]:
            winner = (*rank, item)
    if winner is None:
        return level, None
    return winner[2]["level"], tuple(winner[2]["path"].split("."))


@settings(max_examples=300, deadline=None)
@given(
    default=LEVEL,
    sources=SOURCES,
    connector=st.sampled_from(("notes", "claude", "git", None)),
    metadata=METADATA_STRATEGY,
)
def test_resolution_agrees_with_the_reference_model(
    default: str, sources: dict[str, Any], connector: str | None, metadata: dict[str, Any]
) -> None:
    the_policy = load_policy([parse_layer("layer", {"default": default, "sources": sources})])
    result = resolve(the_policy, origin(connector, metadata) if connector else None)
    assert (result.level, result.criterion.path if result.criterion else None) == reference_resolve(
        default, sources, connector, metadata
    )


# --- the snapshot is frozen at mine time; the policy is read at read time ------------------------------

STATUS_POLICY = """\
[[preferences.sources.notes.criteria]]
path = "status"
equals = "draft"
level = "low"

[[preferences.sources.notes.criteria]]
path = "status"
equals = "final"
level = "high"
"""


def test_an_old_revision_still_resolves_through_the_snapshot_it_was_mined_with(bench: Bench) -> None:
    palace = bench.open(preferences=STATUS_POLICY)
    folder = bench.notes("notes", {"plan.md": ({"status": "draft"}, "The migration plan uses blue-green deploys.")})
    bench.mine(palace, "notes", folder, wing="w")
    [old] = bench.drawers(palace, "w").values()
    before_edit = old.created_at
    bench.notes("notes", {"plan.md": ({"status": "final"}, "The migration plan uses blue-green deploys.")})
    assert bench.mine(palace, "notes", folder, wing="w")["superseded"] == 1
    [new] = bench.drawers(palace, "w").values()
    assert new.supersedes == old.id

    def preference(hit: Any) -> tuple[str, Any]:
        found = hit.signals["preference"]
        return found["level"], found["criterion"]["equals"]

    as_of = bench.search(palace, "blue-green", wing="w", as_of=before_edit)
    assert [h.drawer.id for h in as_of.hits] == [old.id]
    assert preference(as_of.hits[0]) == ("low", "draft")

    historical = bench.search(palace, "blue-green", wing="w", include_historical=True)
    assert {h.drawer.id: preference(h) for h in historical.hits} == {
        old.id: ("low", "draft"),
        new.id: ("high", "final"),
    }
    assert palace.services.drawers.preference_trace(old.id).trace["metadata"]["status"] == "draft"
    assert resolve(palace.services.policy, palace.services.drawers.get_drawer(old.id).source.origin).level == "low"
