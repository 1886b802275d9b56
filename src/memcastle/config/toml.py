"""Where a key stands in TOML text: tomllib reports no line numbers, so errors find them here."""

from __future__ import annotations

import re

_LINE_IN_MESSAGE = re.compile(r"line (\d+)")


def line_from_message(message: str) -> int | None:
    match = _LINE_IN_MESSAGE.search(message)
    return int(match.group(1)) if match else None


def line_of_key(text: str, dotted: str) -> int | None:
    """Best-effort line number of `dotted` (section + key) in TOML text; tomllib does not report it."""
    parts = dotted.split(".")
    leaf = parts[-1]
    section = ".".join(parts[:-1])
    current = ""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        header = re.match(r"^\[\[?\s*([^\]]+?)\s*\]\]?", stripped)
        if header:
            current = header.group(1).replace(" ", "").replace('"', "")
            continue
        match = re.match(r"^([A-Za-z0-9_.\"-]+)\s*=", stripped)
        if not match:
            continue
        key = match.group(1).replace('"', "")
        full = f"{current}.{key}" if current else key
        if full == dotted or (current == section and key == leaf):
            return number
    return None


_INDEXED = re.compile(r"^(?P<table>.+)\[(?P<index>\d+)\](?:\.(?P<leaf>[\w-]+))?$")


def line_for(text: str, key: str) -> int | None:
    """The line of `key` in TOML text, including keys inside the n-th `[[…criteria]]` table."""
    match = _INDEXED.match(key)
    if match is None:
        found = line_of_key(text, key)
        if found is None and key.endswith(".sources"):
            found = first_line(text, re.compile(r'^\s*\[\[?[^\]]*sources\.\s*"\s*"'))
        return found or header_line(text, key.split(".")[-1])
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


def first_line(text: str, pattern: re.Pattern[str]) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def header_line(text: str, table: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(rf"^\s*\[\[?\s*{re.escape(table)}[\].]", line):
            return number
    return None
