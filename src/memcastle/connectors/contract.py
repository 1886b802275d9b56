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
from typing import Any, Literal, Protocol, cast, runtime_checkable

from memcastle.errors import AccessDenied, InvalidRequest

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

    # Whether a file with more than one name may be read: its other names may lie outside the boundary, and no path
    # says where (`mining.hard_links`, ADR 0050).
    hard_links: bool

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

    @property
    def hard_links(self) -> bool:
        """Whether a file with more than one name (a hard link) may be read (no boundary: yes)."""
        return self.access is None or self.access.hard_links


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
class ConnectorCore(Protocol):
    """What every connector defines. `name` is the adapter name that source preferences refer to."""

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


class Connector(ConnectorCore, Protocol):
    """A connector with its optional capabilities declared (`ConnectorBase` gives each its default, so callers use
    them directly instead of probing for them)."""

    @property
    def default_room(self) -> str | None:
        """The room drawers go to (none: the connector's name)."""
        ...

    @property
    def notices_removal(self) -> bool:
        """Whether a mine closes the drawers of documents gone at source, unless asked otherwise."""
        ...

    def check(self, source: SourceSpec) -> None:
        """Refuse, when a mine is requested, a source this connector could never read (`InvalidRequest` naming
        `locator` or the option), so the request is a 400 rather than a job that completes with one skip."""
        ...

    def local_paths(self, source: SourceSpec) -> Iterable[Path]:
        """Every local file or folder the source reads (resolved), checked against `mining.roots` before a mine is
        queued and again when it runs; none for a source that is not on this machine."""
        ...

    def lists_everything(self, source: SourceSpec) -> bool:
        """Whether `discover` lists every document the source holds now, so a document no longer listed was removed
        at source (only then may a mine notice removals)."""
        ...

    @property
    def reads_files(self) -> bool:
        """Whether it reads a local folder's files as its documents (a folder is mined by one such connector)."""
        ...

    def change_token(self, source: SourceSpec) -> str | None:
        """A cheap fingerprint of the source (a folder's newest time and file count, a repository's HEAD) that a
        poll compares with the last; None when there is no cheap check (a poll then asks for a run each time)."""
        ...


class ConnectorBase:
    """The defaults of a connector's optional capabilities: the built-in connectors derive from it and override what
    they have; an installed one that does not is given them by `with_defaults`."""

    default_room: str | None = None
    notices_removal: bool = False
    # Reads a local folder's files as its documents: two such connectors on one folder would file every file twice,
    # so a folder mined by one is refused to the others (`MiningService.submit_mine`).
    reads_files: bool = False

    def check(self, source: SourceSpec) -> None:
        return None

    def local_paths(self, source: SourceSpec) -> Iterable[Path]:
        return (source.path,)  # the locator, as one local path

    def lists_everything(self, source: SourceSpec) -> bool:
        return False  # never close a document it does not list

    def change_token(self, source: SourceSpec) -> str | None:
        return None  # no cheap check: a poll asks for a run, and the mine's revision check skips what did not change


CAPABILITIES = (
    "default_room",
    "notices_removal",
    "reads_files",
    "check",
    "local_paths",
    "lists_everything",
    "change_token",
)


class _WithDefaults(ConnectorBase):
    """An installed connector that does not derive from `ConnectorBase`: its own members, and the defaults of the
    capabilities it does not define."""

    def __init__(self, core: ConnectorCore) -> None:
        self._core = core
        for capability in CAPABILITIES:  # the one place a capability is looked for rather than declared
            if hasattr(core, capability):
                setattr(self, capability, getattr(core, capability))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._core, name)


def with_defaults(core: ConnectorCore) -> Connector:
    """`core` with every optional capability: itself when it derives from `ConnectorBase`."""
    return cast(Connector, core if isinstance(core, ConnectorBase) else _WithDefaults(core))


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
    try:
        return path.resolve()
    except PermissionError as exc:
        raise refused_by_os(text, exc) from None


def refused_by_os(locator: str | Path, error: OSError) -> AccessDenied:
    """The refusal of a locator the operating system will not let the daemon read: a 403 naming it, as one outside
    `mining.roots` is."""
    return AccessDenied(
        f"{locator} cannot be mined: the operating system refuses the daemon access ({error.strerror or error})",
        help="mine a folder the daemon's user may read, inside mining.roots",
    )


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
