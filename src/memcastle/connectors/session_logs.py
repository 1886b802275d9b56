"""The base of the connectors that mine an agent's session logs (Claude Code, Codex, and the next agents'): a folder
of JSONL files, one per session, each rendered as turns.

What differs between agents is where a session's files are below the folder and how a file's lines become turns,
metadata and a title: a connector names its `default_locator` and defines `session_files` and `read_session`; the
base does the rest the same way for every agent — identity, the `since` and `session` options, refusing a session
outside the folder, skipping a session with nothing said, and one segment per turn with the room the session's
working folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

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
from memcastle.connectors.transcript import (
    SEGMENT_SEPARATOR,
    SESSION_OPTION,
    SINCE_OPTION,
    JsonLines,
    Turn,
    as_text,
    first_text,
    identity_options,
    is_file_active_since,
    locator_root,
    read_jsonl,
    render_turns,
    room_for,
    session_file,
    session_only,
    session_paths,
    since_instant,
    title_from,
    transcript_document,
)


@dataclass(frozen=True)
class SessionRead:
    """What one session file says: its turns, its metadata snapshot (stable as the session grows; `session_id` and
    `cwd` are read by the base), when it started, and the title the agent or the user gave it, if any."""

    turns: Sequence[Turn]
    metadata: dict[str, Any]
    started_at: str | None
    title: str | None = None


class SessionLogConnector(ConnectorBase):
    """Mines an agent's sessions: user and assistant text, tool calls as one-line markers."""

    name: str
    default_locator: ClassVar[str]  # the agent's own folder, used when the locator is empty
    source_kind = "transcript"
    options: Mapping[str, OptionSpec] = {"since": SINCE_OPTION, "session": SESSION_OPTION}
    notices_removal = False

    def session_files(self, root: Path, source: SourceSpec) -> Iterable[Path]:
        """Every session file below `root` the agent writes (others, such as side chains, left out)."""
        raise NotImplementedError

    def read_session(self, path: Path, lines: JsonLines) -> SessionRead:
        """One session file's lines as turns and metadata; a line that cannot be read adds to `lines.warnings`."""
        raise NotImplementedError

    def identify(self, source: SourceSpec) -> str:
        """The absolute sessions folder (and the options that name the source)."""
        root = locator_root(source, self.default_locator)
        return identify_source(self.name, str(root), identity_options(self.options, source.options))

    def default_wing(self, source: SourceSpec) -> str:
        """Transcripts go to the connector's wing."""
        return self.name

    def lists_everything(self, source: SourceSpec) -> bool:
        """Discovery lists every session, unless `since` or `session` narrows the listing."""
        return since_instant(source) is None and not source.options.get("session")

    def local_paths(self, source: SourceSpec) -> tuple[Path, ...]:
        """The sessions folder (the default one when the locator is empty)."""
        return (locator_root(source, self.default_locator),)

    def check(self, source: SourceSpec) -> None:
        """A `session` outside the folder is refused when the mine is asked for (a 400 naming the option)."""
        session_only(source, locator_root(source, self.default_locator))

    def change_token(self, source: SourceSpec) -> str | None:
        """How many session files, and the newest write among them: what a poll compares (`triggers.poll`)."""
        root = locator_root(source, self.default_locator)
        if not root.is_dir():
            return None
        stamps = [p.stat().st_mtime_ns for p in self.session_files(root, source) if p.is_file()]
        return f"{len(stamps)}:{max(stamps, default=0)}"

    def discover(self, source: SourceSpec, cursor: str | None) -> list[Candidate]:
        """Every session file, by its path relative to the folder; only the `session` one when given, only those
        active since `since`."""
        root = locator_root(source, self.default_locator)
        if not root.is_dir():
            raise SkipDocument(f"not a folder: {root}")
        only = session_only(source, root)
        if only is not None:
            return [Candidate(external_id=only)] if (root / only).is_file() else []
        since = since_instant(source)
        candidates = []
        for path in session_paths(source, root, self.session_files(root, source)):
            if not path.is_file():
                continue
            if since is not None and not is_file_active_since(path, since):
                continue
            candidates.append(Candidate(external_id=path.relative_to(root).as_posix()))
        return candidates

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        """One session rendered as turns, with its metadata snapshot."""
        path = session_file(source, locator_root(source, self.default_locator), candidate.external_id)
        lines = read_jsonl(path, hard_links=source.hard_links)
        session = self.read_session(path, lines)
        segments = render_turns(session.turns)
        if not segments:
            raise SkipDocument("no user or assistant messages")
        return RawDocument(
            external_id=candidate.external_id,
            body=SEGMENT_SEPARATOR.join(segments),
            metadata=session.metadata,
            occurred_at=session.started_at,
            title=session.title or title_from(first_text(session.turns, "user")),
            uri=str(path),
            warnings=tuple(lines.warnings),
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        """One segment per turn; the room is the session's working folder."""
        session_id = as_text(raw.metadata.get("session_id")) or raw.external_id
        return transcript_document(raw, room=room_for(raw.metadata.get("cwd")), name=raw.title or session_id)


class ByWorkingDirectory(SessionLogConnector):
    """Session logs that record each session's working directory (Claude Code's, Pi's): a `dir` option narrows the
    listing to that directory's sessions (`session_files` applies it)."""

    options: Mapping[str, OptionSpec] = {
        **SessionLogConnector.options,
        "dir": OptionSpec("string", "only the sessions whose working directory is this folder"),
    }

    def lists_everything(self, source: SourceSpec) -> bool:
        """Every session, unless `since`, `session` or `dir` narrows the listing."""
        return super().lists_everything(source) and not source.options.get("dir")
