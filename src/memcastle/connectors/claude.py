"""The `claude` connector: Claude Code session logs, `~/.claude/projects/<project>/<session>.jsonl`, one per session.

Each line is one entry. `user` and `assistant` entries carry an API `message` whose content is a string or a list
of blocks (`text`, `thinking`, `tool_use`, `tool_result`, `image`); other entry types (`summary`, `custom-title`,
`ai-title`, `file-history-snapshot`, `queue-operation`, `system`, …) are bookkeeping. Sub-agent (`isSidechain`),
meta (`isMeta`), compaction-summary and API-error entries are not part of the conversation the user had.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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
    Turn,
    as_dict,
    as_text,
    first_text,
    identity_options,
    instant,
    is_file_active_since,
    locator_root,
    read_jsonl,
    render_turns,
    room_for,
    session_file,
    session_only,
    session_paths,
    since_instant,
    split_segments,
    summarize_arguments,
    title_from,
    tool_marker,
)

DEFAULT_LOCATOR = "~/.claude/projects"

_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.DOTALL)
# Text the CLI itself writes into user entries: command output, hook reminders, interruption notices.
_HARNESS_TEXT = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
    "[Request interrupted by user",
)
_SKIPPED_ENTRY_FLAGS = ("isSidechain", "isMeta", "isCompactSummary", "isApiErrorMessage")


class ClaudeConnector(ConnectorBase):
    """Mines Claude Code sessions: user and assistant text, tool calls as one-line markers."""

    name = "claude"
    source_kind = "transcript"
    options: Mapping[str, OptionSpec] = {"since": SINCE_OPTION, "session": SESSION_OPTION}

    def identify(self, source: SourceSpec) -> str:
        """The absolute projects folder."""
        root = locator_root(source, DEFAULT_LOCATOR)
        return identify_source(self.name, str(root), identity_options(self.options, source.options))

    def default_wing(self, source: SourceSpec) -> str:
        """Transcripts go to the connector's wing."""
        return self.name

    notices_removal = False

    def lists_everything(self, source: SourceSpec) -> bool:
        """Discovery lists every session, unless `since` or `session` narrows the listing."""
        return since_instant(source) is None and not source.options.get("session")

    def local_paths(self, source: SourceSpec) -> tuple[Path, ...]:
        """The sessions folder (the default one when the locator is empty)."""
        return (locator_root(source, DEFAULT_LOCATOR),)

    def check(self, source: SourceSpec) -> None:
        """A `session` outside the folder is refused when the mine is asked for (a 400 naming the option)."""
        session_only(source, locator_root(source, DEFAULT_LOCATOR))

    def discover(self, source: SourceSpec, cursor: str | None) -> list[Candidate]:
        """Every session file `<project>/<session>.jsonl`, by relative path; sub-agent files are left out."""
        root = locator_root(source, DEFAULT_LOCATOR)
        if not root.is_dir():
            raise SkipDocument(f"not a folder: {root}")
        only = session_only(source, root)
        if only is not None:
            return [Candidate(external_id=only)] if (root / only).is_file() else []
        since = since_instant(source)
        candidates = []
        projects = (folder for folder in root.iterdir() if folder.is_dir() and source.may_read(folder))
        for path in session_paths(source, root, (path for folder in projects for path in folder.glob("*.jsonl"))):
            # agent-<id>.jsonl holds one sub-agent's side chain; its result already shows in the main session.
            if not path.is_file() or path.name.startswith("agent-"):
                continue
            if since is not None and not is_file_active_since(path, since):
                continue
            candidates.append(Candidate(external_id=path.relative_to(root).as_posix()))
        return candidates

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        """One session rendered as turns, with its metadata snapshot."""
        path = session_file(source, locator_root(source, DEFAULT_LOCATOR), candidate.external_id)
        lines = read_jsonl(path)
        session = _Session(project=path.parent.name, fallback_id=path.stem)
        for number, entry in lines.records:
            session.take(number, entry, lines.warnings)
        segments = render_turns(session.turns)
        if not segments:
            raise SkipDocument("no user or assistant messages")
        body = SEGMENT_SEPARATOR.join(segments)
        title = session.title() or title_from(first_text(session.turns, "user"))
        return RawDocument(
            external_id=candidate.external_id,
            body=body,
            metadata=session.metadata(),
            occurred_at=session.first_timestamp,
            title=title,
            uri=str(path),
            warnings=tuple(lines.warnings),
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        """One segment per turn; the room is the session's working folder."""
        session_id = as_text(raw.metadata.get("session_id")) or raw.external_id
        return CanonicalDocument(
            kind="transcript",
            segments=split_segments(raw.body),
            title=raw.title,
            room=room_for(raw.metadata.get("cwd")),
            name=raw.title or session_id,
            uri=raw.uri,
            tags=(),
        )


class _Session:
    """What reading a session file gathers, entry by entry."""

    def __init__(self, project: str, fallback_id: str) -> None:
        self.project = project
        self.fallback_id = fallback_id
        self.turns: list[Turn] = []
        self.first_timestamp: str | None = None
        # Values that appear on every entry: the first one seen is kept, so appending never changes them.
        self.context: dict[str, str] = {}
        self.summary: str | None = None
        self.custom_title: str | None = None
        self.ai_title: str | None = None

    def take(self, number: int, entry: dict[str, Any], warnings: list[str]) -> None:
        """Fold one entry in: a turn, a title, or session context."""
        kind = entry.get("type")
        if kind == "summary":
            self.summary = as_text(entry.get("summary")) or self.summary
        elif kind == "custom-title":
            self.custom_title = as_text(entry.get("customTitle")) or self.custom_title
        elif kind == "ai-title":
            self.ai_title = as_text(entry.get("aiTitle")) or self.ai_title
        if kind not in ("user", "assistant"):
            return
        self._note_context(entry)
        if any(entry.get(flag) is True for flag in _SKIPPED_ENTRY_FLAGS):
            return
        message = entry.get("message")
        if not isinstance(message, dict):
            warnings.append(f"line {number}: {kind} entry without a message")
            return
        if kind == "assistant":
            self._keep_first("model", message.get("model"))
            self.turns.extend(_assistant_turns(message.get("content")))
        else:
            self.turns.extend(_user_turns(message.get("content")))

    def title(self) -> str | None:
        """The title the user gave, else the one Claude Code generated, else the summary."""
        return self.custom_title or self.ai_title or self.summary

    def metadata(self) -> dict[str, Any]:
        """The snapshot: session identity and context, all stable when the session grows."""
        snapshot: dict[str, Any] = {
            "session_id": self.context.get("sessionId", self.fallback_id),
            "project": self.project,
            "cwd": self.context.get("cwd"),
            "git_branch": self.context.get("gitBranch"),
            "version": self.context.get("version"),
            "model": self.context.get("model"),
            "first_timestamp": self.first_timestamp,
        }
        optional = {
            "slug": self.context.get("slug"),
            "title": self.custom_title or self.ai_title,
            "summary": self.summary,
        }
        snapshot.update({key: value for key, value in optional.items() if value is not None})
        return snapshot

    def _note_context(self, entry: dict[str, Any]) -> None:
        for key in ("sessionId", "cwd", "gitBranch", "version", "slug"):
            self._keep_first(key, entry.get(key))
        if self.first_timestamp is None:
            self.first_timestamp = instant(entry.get("timestamp"))

    def _keep_first(self, key: str, value: Any) -> None:
        # "<synthetic>" marks messages the CLI made up itself, not a model.
        if key not in self.context and isinstance(value, str) and value and value != "<synthetic>":
            self.context[key] = value


def _user_turns(content: Any) -> list[Turn]:
    """What the user said: typed text, slash commands and shell-mode input; tool results are dropped."""
    if isinstance(content, str):
        text = _user_text(content)
        return [Turn("user", text)] if text else []
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        block = as_dict(block)
        kind = block.get("type")
        if kind == "text":
            parts.append(_user_text(str(block.get("text") or "")))
        elif kind in ("image", "document"):
            parts.append(f"[{kind}]")
    text = SEGMENT_SEPARATOR.join(part for part in parts if part)
    return [Turn("user", text)] if text else []


def _user_text(text: str) -> str:
    """A user text as typed; what the CLI wrote on the user's behalf becomes empty."""
    stripped = text.strip()
    if stripped.startswith(_HARNESS_TEXT):
        return ""
    # Only a text that opens with the CLI's tags is a command echo; a prompt may quote such tags.
    command = _COMMAND_NAME.search(stripped) if stripped.startswith("<command-") else None
    if command:
        arguments = _COMMAND_ARGS.search(stripped)
        return f"{command.group(1).strip()} {arguments.group(1).strip() if arguments else ''}".strip()
    shell = _BASH_INPUT.match(stripped)
    if shell:
        return f"!{shell.group(1).strip()}"
    return stripped


def _assistant_turns(content: Any) -> list[Turn]:
    """The assistant's text and tool calls, in order; thinking is dropped."""
    if isinstance(content, str):
        return [Turn("assistant", content)]
    turns: list[Turn] = []
    for block in content if isinstance(content, list) else []:
        block = as_dict(block)
        kind = block.get("type")
        if kind == "text":
            turns.append(Turn("assistant", str(block.get("text") or "")))
        elif kind in ("tool_use", "server_tool_use"):
            name = str(block.get("name") or "tool")
            turns.append(Turn("tool", tool_marker(name, summarize_arguments(block.get("input")))))
    return turns
