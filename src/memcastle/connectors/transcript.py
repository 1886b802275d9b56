"""What the transcript connectors share: turns rendered as speaker paragraphs, one-line tool markers, JSONL reading.

A rendered transcript is its segments joined by blank lines. Each segment opens a paragraph with `User: `,
`Assistant: ` or `[tool: `, so `split_segments` recovers them from the body alone and `normalize` stays pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memcastle.clock import from_epoch, parse_instant
from memcastle.connectors.contract import (
    CanonicalDocument,
    OptionSpec,
    RawDocument,
    SkipDocument,
    SourceSpec,
    local_path,
)
from memcastle.connectors.files import read_local_bytes
from memcastle.connectors.secrets import Redactor
from memcastle.errors import InvalidRequest

Role = Literal["user", "assistant", "tool"]

SINCE_OPTION = OptionSpec("date", "only conversations with activity at or after this instant", identity=False)
SESSION_OPTION = OptionSpec(
    "path",
    "only this session's file, inside the folder (what an agent hook mines when a session stops)",
    identity=False,
)
SEGMENT_SEPARATOR = "\n\n"
DEFAULT_ROOM = "sessions"

_PREFIXES: Mapping[Role, str] = {"user": "User: ", "assistant": "Assistant: ", "tool": "[tool: "}
_MARKER_CHARS = 200
_TITLE_CHARS = 80
_WHITESPACE = re.compile(r"\s+")
# Argument names worth showing in a tool marker, most telling first.
_TELLING_ARGUMENTS = (
    "command",
    "cmd",
    "file_path",
    "notebook_path",
    "path",
    "pattern",
    "query",
    "url",
    "description",
    "prompt",
    "skill",
    "subject",
)
_SHELLS = {"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash", "powershell", "pwsh"}


@dataclass(frozen=True)
class Turn:
    """One kept unit of a conversation: what a speaker said, or a tool marker line."""

    role: Role
    text: str


@dataclass
class JsonLines:
    """The objects of a JSONL file with their 1-based line numbers, and a warning per line that was skipped."""

    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def tool_marker(name: str, detail: str = "") -> str:
    """A one-line marker for a tool call, e.g. `[tool: Bash — ls -la]`, cut to about 200 characters."""
    label = one_line(name) or "tool"
    text = one_line(detail)
    marker = f"[tool: {label} — {text}]" if text else f"[tool: {label}]"
    if len(marker) <= _MARKER_CHARS:
        return marker
    return marker[: _MARKER_CHARS - 2] + "…]"


def summarize_arguments(arguments: Any) -> str:
    """The argument worth showing in a marker: a command, path, pattern, query or URL, else the first text value."""
    if isinstance(arguments, str):
        return arguments
    if not isinstance(arguments, Mapping):
        return ""
    for key in _TELLING_ARGUMENTS:
        text = _argument_text(arguments.get(key))
        if text:
            return text
    for value in arguments.values():
        text = _argument_text(value)
        if text:
            return text
    return ""


def render_turns(turns: Iterable[Turn]) -> list[str]:
    """Segments: consecutive turns of one speaker merge, and every segment opens with its speaker's prefix."""
    segments: list[str] = []
    previous: Role | None = None
    for turn in turns:
        text = turn.text.strip()
        if not text:
            continue
        if turn.role == previous:
            # Tool markers stack line by line; prose of one speaker continues as a new paragraph.
            glue = "\n" if turn.role == "tool" else SEGMENT_SEPARATOR
            segments[-1] = f"{segments[-1]}{glue}{text}"
            continue
        segments.append(text if turn.role == "tool" else _PREFIXES[turn.role] + text)
        previous = turn.role
    return segments


def transcript_document(raw: RawDocument, *, room: str, name: str) -> CanonicalDocument:
    """A transcript as a canonical document: one segment per turn (`split_segments`), in `room`, named `name`."""
    return CanonicalDocument(
        kind="transcript",
        segments=split_segments(raw.body),
        title=raw.title,
        room=room,
        name=name,
        uri=raw.uri,
        tags=(),
    )


def split_segments(body: str) -> tuple[str, ...]:
    """The segments of a rendered body: a new one starts at each paragraph that opens with a speaker prefix."""
    segments: list[str] = []
    for paragraph in body.split(SEGMENT_SEPARATOR):
        if segments and not paragraph.startswith(tuple(_PREFIXES.values())):
            segments[-1] = f"{segments[-1]}{SEGMENT_SEPARATOR}{paragraph}"
        else:
            segments.append(paragraph)
    return tuple(segments)


