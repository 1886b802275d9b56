"""Preference layers (SPEC §5, ADR 048): where they come from, how they merge, and how a bad one is refused.

Layers, in merge order: built-in → global `[preferences]` → global `[palace.preferences]` → `<palace>/preferences.toml`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.config.layers import (
    PALACE_FILE,
    layers_from_settings,
    palace_layer,
    parse_layer,
)
from memcastle.errors import ConfigError
from memcastle.preferences import BUILTIN_LAYER, Layer, Policy, load_policy
from memcastle.store.sqlite import DB_FILE


def layer_from_toml(name: str, text: str) -> Layer:
    """A layer as the palace file would declare it (the `[preferences]` table of `text`)."""
    return parse_layer(name, tomllib.loads(text).get("preferences", {}), text=text)


def policy_of(*layers: tuple[str, str]) -> Policy:
    return load_policy([layer_from_toml(name, text) for name, text in layers])


def criteria_of(policy: Policy, connector: str) -> list[dict[str, Any]]:
    return [c.to_json() for c in policy.connectors[connector].criteria]


# --- merge ----------------------------------------------------------------------------------------


def test_with_no_layers_the_builtin_policy_is_normal_with_no_connectors_and_neutral() -> None:
    policy = load_policy([])
    assert policy.default == "normal"
    assert dict(policy.connectors) == {}
    assert policy.origins == {"default": BUILTIN_LAYER}
    assert policy.is_neutral


def test_a_later_default_replaces_an_earlier_one_only_when_present() -> None:
    policy = policy_of(
        ("one", '[preferences]\ndefault = "low"\n'), ("two", '[preferences.sources.notes]\nlevel = "high"\n')
    )
    assert policy.default == "low" and policy.origins["default"] == "one"
    policy = policy_of(("one", '[preferences]\ndefault = "low"\n'), ("two", '[preferences]\ndefault = "high"\n'))
    assert policy.default == "high" and policy.origins["default"] == "two"


def test_a_connector_level_is_replaced_field_wise_and_inherited_criteria_survive() -> None:
    policy = policy_of(
        (
            "one",
            '[preferences.sources.notes]\nlevel = "low"\n'
            '[[preferences.sources.notes.criteria]]\npath = "status"\nequals = "final"\nlevel = "high"\n',
        ),
        ("two", '[preferences.sources.notes]\nlevel = "high"\n'),
    )
    notes = policy.connectors["notes"]
    assert notes.level == "high"
    assert criteria_of(policy, "notes") == [{"path": "status", "equals": "final", "level": "high"}]
    assert policy.origins["sources.notes.level"] == "two"
    assert policy.origins["sources.notes.criteria"] == "one"


def test_criteria_are_replaced_wholesale_when_a_layer_has_the_key() -> None:
    policy = policy_of(
        (
            "one",
            '[[preferences.sources.notes.criteria]]\npath = "status"\nequals = "draft"\nlevel = "low"\n'
            '[[preferences.sources.notes.criteria]]\npath = "status"\nequals = "final"\nlevel = "high"\n',
        ),
        ("two", '[[preferences.sources.notes.criteria]]\npath = "review.owner"\nequals = "ana"\nlevel = "high"\n'),
    )
    assert criteria_of(policy, "notes") == [{"path": "review.owner", "equals": "ana", "level": "high"}]
    assert policy.origins["sources.notes.criteria"] == "two"


def test_an_empty_criteria_list_clears_inherited_criteria_and_keeps_the_level() -> None:
    policy = policy_of(
        (
            "one",
            '[preferences.sources.notes]\nlevel = "high"\n'
            '[[preferences.sources.notes.criteria]]\npath = "status"\nequals = "draft"\nlevel = "low"\n',
        ),
        ("two", "[preferences.sources.notes]\ncriteria = []\n"),
    )
    assert policy.connectors["notes"].criteria == ()
    assert policy.connectors["notes"].level == "high"
    assert policy.origins["sources.notes.criteria"] == "two"


def test_connectors_a_layer_does_not_mention_are_kept() -> None:
    policy = policy_of(
        ("one", '[preferences.sources.notes]\nlevel = "high"\n[preferences.sources.git]\nlevel = "low"\n'),
        ("two", '[preferences.sources.claude]\nlevel = "high"\n'),
        ("three", '[preferences]\ndefault = "low"\n'),
    )
    assert {name: pref.level for name, pref in policy.connectors.items()} == {
        "notes": "high",
        "git": "low",
        "claude": "high",
    }


def test_an_unknown_connector_name_is_allowed_as_a_future_connector() -> None:
    policy = policy_of(("one", '[preferences.sources."my-future-connector"]\nlevel = "high"\n'))
    assert policy.connectors["my-future-connector"].level == "high"


def test_a_connector_mentioned_without_fields_sets_nothing() -> None:
    policy = policy_of(("one", "[preferences.sources.notes]\n"))
    assert policy.connectors["notes"].level is None and policy.connectors["notes"].criteria == ()
    assert "sources.notes.level" not in policy.origins and policy.is_neutral


@pytest.mark.parametrize(
    ("text", "is_neutral"),
    [
        ("", True),
        ('[preferences]\ndefault = "normal"\n', True),
        (
            '[preferences.sources.notes]\nlevel = "normal"\n'
            '[[preferences.sources.notes.criteria]]\npath = "status"\nequals = "draft"\nlevel = "normal"\n',
            True,
        ),
        ('[preferences]\ndefault = "low"\n', False),
        ('[preferences.sources.notes]\nlevel = "high"\n', False),
        ('[[preferences.sources.notes.criteria]]\npath = "status"\nequals = "draft"\nlevel = "low"\n', False),
    ],
)
def test_a_policy_is_neutral_exactly_when_everything_resolves_to_normal(text: str, is_neutral: bool) -> None:
    assert policy_of(("one", text)).is_neutral is is_neutral


# --- merge, as a property against an independent reference model ------------------------------------

CONNECTORS = ("notes", "claude", "git", "future-thing")
LEVEL = st.sampled_from(("low", "normal", "high"))
PATH = st.sampled_from(("status", "git_branch", "review.owner", "a.b.c"))
EQUALS = st.one_of(st.sampled_from(("draft", "final", "main", "", "1")), st.integers(-2, 2), st.booleans())


def typed(value: Any) -> tuple[str, Any]:
    """A value tagged with its type: in Python True == 1, and the merge must keep the declared JSON type."""
    return type(value).__name__, value


CRITERION = st.fixed_dictionaries({"path": PATH, "equals": EQUALS, "level": LEVEL})
CRITERIA = st.lists(CRITERION, max_size=3, unique_by=lambda c: (c["path"], typed(c["equals"])))
CONNECTOR_ENTRY = st.fixed_dictionaries({}, optional={"level": LEVEL, "criteria": CRITERIA})
TABLE = st.fixed_dictionaries(
    {},
    optional={"default": LEVEL, "sources": st.dictionaries(st.sampled_from(CONNECTORS), CONNECTOR_ENTRY, max_size=3)},
)


def reference_merge(stack: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """SPEC §5 merge, written independently: each field remembers the layer that last set it."""
    effective: dict[str, Any] = {"default": {"value": "normal", "layer": BUILTIN_LAYER}, "sources": {}}
    for name, table in stack:
        if "default" in table:
            effective["default"] = {"value": table["default"], "layer": name}
        for connector, entry in table.get("sources", {}).items():
            known = effective["sources"].setdefault(
                connector, {"level": {"value": None, "layer": None}, "criteria": {"value": [], "layer": None}}
            )
            if "level" in entry:
                known["level"] = {"value": entry["level"], "layer": name}
            if "criteria" in entry:
                known["criteria"] = {"value": [dict(c) for c in entry["criteria"]], "layer": name}
    return effective


def comparable(view: Mapping[str, Any]) -> dict[str, Any]:
    """The policy view with every `equals` tagged by its type (Python has True == 1)."""
    return {
        "default": view["default"],
        "sources": {
            name: {
                "level": source["level"],
                "criteria": {
                    "layer": source["criteria"]["layer"],
                    "value": [{**c, "equals": typed(c["equals"])} for c in source["criteria"]["value"]],
                },
            }
            for name, source in view["sources"].items()
        },
    }


@settings(max_examples=200, deadline=None)
@given(tables=st.lists(TABLE, max_size=4))
def test_merging_any_stack_of_layers_agrees_with_the_reference_model(tables: list[dict[str, Any]]) -> None:
    stack = [(f"layer {index}", table) for index, table in enumerate(tables)]
    policy = load_policy([parse_layer(name, table) for name, table in stack])
    view, expected = policy.to_json(), reference_merge(stack)
    assert comparable(view) == comparable(expected)
    assert [layer["name"] for layer in view["layers"]] == [name for name, _ in stack]
    everything_normal = expected["default"]["value"] == "normal" and all(
        source["level"]["value"] in (None, "normal")
        and all(c["level"] == "normal" for c in source["criteria"]["value"])
        for source in expected["sources"].values()
    )
    assert policy.is_neutral is everything_normal


# --- where the layers come from ---------------------------------------------------------------------

GLOBAL_CONFIG = """\
[preferences]
default = "low"

