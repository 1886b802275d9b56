"""The `directory` connector: a folder of project files, one document per file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from memcastle.clock import parse_instant, to_datetime
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
from memcastle.connectors.files import (
    file_metadata,
    folder_token,
    read_text_file,
    repository_info,
    walk_files,
)
from memcastle.connectors.project import project_wing
from memcastle.connectors.transcript import identity_options

DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024


class DirectoryConnector(ConnectorBase):
    """Project files: skips `.git`, `node_modules`, virtualenvs, build outputs, dot-dirs, symlinks, binaries."""

    name = "directory"
    source_kind = "file"
    reads_files = True
    default_room = "files"
    options: Mapping[str, OptionSpec] = {
        "since": OptionSpec("date", "only files modified at or after this instant", identity=False),
    }

    def __init__(self, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        self.max_file_bytes = max_file_bytes

    def identify(self, source: SourceSpec) -> str:
        # `since` narrows one pass over the same folder: not part of what the source is.
        return identify_source(self.name, str(source.path.resolve()), identity_options(self.options, source.options))

    def default_wing(self, source: SourceSpec) -> str:
        return project_wing(source.path)

    notices_removal = True

    def lists_everything(self, source: SourceSpec) -> bool:
        """Discovery lists every file under the folder, unless `since` leaves the older ones out."""
        return not source.options.get("since")

    def change_token(self, source: SourceSpec) -> str | None:
        """How many files, and the newest modification among them: what a poll compares (`triggers.poll`)."""
        return folder_token(source.path.resolve(), source.may_read)

    def check(self, source: SourceSpec) -> None:
        """A malformed `since` is refused when the mine is asked for (a 400 naming the option)."""
        if source.options.get("since"):
            parse_instant(source.options["since"], field="options.since")

    def discover(self, source: SourceSpec, cursor: str | None) -> Iterable[Candidate]:
        root = source.path.resolve()
        if not root.is_dir():
            raise SkipDocument(f"not a folder: {root}")
        repo = repository_info(root, source.may_read)
        hint = {"root": str(root), "git": repo.to_json() if repo else None}
        since = source.options.get("since")
        floor = to_datetime(parse_instant(since, field="options.since")).timestamp() if since else None
        return [
            Candidate(external_id=relative, hint=hint)
            for relative in walk_files(root, may_read=source.may_read)
            if floor is None or _modified(root / relative) >= floor
        ]

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        hint = candidate.hint or {}
        root = Path(hint.get("root") or source.path.resolve())
        text, stat = read_text_file(root / candidate.external_id, self.max_file_bytes, hard_links=source.hard_links)
        metadata = file_metadata(root, candidate.external_id, stat)
        if hint.get("git"):
            metadata["git"] = hint["git"]
        return RawDocument(
            external_id=candidate.external_id,
            body=text,
            metadata=metadata,
            occurred_at=metadata["mtime"],
            title=candidate.external_id,
            uri=(root / candidate.external_id).as_uri(),
            first_line=1,
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        return CanonicalDocument(kind="file", segments=(raw.body,), title=raw.title, name=raw.external_id, uri=raw.uri)


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return float("inf")  # listed, and the read says why it cannot be
