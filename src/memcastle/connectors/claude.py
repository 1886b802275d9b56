"""The `claude` connector: Claude Code session logs, `~/.claude/projects/<project>/<session>.jsonl`, one per session.

Each line is one entry. `user` and `assistant` entries carry an API `message` whose content is a string or a list
of blocks (`text`, `thinking`, `tool_use`, `tool_result`, `image`); other entry types (`summary`, `custom-title`,
`ai-title`, `file-history-snapshot`, `queue-operation`, `system`, …) are bookkeeping. Sub-agent (`isSidechain`),
meta (`isMeta`), compaction-summary and API-error entries are not part of the conversation the user had.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memcastle.connectors.contract import SourceSpec
from memcastle.connectors.session_logs import ByWorkingDirectory, SessionRead
from memcastle.connectors.transcript import (
    SEGMENT_SEPARATOR,
    JsonLines,
    Turn,
    as_dict,
    as_text,
    instant,
    summarize_arguments,
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


class ClaudeConnector(ByWorkingDirectory):
    """Mines Claude Code sessions: user and assistant text, tool calls as one-line markers."""

    name = "claude"
    default_locator = DEFAULT_LOCATOR

    def session_files(self, root: Path, source: SourceSpec) -> Iterable[Path]:
        """`<project>/<session>.jsonl`; agent-<id>.jsonl holds one sub-agent's side chain, whose result already
        shows in the main session. With `dir`, only the project folder Claude Code keeps that directory's sessions
        in (its absolute path with every character but a letter or digit written `-`)."""
        only = source.options.get("dir")
        wanted = project_folder_name(only) if only else None
        projects = (
            folder
            for folder in root.iterdir()
            if folder.is_dir() and source.may_read(folder) and (wanted is None or folder.name == wanted)
        )
        return (path for folder in projects for path in folder.glob("*.jsonl") if not path.name.startswith("agent-"))

    def read_session(self, path: Path, lines: JsonLines) -> SessionRead:
        session = _Session(project=path.parent.name, fallback_id=path.stem)
        for number, entry in lines.records:
            session.take(number, entry, lines.warnings)
        return SessionRead(session.turns, session.metadata(), session.first_timestamp, session.title())


def project_folder_name(directory: str) -> str:
    """The folder under `~/.claude/projects` that holds the sessions run in `directory`: Claude Code names it by
    the absolute path with each character other than an ASCII letter or digit replaced by `-`."""
    resolved = str(Path(directory).expanduser().resolve())
    return re.sub(r"[^A-Za-z0-9]", "-", resolved)


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
