"""The `notes` connector: a folder of Markdown notes, one document per note, front matter as metadata."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memcastle.clock import parse_instant
from memcastle.connectors.contract import (
    Candidate,
    CanonicalDocument,
    ConnectorBase,
    OptionSpec,
    RawDocument,
    SkipDocument,
    SourceSpec,
    identify_source,
)
from memcastle.connectors.files import file_metadata, folder_token, read_text_file, walk_files
from memcastle.connectors.project import project_wing
from memcastle.errors import InvalidRequest

SUFFIXES = (".md", ".markdown", ".mdx")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


class NotesConnector(ConnectorBase):
    """Markdown notes; YAML front matter (nested keys kept) becomes the metadata snapshot."""

    name = "notes"
    source_kind = "note"
    reads_files = True
    default_room = "notes"
    options: Mapping[str, OptionSpec] = {}

    def __init__(self, max_file_bytes: int = 2 * 1024 * 1024) -> None:
        self.max_file_bytes = max_file_bytes

    def identify(self, source: SourceSpec) -> str:
        return identify_source(self.name, str(source.path.resolve()), dict(source.options))

    def default_wing(self, source: SourceSpec) -> str:
        return project_wing(source.path)

    notices_removal = True

    def lists_everything(self, source: SourceSpec) -> bool:
        """Discovery lists every file under the folder."""
        return True

    def change_token(self, source: SourceSpec) -> str | None:
        """How many files, and the newest modification among them: what a poll compares (`triggers.poll`)."""
        return folder_token(source.path.resolve(), source.may_read)

    def discover(self, source: SourceSpec, cursor: str | None) -> Iterable[Candidate]:
        root = source.path.resolve()
        if not root.is_dir():
            raise SkipDocument(f"not a folder: {root}")
        hint = {"root": str(root)}
        return [Candidate(external_id=relative, hint=hint) for relative in walk_files(root, SUFFIXES, source.may_read)]

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        hint = candidate.hint or {}
        root = Path(hint.get("root") or source.path.resolve())
        text, stat = read_text_file(root / candidate.external_id, self.max_file_bytes, hard_links=source.hard_links)
        front, body, warning = split_front_matter(text)
        if not body.strip():
            raise SkipDocument("no text after the front matter")
        files = file_metadata(root, candidate.external_id, stat)
        title = _title(front, body, candidate.external_id)
        metadata: dict[str, Any] = {**front, "path": files["path"], "title": title}
        occurred = _occurred_at(front) or files["mtime"]
        return RawDocument(
            external_id=candidate.external_id,
            body=body,
            metadata=metadata,
            occurred_at=occurred,
            title=title,
            uri=(root / candidate.external_id).as_uri(),
            warnings=(warning,) if warning else (),
            first_line=1 + text.count("\n", 0, len(text) - len(body)),
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        tags = raw.metadata.get("tags")
        if isinstance(tags, str):
            tags = [t.strip() for t in tags.split(",")]
        clean_tags = tuple(str(t).strip() for t in tags if str(t).strip()) if isinstance(tags, list) else ()
        return CanonicalDocument(
            kind="note",
            segments=(raw.body,),
            title=raw.title,
            room=None,
            name=raw.external_id,
            uri=raw.uri,
            tags=clean_tags,
        )


def split_front_matter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(front matter as JSON-safe data, the body, a warning when the front matter could not be parsed)."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text, None
    import yaml  # on the first note with front matter: PyYAML is not on the daemon's start-up path

    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        return {}, text, f"front matter is not valid YAML{where}; kept the note, without its metadata"
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return {}, text, "front matter is not a mapping; kept the note, without its metadata"
    return _json_safe(data), text[match.end() :], None


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _title(front: Mapping[str, Any], body: str, relative: str) -> str:
    if isinstance(front.get("title"), str) and front["title"].strip():
        return str(front["title"]).strip()
    heading = _HEADING.search(body)
    return heading.group(1) if heading else Path(relative).stem


def _occurred_at(front: Mapping[str, Any]) -> str | None:
    for key in ("date", "created", "updated"):
        value = front.get(key)
        if isinstance(value, str):
            try:
                return parse_instant(value)
            except InvalidRequest:
                continue
    return None
