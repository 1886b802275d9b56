"""The settings table of docs/configuration.md, generated there with cog (`cog -r docs/configuration.md`; `cog
--check` in CI fails when a setting changed without it)."""

from __future__ import annotations

import json
from typing import Any

from memcastle.config.declared import SETTINGS


def settings_table() -> str:
    """Every declared setting: key, type, default (as it is written in config.toml), variable and meaning."""
    rows = ["| key | type | default | environment | meaning |", "|---|---|---|---|---|"]
    for spec in SETTINGS:
        meaning = spec.description if spec.description.endswith(".") else spec.description + "."
        if spec.choices:
            meaning += f" One of: {', '.join(spec.choices)}."
        rows.append(
            f"| `{spec.key}` | {spec.type.__name__} | `{_as_toml(spec.default)}` | `{spec.env_var}` | {meaning} |"
        )
    return "\n".join(rows) + "\n"


def _as_toml(value: Any) -> str:
    if callable(value):
        return "$XDG_DATA_HOME/memcastle/palace"  # the one computed default (`palace.path`)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_as_toml(item) for item in value) + "]"
    return repr(value)


_TYPES = {str: "str", int: "int", float: "float", bool: "bool", list: "list[str]"}


def section_classes() -> str:
    """The typed sections of `config/sections.py` (generated there with cog): each `[section]` a frozen value whose
    attributes are its settings, so that a setting is read as `settings.server.port` and mypy knows its type. The
    `palace` section is `Settings.palace` (the expanded path); top-level keys are attributes of `Sections`."""
    sections: dict[str, list[tuple[str, str]]] = {}
    top: list[tuple[str, str]] = []
    for spec in SETTINGS:
        section, _, name = spec.key.rpartition(".")
        if section == "palace":
            continue
        (sections.setdefault(section, []) if section else top).append((name, _TYPES[spec.type]))
    out: list[str] = []
    for section, fields in sections.items():
        out += ["", "", "@dataclass(frozen=True)", f"class {_class_name(section)}:", f'    """[{section}]"""', ""]
        out += [f"    {name}: {kind}" for name, kind in fields]
    out += ["", "", "@dataclass(frozen=True)", "class Sections:", '    """Every section; the top-level keys."""', ""]
    out += [f"    {section}: {_class_name(section)}" for section in sections]
    out += [f"    {name}: {kind}" for name, kind in top]
    out += ["", "", "def sections(values: Mapping[str, Any]) -> Sections:", '    """The typed view of the values."""']
    out.append("    return Sections(")
    out += [f'        {section}={_class_name(section)}(**_section(values, "{section}")),' for section in sections]
    out += [f'        {name}=values["{name}"],' for name, _ in top]
    out.append("    )")
    return "\n".join(out) + "\n\n\n"  # as ruff lays the module out: two blank lines before the closing marker


def _class_name(section: str) -> str:
    return "".join(part.title() for part in section.split("_")) + "Settings"
