"""Where a key stands in TOML text: tomllib reports no positions, so errors find their line here.

`key_lines` walks text that tomllib has already accepted and records the line of every key by its full path —
through table headers (quoted parts included), arrays of tables (`miners[1].every`), dotted keys, inline tables
(`server = { port = 8420 }` gives `server.port`) and arrays of inline tables (`miners = [{…}, {…}]` gives
`miners[0].name`) — skipping strings, multi-line ones too, and comments. Only positions are read: the values come
from tomllib.
"""

from __future__ import annotations

import functools
import re
import tomllib
from pathlib import Path
from typing import Any

from memcastle.errors import ConfigError

_LINE_IN_MESSAGE = re.compile(r"line (\d+)")
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def line_from_message(message: str) -> int | None:
    match = _LINE_IN_MESSAGE.search(message)
    return int(match.group(1)) if match else None


def line_of_byte(data: bytes, offset: int) -> int:
    """The line a byte offset falls on (a decoding error's position)."""
    return data.count(b"\n", 0, offset) + 1


def line_for(text: str, key: str) -> int | None:
    """The line of `key` (`section.key`, `miners[1].every`, `preferences.sources.notes.criteria[0].path`), else of
    the nearest enclosing key or table that has one."""
    lines = key_lines(text)
    while key:
        if key in lines:
            return lines[key]
        key = _parent(key)
    return None


def _parent(key: str) -> str:
    if key.endswith("]"):
        return key[: key.rindex("[")]
    return key.rsplit(".", 1)[0] if "." in key else ""


@functools.lru_cache(maxsize=32)
def key_lines(text: str) -> dict[str, int]:
    """Every key and table of `text` by its full path, with the line it starts on."""
    return _Scanner(text).scan()


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.line = 1
        self.found: dict[str, int] = {}
        self.tables: dict[str, int] = {}  # array-of-tables path -> how many seen

    # --- moving ----------------------------------------------------------------------------------

    def peek(self, length: int = 1) -> str:
        return self.text[self.at : self.at + length]

    def advance(self, length: int = 1) -> None:
        self.line += self.text.count("\n", self.at, self.at + length)
        self.at += length

    def skip_blank(self, *, newlines: bool) -> None:
        while self.at < len(self.text):
            char = self.text[self.at]
            if char in " \t\r" or (newlines and char == "\n"):
                self.advance()
            elif char == "#":
                end = self.text.find("\n", self.at)
                self.advance((len(self.text) if end < 0 else end) - self.at)
            else:
                return

    def record(self, path: str, line: int) -> None:
        self.found.setdefault(path, line)

    # --- the document ----------------------------------------------------------------------------

    def scan(self) -> dict[str, int]:
        prefix = ""
        while True:
            self.skip_blank(newlines=True)
            if self.at >= len(self.text):
                return self.found
            if self.peek(2) == "[[":
                self.advance(2)
                prefix = self.header(array=True)
            elif self.peek() == "[":
                self.advance()
                prefix = self.header(array=False)
            else:
                self.pair(prefix)
            self.skip_to_line_end()

    def header(self, *, array: bool) -> str:
        line = self.line
        parts = self.key_parts()
        self.advance(2 if array else 1)  # the closing brackets
        path = ""
        for index, part in enumerate(parts):
            path = f"{path}.{part}" if path else part
            self.record(path, line)  # the tables it implies start here, unless they started earlier
            last = index == len(parts) - 1
            if array and last:
                count = self.tables.get(path, 0)
                self.tables[path] = count + 1
                self.record(path, line)
                path = f"{path}[{count}]"
            elif path in self.tables:
                path = f"{path}[{self.tables[path] - 1}]"  # a sub-table of the latest element
        self.record(path, line)
        return path

    def pair(self, prefix: str) -> None:
        line = self.line
        parts = self.key_parts()
        path = ".".join([prefix, *parts] if prefix else parts)
        self.record(path, line)
        self.skip_blank(newlines=False)
        if self.peek() == "=":
            self.advance()
        self.skip_blank(newlines=False)
        self.value(path)

    def key_parts(self) -> list[str]:
        parts = []
        while True:
            self.skip_blank(newlines=False)
            char = self.peek()
            if char in ('"', "'"):
                parts.append(self.string())
            else:
                match = _BARE.match(self.text, self.at)
                if match is None:
                    return parts
                parts.append(match.group(0))
                self.advance(len(match.group(0)))
            self.skip_blank(newlines=False)
            if self.peek() != ".":
                return parts
            self.advance()

    # --- values ----------------------------------------------------------------------------------

    def value(self, path: str) -> None:
        char = self.peek()
        if char in ('"', "'"):
            self.string()
        elif char == "{":
            self.advance()
            self.inline_table(path)
        elif char == "[":
            self.advance()
            self.array(path)
        else:
            while self.at < len(self.text) and self.text[self.at] not in ",]}\n#":
                self.advance()

    def inline_table(self, path: str) -> None:
        while self.at < len(self.text):
            self.skip_blank(newlines=True)
            char = self.peek()
            if char == "}":
                self.advance()
                return
            if char == ",":
                self.advance()
                continue
            line = self.line
            child = f"{path}.{'.'.join(self.key_parts())}"
            self.record(child, line)
            self.skip_blank(newlines=False)
            if self.peek() == "=":
                self.advance()
            self.skip_blank(newlines=False)
            self.value(child)

    def array(self, path: str) -> None:
        index = 0
        while self.at < len(self.text):
            self.skip_blank(newlines=True)
            char = self.peek()
            if char == "]":
                self.advance()
                return
            if char == ",":
                self.advance()
                index += 1
                continue
            element = f"{path}[{index}]"
            self.record(element, self.line)
            self.value(element)

    def string(self) -> str:
        quote = self.peek()
        if self.peek(3) == quote * 3:
            end = self.text.find(quote * 3, self.at + 3)
            end = len(self.text) if end < 0 else end + 3
            while self.text.startswith(quote, end):  # up to two more quotes belong to the string
                end += 1
            body = self.text[self.at + 3 : end - 3]
            self.advance(end - self.at)
            return body
        start = self.at + 1
        at = start
        while at < len(self.text) and self.text[at] != quote and self.text[at] != "\n":
            at += 2 if quote == '"' and self.text[at] == "\\" else 1
        body = self.text[start:at]
        self.advance(min(at + 1, len(self.text)) - self.at)
        return body.replace('\\"', '"') if quote == '"' else body

    def skip_to_line_end(self) -> None:
        self.skip_blank(newlines=False)
        end = self.text.find("\n", self.at)
        self.advance((len(self.text) if end < 0 else end) - self.at)


def read_toml_text(path: Path) -> str:
    """A TOML file's text; one that cannot be read or is not UTF-8 is a `ConfigError` naming the file (and the line
    of the first byte that is not UTF-8)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not valid UTF-8 (byte {exc.start}: 0x{data[exc.start]:02x})",
            file=str(path),
            line=line_of_byte(data, exc.start),
            help="TOML files are UTF-8 text",
        ) from None


def read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """A TOML file's text and what it holds; one that cannot be read, is not UTF-8 or is not TOML is a `ConfigError`
    naming the file and line."""
    text = read_toml_text(path)
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(exc), file=str(path), line=line_from_message(str(exc))) from None
