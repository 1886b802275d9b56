"""The `pi` connector: sessions of the Pi coding agent (badlogic/pi-mono), one JSONL file each.

Where and how Pi writes them (its `docs/session.md` and `session-manager.ts`): `~/.pi/agent/sessions/--<cwd>--/
<timestamp>_<uuid>.jsonl`, the folder named by the working directory with its leading separator dropped and every
`/`, `\\` and `:` written `-`. The first line is the header `{"type": "session", "version": 3, "id", "timestamp",
"cwd", "parentSession"?}`; then entries, each `{"type", "id", "parentId", "timestamp", …}`: `message` entries hold an
`AppMessage` — `user` (text, or text and image blocks), `assistant` (text, `thinking` and `toolCall` blocks),
`toolResult`, `bashExecution` (a command the user ran with `!`) or `custom` (an extension's) — and `model_change`,
`thinking_level_change`, `compaction`, `branch_summary`, `label` and the like record the session's life.

Kept: the user's and the assistant's text, tool calls as one-line markers, the user's shell commands as markers.
Left out: reasoning, tool results (large, and mostly file contents a directory mine files anyway), extension
messages, and every entry that is not a conversation message. Version 1 and 2 files (no `version`, or 2) have the
same message entries and are read the same way.
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
    instant,
    summarize_arguments,
    tool_marker,
)

DEFAULT_LOCATOR = "~/.pi/agent/sessions"


def session_folder_name(directory: str) -> str:
    """The folder Pi keeps a working directory's sessions in: `--<path>--`, the path's leading separator dropped
    and each `/`, `\\` and `:` written `-` (as Pi's `getDefaultSessionDir` does; not reversible, so a session's
    working directory is read from its header, never from this name)."""
    resolved = str(Path(directory).expanduser().resolve())
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", resolved)) + "--"


class PiConnector(ByWorkingDirectory):
    """Mines Pi sessions: user and assistant text, tool calls and the user's shell commands as one-line markers."""

    name = "pi"
    default_locator = DEFAULT_LOCATOR

    def session_files(self, root: Path, source: SourceSpec) -> Iterable[Path]:
        """`*.jsonl` directly in the sessions folder or one folder down (never deeper, never a symlink): nothing
        else under Pi's directory — its credentials among them — is opened. With `dir`, only that directory's
        folder."""
        only = source.options.get("dir")
        wanted = session_folder_name(only) if only else None
        found: list[Path] = []
        if wanted is None:
            found.extend(p for p in root.glob("*.jsonl") if not p.is_symlink())
        for folder in root.iterdir():
            if folder.is_symlink() or not folder.is_dir() or not source.may_read(folder):
                continue
            if wanted is None or folder.name == wanted:
                found.extend(p for p in folder.glob("*.jsonl") if not p.is_symlink())
        return found

    def read_session(self, path: Path, lines: JsonLines) -> SessionRead:
        session = _Session(fallback_id=path.stem.rsplit("_", 1)[-1])
        for number, entry in lines.records:
            session.take(number, entry, lines.warnings)
        return SessionRead(session.turns, session.metadata(), session.started_at)


class _Session:
    """What reading a session file gathers, entry by entry."""

    def __init__(self, fallback_id: str) -> None:
        self.fallback_id = fallback_id
        self.turns: list[Turn] = []
        self.started_at: str | None = None
        self.header: dict[str, Any] = {}
        self.model: str | None = None

    def take(self, number: int, entry: dict[str, Any], warnings: list[str]) -> None:
        kind = entry.get("type")
        if kind == "session":
            if not self.header:
                self.header = entry
                self.started_at = instant(entry.get("timestamp"))
            return
        if self.started_at is None:
            self.started_at = instant(entry.get("timestamp"))
        if kind == "model_change" and self.model is None:
            self.model = _model_name(entry)
        if kind != "message":
            return  # the session's life (model and thinking changes, compactions, labels): not the conversation
        message = as_dict(entry.get("message"))
        if not message:
            warnings.append(f"line {number}: a message entry without a message object")
            return
        self.turns.extend(self._turns(message))

    def _turns(self, message: dict[str, Any]) -> list[Turn]:
        role = message.get("role")
        if role == "user":
            text = _text(message.get("content"))
            return [Turn("user", text)] if text else []
        if role == "assistant":
            if self.model is None:
                self.model = _model_name(message)
            turns: list[Turn] = []
            texts: list[str] = []
            for block in _blocks(message.get("content")):
                if block.get("type") == "text":
                    texts.append(str(block.get("text") or "").strip())
                elif block.get("type") == "toolCall":
                    name = str(block.get("name") or "tool")
                    turns.append(Turn("tool", tool_marker(name, summarize_arguments(block.get("arguments")))))
                # thinking blocks are the model's reasoning: left out
            text = SEGMENT_SEPARATOR.join(t for t in texts if t)
            return ([Turn("assistant", text)] if text else []) + turns
        if role == "bashExecution":
            command = str(message.get("command") or "").strip()
            return [Turn("tool", tool_marker("bash", command))] if command else []
        return []  # toolResult (the tools' output) and custom (an extension's messages)

    def metadata(self) -> dict[str, Any]:
        """The snapshot: the header's identity and context, stable as the session grows."""
        header = self.header
        snapshot: dict[str, Any] = {
            "session_id": header.get("id") if isinstance(header.get("id"), str) else self.fallback_id,
            "cwd": header.get("cwd") if isinstance(header.get("cwd"), str) else None,
            "version": header.get("version") if isinstance(header.get("version"), int) else 1,
            "first_timestamp": self.started_at,
        }
        if isinstance(header.get("parentSession"), str):
            snapshot["parent_session"] = header["parentSession"]
        if self.model:
            snapshot["model"] = self.model
        return snapshot


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [as_dict(block) for block in content] if isinstance(content, list) else []


def _text(content: Any) -> str:
    """A user message's text: the string, or its text blocks (an image as `[image]`)."""
    if isinstance(content, str):
        return content.strip()
    parts = []
    for block in _blocks(content):
        if block.get("type") == "text":
            parts.append(str(block.get("text") or "").strip())
        elif block.get("type") == "image":
            parts.append("[image]")
    return SEGMENT_SEPARATOR.join(p for p in parts if p)


def _model_name(record: dict[str, Any]) -> str | None:
    model = record.get("modelId") or record.get("model")
    provider = record.get("provider")
    if not isinstance(model, str) or not model:
        return None
    return f"{provider}/{model}" if isinstance(provider, str) and provider and "/" not in model else model
