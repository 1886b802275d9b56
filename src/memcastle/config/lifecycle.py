"""Expiry rules from `[[lifecycle]]` in the config file (docs/lifecycle.md, "Expiry"): the drawers matching every
given criterion expire so long after they began to hold."""

from __future__ import annotations

import math

from memcastle.config import RawTable
from memcastle.config.arrays import array_entries
from memcastle.model.lifecycle import ExpiryRule, Lifecycle
from memcastle.model.mining import parse_duration

_CRITERIA = ("connector", "wing", "room", "tag")
_KEYS = {*_CRITERIA, "path", "equals", "expire_after", "forget_after"}


def load_lifecycle(table: RawTable | None) -> Lifecycle:
    """Validate `[[lifecycle]]`; every error names the file, the line where it can, and the key."""
    if table is None:
        return Lifecycle()
    rules = []
    for where, entry, fail in array_entries(table, "lifecycle", _KEYS):
        for key in _CRITERIA:
            value = entry.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise fail(f"{where}.{key}", "must be a non-empty string")
        path: tuple[str, ...] = ()
        if "path" in entry or "equals" in entry:
            raw = entry.get("path")
            if not isinstance(raw, str) or any(
                not part or part != part.strip() or '"' in part for part in raw.split(".")
            ):
                raise fail(f"{where}.path", "a dot-separated path into the origin metadata, with equals")
            equals = entry.get("equals")
            if not isinstance(equals, str | int | float | bool) or (
                isinstance(equals, float) and not math.isfinite(equals)
            ):
                raise fail(f"{where}.equals", "required with path: a string, number or boolean")
            path = tuple(raw.split("."))
        if not any(entry.get(key) for key in _CRITERIA) and not path:
            raise fail(
                where, f"name at least one of {', '.join((*_CRITERIA, 'path'))}: a rule for every drawer is not kept"
            )
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
        rules.append(
            ExpiryRule(
                after=after,
                forget_after=forget_after,
                path=path,
                equals=entry.get("equals") if path else None,
                **{key: entry.get(key) for key in _CRITERIA},
            )
        )
    return Lifecycle(tuple(rules))