def read_jsonl(path: Path, *, hard_links: bool = False) -> JsonLines:
    """Parse a JSONL file: a corrupt line becomes a warning; an unreadable or non-UTF-8 file, a hard link (unless
    `hard_links`), a `SkipDocument`."""
    data = read_local_bytes(path, hard_links=hard_links)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipDocument(f"not valid UTF-8 at byte {exc.start}: {path}") from None
    parsed = JsonLines()
    # Only "\n" ends a line: JSON text may hold a raw U+2028, which str.splitlines would also split at.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            parsed.warnings.append(f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        if isinstance(value, dict):
            parsed.records.append((number, value))
        else:
            parsed.warnings.append(f"line {number}: not a JSON object")
    return parsed


def instant(value: Any) -> str | None:
    """A timestamp (RFC 3339 text or Unix seconds) in the stored form; None when absent or unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return from_epoch(float(value))
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value.strip():
        try:
            return parse_instant(value)
        except InvalidRequest:
            return None
    return None


def since_instant(source: SourceSpec) -> str | None:
    """The `since` option in the stored form (None when not given); a malformed value is a 400."""
    value = source.options.get("since")
    return parse_instant(value, field="options.since") if value else None


def is_active_since(last_activity: str | None, since: str | None) -> bool:
    """Whether a document passes the `since` filter; one whose last activity is unknown always does."""
    return since is None or last_activity is None or last_activity >= since


def is_file_active_since(path: Path, since: str) -> bool:
    """Whether a JSONL session's latest `timestamp` is at or after `since`; an older mtime rules it out unread."""
    try:
        modified = instant(path.stat().st_mtime)
        if modified is not None and modified < since:
            return False
        lines = read_jsonl(path)
    except (OSError, SkipDocument):
        return True  # let `read` report what is wrong with the file
    stamps = [stamp for _, record in lines.records if (stamp := instant(record.get("timestamp"))) is not None]
    return is_active_since(max(stamps, default=modified), since)


def locator_root(source: SourceSpec, default: str) -> Path:
    """The absolute folder a session-log source reads, `default` when the locator is empty."""
    return local_path(source, default)


def session_paths(source: SourceSpec, root: Path, found: Iterable[Path]) -> list[Path]:
    """The session files among `found` that may be read: regular files whose real path stays inside what the mine
    may read (a symlinked project folder or file pointing elsewhere is left out), sorted by relative path."""
    kept = [path for path in found if path.is_file() and source.may_read(path)]
    return sorted(kept, key=lambda path: path.relative_to(root).as_posix())


def session_file(source: SourceSpec, root: Path, external_id: str) -> Path:
    """A session's file, or `SkipDocument` when it has become a link to somewhere the mine may not read."""
    path = root / external_id
    if not source.may_read(path):
        raise SkipDocument("outside mining.roots (a symbolic link points there)")
    return path


def identity_options(declared: Mapping[str, OptionSpec], given: Mapping[str, str]) -> dict[str, str]:
    """The given options that select a slice of the source, and so belong to its identity."""
    return {key: value for key, value in given.items() if key in declared and declared[key].identity}


def room_for(cwd: Any) -> str:
    """A session's room: the last component of its working directory (POSIX or Windows), else `sessions`."""
    if isinstance(cwd, str):
        parts = [part for part in re.split(r"[\\/]", cwd) if part and not part.endswith(":")]
        if parts:
            return parts[-1]
    return DEFAULT_ROOM


_REDACTOR = Redactor()


def title_from(text: str) -> str | None:
    """A title drawn from a first prompt: its first non-empty line, cut to 80 characters. Credentials are redacted
    before the cut, so a cut can never leave part of one behind."""
    text = _REDACTOR.text(text).text
    for line in text.splitlines():
        line = one_line(line)
        if line:
            return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"
    return None


def first_text(turns: Sequence[Turn], role: Role) -> str:
    """The text of the first turn by `role`, or empty."""
    return next((turn.text for turn in turns if turn.role == role and turn.text.strip()), "")


def one_line(text: str) -> str:
    """Every run of whitespace (newlines included) collapsed to one space."""
    return _WHITESPACE.sub(" ", text).strip()


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: logs are read defensively, field by field."""
    return value if isinstance(value, dict) else {}


def as_text(value: Any) -> str | None:
    """`value` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value.strip() else None


def _argument_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        # An argv such as ["bash", "-lc", "ls -la"]: the script is what was run.
        if len(value) >= 3 and value[0] in _SHELLS and value[1] in ("-lc", "-c", "-Command"):
            return str(value[2])
        return " ".join(value)
    return ""


def session_only(source: SourceSpec, root: Path) -> str | None:
    """The `session` option as the session's path relative to `root` (None when not given); a 400 for a file that
    is not a session log inside the folder."""
    value = source.options.get("session")
    if not value:
        return None
    path = Path(value).expanduser()
    path = (path if path.is_absolute() else root / path).resolve()
    if not path.is_relative_to(root) or path.suffix != ".jsonl":
        raise InvalidRequest(f"session {value!r} is not a .jsonl file inside {root}", field="options.session")
    return path.relative_to(root).as_posix()