[preferences.sources.notes]
level = "high"

[[preferences.sources.notes.criteria]]
path = "status"
equals = "draft"
level = "low"

[palace]
[palace.preferences.sources.notes]
level = "normal"

[palace.preferences.sources.git]
level = "low"
"""

PALACE_PREFERENCES = """\
[preferences]
default = "high"

[preferences.sources.notes]
criteria = []

[preferences.sources.claude]
level = "high"
"""


def test_layers_are_read_from_the_global_file_then_its_palace_table_then_the_palace_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(GLOBAL_CONFIG)
    palace = tmp_path / "palace"
    palace.mkdir()
    (palace / PALACE_FILE).write_text(PALACE_PREFERENCES)
    settings = load_settings(flags={"palace": str(palace)}, env={}, config_file=config)
    layers = layers_from_settings(settings)
    assert [(layer.name, layer.file) for layer in layers] == [
        (f"global [preferences] in {config}", str(config)),
        (f"global [palace.preferences] in {config}", str(config)),
        (f"palace file {palace / PALACE_FILE}", str(palace / PALACE_FILE)),
    ]
    view = load_policy(layers).to_json()
    assert view["default"] == {"value": "high", "layer": layers[2].name}
    assert view["sources"]["notes"] == {
        "level": {"value": "normal", "layer": layers[1].name},
        "criteria": {"value": [], "layer": layers[2].name},
    }
    assert view["sources"]["git"]["level"] == {"value": "low", "layer": layers[1].name}
    assert view["sources"]["claude"]["level"] == {"value": "high", "layer": layers[2].name}


def test_without_any_declared_layer_there_are_no_layers(tmp_path: Path) -> None:
    settings = load_settings(flags={"palace": str(tmp_path / "palace")}, env={}, config_file=None)
    assert layers_from_settings(settings) == []


def test_a_palace_file_with_only_an_empty_preferences_table_is_a_valid_empty_layer(tmp_path: Path) -> None:
    (tmp_path / PALACE_FILE).write_text("# nothing yet\n[preferences]\n")
    layer = palace_layer(tmp_path)
    assert layer is not None and layer.default is None and layer.connectors == ()


def test_the_global_palace_table_applies_to_whichever_palace_is_served_and_the_palace_file_travels(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[palace.preferences]\ndefault = "low"\n')
    moved = tmp_path / "moved-palace"
    moved.mkdir()
    (moved / PALACE_FILE).write_text('[preferences.sources.notes]\nlevel = "high"\n')
    with_global = load_policy(
        layers_from_settings(load_settings(flags={"palace": str(moved)}, env={}, config_file=config))
    )
    without_global = load_policy(
        layers_from_settings(load_settings(flags={"palace": str(moved)}, env={}, config_file=None))
    )
    assert with_global.default == "low" and with_global.connectors["notes"].level == "high"
    assert without_global.default == "normal" and without_global.connectors["notes"].level == "high"


# --- validation -------------------------------------------------------------------------------------

CRITERION_HEADER = "[[preferences.sources.notes.criteria]]\n"
FIRST = "preferences.sources.notes.criteria[0]"


def criterion(path: str = '"status"', equals: str = '"draft"', level: str = '"low"', extra: str = "") -> str:
    return f"{CRITERION_HEADER}path = {path}\nequals = {equals}\nlevel = {level}\n{extra}"


# (palace preferences.toml text, the key the error must name, the line it must name or None)
INVALID_PALACE_FILES: dict[str, tuple[str, str, int | None]] = {
    "unknown default level": ('[preferences]\ndefault = "urgent"\n', "preferences.default", 2),
    "levels are case-sensitive": ('[preferences]\ndefault = "High"\n', "preferences.default", 2),
    "a level is a word, not a number": ("[preferences]\ndefault = 1\n", "preferences.default", 2),
    "unknown connector level": (
        '[preferences]\ndefault = "normal"\n\n[preferences.sources.notes]\nlevel = "top"\n',
        "preferences.sources.notes.level",
        5,
    ),
    "unknown criterion level": (criterion(level='"lowest"'), f"{FIRST}.level", None),
    "criterion without a level": (f'{CRITERION_HEADER}path = "status"\nequals = "draft"\n', f"{FIRST}.level", None),
    "blank connector name": ('[preferences.sources.""]\nlevel = "high"\n', "preferences.sources", None),
    "whitespace connector name": ('[preferences.sources."   "]\nlevel = "high"\n', "preferences.sources", None),
    "empty path": (criterion(path='""'), f"{FIRST}.path", None),
    "leading dot": (criterion(path='".status"'), f"{FIRST}.path", None),
    "trailing dot": (criterion(path='"status."'), f"{FIRST}.path", None),
    "double dot": (criterion(path='"review..owner"'), f"{FIRST}.path", None),
    "padded segment": (criterion(path='"review. owner"'), f"{FIRST}.path", None),
    "only a dot": (criterion(path='"."'), f"{FIRST}.path", None),
    "path is not a string": (criterion(path='["review", "owner"]'), f"{FIRST}.path", None),
    "criterion without a path": (f'{CRITERION_HEADER}equals = "draft"\nlevel = "low"\n', f"{FIRST}.path", None),
    "equals is a table": (criterion(equals='{ owner = "ana" }'), f"{FIRST}.equals", None),
    "equals is an array": (criterion(equals='["draft", "final"]'), f"{FIRST}.equals", None),
    "equals is an empty array": (criterion(equals="[]"), f"{FIRST}.equals", None),
    "equals is a TOML datetime": (criterion(equals="1979-05-27T07:32:00Z"), f"{FIRST}.equals", None),
    "equals is a TOML local date": (criterion(equals="1979-05-27"), f"{FIRST}.equals", None),
    "equals is infinite": (criterion(equals="inf"), f"{FIRST}.equals", None),
    "equals is not a number": (criterion(equals="nan"), f"{FIRST}.equals", None),
    "criterion without equals": (f'{CRITERION_HEADER}path = "status"\nlevel = "low"\n', f"{FIRST}.equals", None),
    "duplicate path and equals": (
        criterion() + criterion(level='"high"'),
        "preferences.sources.notes.criteria[1]",
        None,
    ),
    "duplicate after another criterion": (
        criterion() + criterion(equals='"final"') + criterion(level='"normal"'),
        "preferences.sources.notes.criteria[2]",
        None,
    ),
    "1 and 1.0 are the same JSON number": (
        criterion(equals="1") + criterion(equals="1.0"),
        "preferences.sources.notes.criteria[1]",
        None,
    ),
    "unknown key in [preferences]": ('[preferences]\ndefault = "low"\nweight = 2\n', "preferences.weight", 3),
    "unknown key in a connector": (
        '[preferences.sources.notes]\npriority = "high"\n',
        "preferences.sources.notes.priority",
        2,
    ),
    "unknown key in a criterion": (criterion(extra='note = "why"\n'), f"{FIRST}.note", None),
    "sources is not a table": ('[preferences]\nsources = "notes"\n', "preferences.sources", 2),
    "a connector is not a table": ('[preferences.sources]\nnotes = "high"\n', "preferences.sources.notes", 2),
    "criteria is not an array": (
        '[preferences.sources.notes]\ncriteria = "status"\n',
        "preferences.sources.notes.criteria",
        2,
    ),
    "a criterion is not a table": ('[preferences.sources.notes]\ncriteria = ["status"]\n', FIRST, None),
    "preferences is not a table": ('preferences = "high"\n', "preferences", 1),
    # Only a [preferences] table may appear in a palace's preferences.toml.
    "another table": ('[preferences]\ndefault = "high"\n\n[server]\nport = 9000\n', "server", 4),
    "a top-level key": ('default = "high"\n', "default", 1),
    "a palace table": ('[preferences]\ndefault = "low"\n\n[palace.preferences]\ndefault = "high"\n', "palace", 4),
    "an array of tables": ('[preferences]\n\n[[miners]]\nname = "x"\n', "miners", 3),
}


@pytest.mark.parametrize(("text", "key", "line"), list(INVALID_PALACE_FILES.values()), ids=list(INVALID_PALACE_FILES))
def test_an_invalid_palace_file_is_refused_naming_the_file_the_key_and_the_line(
    tmp_path: Path,
    text: str,
    key: str,
    line: int | None,
) -> None:
    path = tmp_path / PALACE_FILE
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        palace_layer(tmp_path)
    error = caught.value
    assert (error.file, error.key) == (str(path), key), error.message
    assert f"key {key!r}" in error.message and str(path) in error.message
    if line is not None:
        assert error.line == line, error.message
        assert f"{path}:{line}" in error.message


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (criterion(level='"lowest"'), 4),
        (criterion() + criterion(path='"a..b"'), 6),
        (criterion(equals="[1]"), 3),
        ('[preferences.sources.""]\nlevel = "high"\n', 1),
    ],
    ids=["criterion level", "second criterion's path", "criterion equals", "blank connector"],
)
def test_an_error_inside_a_criterion_or_connector_header_names_its_line(tmp_path: Path, text: str, line: int) -> None:
    (tmp_path / PALACE_FILE).write_text(text)
    with pytest.raises(ConfigError) as caught:
        palace_layer(tmp_path)
    assert caught.value.line == line, caught.value.message


@pytest.mark.parametrize(
    "text",
    [
        criterion(equals='"1"') + criterion(equals="1") + criterion(equals="true"),  # three different JSON types
        criterion() + '[[preferences.sources.claude.criteria]]\npath = "status"\nequals = "draft"\nlevel = "low"\n',
        criterion(path='"review.owner"') + criterion(path='"owner"'),
        criterion(path='"snake_case.with-dash.and space"'),
    ],
    ids=[
        "same path, different types",
        "same criterion in two connectors",
        "same value, different paths",
        "segments may hold inner spaces and punctuation",
    ],
)
def test_criteria_that_only_look_alike_are_accepted(tmp_path: Path, text: str) -> None:
    (tmp_path / PALACE_FILE).write_text(text)
    assert palace_layer(tmp_path) is not None


def test_a_palace_file_that_is_not_toml_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / PALACE_FILE
    path.write_text('[preferences]\ndefault = "low"\ndefault =\n')
    with pytest.raises(ConfigError) as caught:
        palace_layer(tmp_path)
    assert caught.value.file == str(path) and caught.value.line == 3


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ('[preferences]\ndefault = "urgent"\n', "preferences.default", 2),
        (
            '[palace]\npath = "/tmp/x"\n\n[palace.preferences.sources.notes]\nlevel = "loud"\n',
            "palace.preferences.sources.notes.level",
            5,
        ),
        (
            '[preferences]\ndefault = "low"\n\n[palace.preferences]\ndefault = "low"\ncolour = "red"\n',
            "palace.preferences.colour",
            6,
        ),
        (
            "[palace.preferences.sources.notes]\n"
            + criterion(path='"a..b"').replace("preferences.sources", "palace.preferences.sources"),
            "palace.preferences.sources.notes.criteria[0].path",
            None,
        ),
    ],
    ids=[
        "global default",
        "global palace connector level",
        "global palace unknown key",
        "global palace criterion path",
    ],
)
def test_an_invalid_global_layer_is_refused_naming_the_config_file_and_key(
    tmp_path: Path,
    text: str,
    key: str,
    line: int | None,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text)
    settings = load_settings(flags={"palace": str(tmp_path / "palace")}, env={}, config_file=config)
    with pytest.raises(ConfigError) as caught:
        layers_from_settings(settings)
    assert (caught.value.file, caught.value.key) == (str(config), key), caught.value.message
    if line is not None:
        assert caught.value.line == line, caught.value.message


# --- an invalid layer stops the palace from starting ------------------------------------------------


@pytest.mark.parametrize(
    ("where", "text", "key"),
    [
        ("palace", '[preferences.sources.notes]\nlevel = "urgent"\n', "preferences.sources.notes.level"),
        ("palace", "[preferences]\n[server]\nport = 1\n", "server"),
        ("global", '[palace.preferences]\ndefault = "loud"\n', "palace.preferences.default"),
    ],
)
def test_building_a_palace_with_an_invalid_layer_is_refused_before_the_store_is_opened(
    tmp_path: Path,
    where: str,
    text: str,
    key: str,
) -> None:
    palace = tmp_path / "palace"
    palace.mkdir()
    config = None
    if where == "palace":
        (palace / PALACE_FILE).write_text(text)
    else:
        config = tmp_path / "config.toml"
        config.write_text(text)
    settings = load_settings(flags={"palace": str(palace), "embeddings.provider": "none"}, env={}, config_file=config)
    with pytest.raises(ConfigError) as caught:
        build(settings)
    assert caught.value.key == key
    assert not (palace / DB_FILE).exists(), "nothing is created for a palace that refuses to start"


def test_a_daemon_with_an_invalid_palace_file_exits_1_naming_the_file_and_key(
    daemon_process: Callable[..., Any],
    tmp_path: Path,
) -> None:
    palace = tmp_path / "palace"
    palace.mkdir()
    (palace / PALACE_FILE).write_text('[preferences]\ndefault = "urgent"\n')
    served = daemon_process(palace, wait=False)
    assert served.wait_exit() == 1
    squeezed = "".join(served.log().split())  # the error renderer may wrap a long path anywhere
    assert "".join(f"{palace / PALACE_FILE}:2 key 'preferences.default'".split()) in squeezed, served.log()
    assert not served.registry_path.exists()
