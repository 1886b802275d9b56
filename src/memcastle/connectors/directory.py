"""The `directory` connector: a folder of project files, one document per file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

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
    read_text_file,
    repository_info,
    walk_files,
)
from memcastle.connectors.project import project_wing

DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024


class DirectoryConnector(ConnectorBase):
    """Project files: skips `.git`, `node_modules`, virtualenvs, build outputs, dot-dirs, symlinks, binaries."""

    name = "directory"
    source_kind = "file"
    default_room = "files"
    options: Mapping[str, OptionSpec] = {}

    def __init__(self, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        self.max_file_bytes = max_file_bytes

    def identify(self, source: SourceSpec) -> str:
        return identify_source(self.name, str(source.path.resolve()), dict(source.options))

    def default_wing(self, source: SourceSpec) -> str:
        return project_wing(source.path)

    notices_removal = True

    def lists_everything(self, source: SourceSpec) -> bool:
        """Discovery lists every file under the folder."""
        return True

    def discover(self, source: SourceSpec, cursor: str | None) -> Iterable[Candidate]:
        root = source.path.resolve()
        if not root.is_dir():
            raise SkipDocument(f"not a folder: {root}")
        repo = repository_info(root, source.may_read)
        hint = {"root": str(root), "git": repo.to_json() if repo else None}
        return [Candidate(external_id=relative, hint=hint) for relative in walk_files(root, may_read=source.may_read)]

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        hint = candidate.hint or {}
        root = Path(hint.get("root") or source.path.resolve())
        text, stat = read_text_file(root / candidate.external_id, self.max_file_bytes)
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
