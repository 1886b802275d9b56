"""The connector contract (SPEC §2): what a source adapter provides to the shared mining pipeline.

A connector turns one kind of source into documents. It never writes to the palace: the pipeline in
`memcastle.mining.pipeline` checks revisions, chunks, supersedes and advances the cursor. Third-party packages
register a connector class (or a zero-argument factory) under the entry-point group ``memcastle.connectors``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from memcastle.errors import InvalidRequest

OptionType = Literal["string", "path", "date"]


@dataclass(frozen=True)
class OptionSpec:
    """One declared option. `identity` options select a slice of the source and so belong to its identity."""

    type: OptionType
    description: str
    identity: bool = True


class PathAccess(Protocol):
    """Which local paths a mine may read (`memcastle.mining.roots.MiningRoots`: inside `mining.roots`, outside the
    stores of credentials)."""

    def allows(self, path: Path) -> bool:
        """Whether `path` (absolute, resolved) may be read."""
        ...


@dataclass(frozen=True)
class SourceSpec:
    """A locator plus validated options: what one mine reads. `access` is the boundary of what it may read on this
    machine (None: no boundary, for a connector used on its own); a connector that follows a link it finds (a
    `.git` file, a parent folder's repository) follows it only where `may_read` says so."""

    locator: str
    options: Mapping[str, str] = field(default_factory=dict)
    access: PathAccess | None = field(default=None, compare=False)

    @property
    def path(self) -> Path:
        """The locator as an absolute, resolved local path; a 400 naming `locator` when it is empty or relative."""
        return local_path(self)

    def may_read(self, path: Path) -> bool:
        return self.access is None or self.access.allows(path.resolve())


@dataclass(frozen=True)
class Candidate:
    """A document discovery found; `cursor_after` is the source cursor once it is filed (None: no cursor)."""

    external_id: str
    cursor_after: str | None = None
    hint: Any = None


@dataclass(frozen=True)
class RawDocument:
    """A document as read. `revision` None means: SHA-256 of body + canonical metadata (see `revision_of`)."""

    external_id: str
    body: str
    metadata: Mapping[str, Any]
    revision: str | None = None
    occurred_at: str | None = None
    title: str | None = None
    uri: str | None = None
    warnings: tuple[str, ...] = ()
    # The source line the body starts on, when the body is a text file's lines (a file, a note after its front
    # matter, a commit message): mined chunks then record their line range. None for rendered documents.
    first_line: int | None = None


@dataclass(frozen=True)
class CanonicalDocument:
    """A document ready for chunking. `segments` join with blank lines into the document text."""

    kind: str
    segments: tuple[str, ...]
    title: str | None = None
    room: str | None = None
    name: str | None = None
    uri: str | None = None
    tags: tuple[str, ...] = ()


class SkipDocument(Exception):
    """Raised by `read` for a document that cannot be mined; the reason lands in the job result."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@runtime_checkable
class Connector(Protocol):
    """A source adapter. `name` is the adapter name that source preferences refer to.

    A connector may also define `check(source) -> None`, called when a mine is requested: raise `InvalidRequest`
    (naming `locator` or the option) to refuse a source it could never read, so the request is answered with a 400
    instead of a job that completes with one skip.

    It may define `local_paths(source) -> Sequence[Path]`: every local file or folder the source reads (resolved),
    checked against `mining.roots` before a mine is queued and again when it runs; `()` for a source that is not on
    this machine. A connector without it reads the locator as one local path (`SourceSpec.path`).

    And it may define `lists_everything(source) -> bool`: whether `discover` lists every document the source holds
    now (so a document it no longer lists was removed at source), with `notices_removal: bool`, whether a mine
    notices removals unless asked otherwise. A connector without them never closes a document it does not list."""

    name: str
    options: Mapping[str, OptionSpec]
    source_kind: str

    def identify(self, source: SourceSpec) -> str:
        """A stable id for this source: locator plus the identity options."""
        ...

    def default_wing(self, source: SourceSpec) -> str:
        """The wing drawers go to when the request names none."""
        ...

    def discover(self, source: SourceSpec, cursor: str | None) -> Iterable[Candidate]:
        """The documents to consider, in a deterministic order, starting after `cursor` when given."""
        ...

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        """Read one document; raise `SkipDocument` when it cannot be mined."""
        ...

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        """Pure: turn a raw document into segments, title, room, name, kind, uri and tags."""
        ...


def local_path(source: SourceSpec, default: str | None = None) -> Path:
    """The absolute, resolved path a locator names (`~` expanded; `default` when it is empty). An empty locator
    without a default, or a relative one, is refused: the daemon's working folder is nobody's source."""
    text = source.locator.strip() or (default or "")
    if not text:
        raise InvalidRequest("locator is empty: name the folder or file to mine", field="locator")
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # `~name` for a user this machine does not have
        raise InvalidRequest(f"{text!r} names the home folder of an unknown user", field="locator") from None
    if not path.is_absolute():
        raise InvalidRequest(
            f"locator {text!r} is not an absolute path",
            field="locator",
            help="send an absolute path (the CLI makes a relative one absolute where it was typed)",
        )
    return path.resolve()


def canonical_json(value: Any) -> str:
    """Deterministic JSON text used for identities and revisions."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def revision_of(raw: RawDocument) -> str:
    """The document's revision: the connector's own, else SHA-256 of body + canonical metadata."""
    if raw.revision:
        return raw.revision
    digest = hashlib.sha256()
    digest.update(raw.body.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(canonical_json(raw.metadata).encode("utf-8"))
    return digest.hexdigest()


def identify_source(connector_name: str, locator: str, identity_options: Mapping[str, str]) -> str:
    """The usual `identify`: connector + absolute locator + identity options, hashed to a short id."""
    text = canonical_json({"connector": connector_name, "locator": locator, "options": dict(identity_options)})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
