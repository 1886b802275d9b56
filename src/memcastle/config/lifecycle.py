"""Expiry rules from `[[lifecycle]]` in the config file (docs/lifecycle.md, "Expiry"): the drawers matching every
given criterion expire so long after they began to hold."""

from __future__ import annotations

from memcastle.config import RawTable
from memcastle.config.toml import line_for
from memcastle.errors import ConfigError
from memcastle.model.lifecycle import ExpiryRule, Lifecycle
from memcastle.model.mining import parse_duration

_CRITERIA = ("connector", "wing", "room", "tag")
_KEYS = {*_CRITERIA, "expire_after", "forget_after"}


def load_lifecycle(table: RawTable | None) -> Lifecycle:
    """Validate `[[lifecycle]]`; every error names the file, the line where it can, and the key."""
    if table is None:
        return Lifecycle()
    if not isinstance(table.value, list):
        line = line_for(table.text, "lifecycle")
        raise ConfigError("must be an array of tables: [[lifecycle]]", file=table.file, line=line, key="lifecycle")
    rules = []
    for index, entry in enumerate(table.value):
        where = f"lifecycle[{index}]"
        if not isinstance(entry, dict):
            raise ConfigError("must be a table", file=table.file, line=line_for(table.text, where), key=where)

        def fail(key: str, message: str) -> ConfigError:
            return ConfigError(message, file=table.file, line=line_for(table.text, key), key=key)

        for key in entry:
            if key not in _KEYS:
                raise fail(f"{where}.{key}", f"unknown key; allowed: {', '.join(sorted(_KEYS))}")
        for key in _CRITERIA:
            value = entry.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise fail(f"{where}.{key}", "must be a non-empty string")
        if not any(entry.get(key) for key in _CRITERIA):
            raise fail(where, f"name at least one of {', '.join(_CRITERIA)}: a rule for every drawer is not kept")
        if "expire_after" not in entry:
            raise fail(f"{where}.expire_after", "required: a duration such as 30d or 12h")
        try:
            after = parse_duration(entry["expire_after"])
            if after <= 0:
                raise ValueError("must be longer than 0 s")
        except ValueError as exc:
            raise fail(f"{where}.expire_after", str(exc)) from None
        forget_after = None
        if "forget_after" in entry:
            try:
                forget_after = parse_duration(entry["forget_after"])
            except ValueError as exc:
                raise fail(f"{where}.forget_after", str(exc)) from None
        rules.append(ExpiryRule(after=after, forget_after=forget_after, **{key: entry.get(key) for key in _CRITERIA}))
    return Lifecycle(tuple(rules))
