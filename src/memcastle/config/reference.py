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
