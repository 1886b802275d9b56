"""The arrays of tables of the config file (`[[miners]]`, `[[lifecycle]]`): each entry checked to be a table with
known keys, and a refusal that names the file, the line and the key."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import Any

from memcastle.config import RawTable
from memcastle.config.toml import line_for
from memcastle.errors import ConfigError

Refuse = Callable[[str, str], ConfigError]


def array_entries(table: RawTable, name: str, keys: Collection[str]) -> Iterator[tuple[str, dict[str, Any], Refuse]]:
    """Each table of `[[name]]`, as (where it is, `name[i]`; its keys and values; how to refuse one of its keys):
    refused when `name` is no array of tables, an entry no table, or a key not among `keys`."""
    if not isinstance(table.value, list):
        line = line_for(table.text, name)
        raise ConfigError(f"must be an array of tables: [[{name}]]", file=table.file, line=line, key=name)

    def refuse(key: str, message: str) -> ConfigError:
        return ConfigError(message, file=table.file, line=line_for(table.text, key), key=key)

    for index, entry in enumerate(table.value):
        where = f"{name}[{index}]"
        if not isinstance(entry, dict):
            raise refuse(where, "must be a table")
        for key in entry:
            if key not in keys:
                raise refuse(f"{where}.{key}", f"unknown key; allowed: {', '.join(sorted(keys))}")
        yield where, entry, refuse
