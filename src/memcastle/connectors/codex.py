"""The `codex` connector: Codex CLI rollouts, `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, one per session.

Since September 2025 every line is an envelope `{timestamp, type, payload}` with `type` one of `session_meta`,
`turn_context`, `response_item`, `event_msg` or `compacted`. Earlier rollouts have no envelope: the first line is the
bare session meta `{id, timestamp, instructions, git}`, then bare response items and `{"record_type": "state"}`
markers, and the working folder is known only from the `<environment_context>` of the first user message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memcastle.connectors.contract import SourceSpec
from memcastle.connectors.session_logs import SessionLogConnector, SessionRead
from memcastle.connectors.transcript import (
    SEGMENT_SEPARATOR,
    JsonLines,
    Turn,
    as_dict,
    instant,
    summarize_arguments,
    tool_marker,
)

DEFAULT_LOCATOR = "~/.codex/sessions"

# Context Codex itself sends as user input on every session: environment, AGENTS.md and user instructions.
_INJECTED_INPUT = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions for ")
_ENVIRONMENT_CWD = re.compile(r"<cwd>(.*?)</cwd>", re.DOTALL)
_PATCHED_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)


class CodexConnector(SessionLogConnector):
    """Mines Codex CLI sessions: user and assistant text, tool calls as one-line markers."""

    name = "codex"
    default_locator = DEFAULT_LOCATOR

    def session_files(self, root: Path, source: SourceSpec) -> Iterable[Path]:
        """Every `rollout-*.jsonl` below the folder (their relative paths sort by date)."""
        return root.rglob("rollout-*.jsonl")

    def read_session(self, path: Path, lines: JsonLines) -> SessionRead:
        session = _Session()
        for index, (number, record) in enumerate(lines.records):
            session.take(index, record, number, lines.warnings)
        return SessionRead(session.turns, session.metadata(), session.started_at)


class _Session:
    """What reading a rollout gathers, line by line."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.started_at: str | None = None
        # The first value seen wins: a resumed or forked rollout repeats session meta further down.
        self.context: dict[str, Any] = {}

    def take(self, index: int, record: dict[str, Any], number: int, warnings: list[str]) -> None:
        """Fold one line in, whichever format generation wrote it."""
        if "payload" in record and isinstance(record.get("type"), str):
            kind, payload = record["type"], record["payload"]
            if not isinstance(payload, dict):
                warnings.append(f"line {number}: {kind} line without a payload object")
                return
            self._note_start(record.get("timestamp"))
        elif "record_type" in record:
            return  # the older format's state marker
        elif index == 0 and "id" in record and "type" not in record:
            kind, payload = "session_meta", record
        elif isinstance(record.get("type"), str):
            kind, payload = "response_item", record
        else:
            return
        if kind == "session_meta":
            self._take_meta(payload)
        elif kind == "turn_context":
            self._keep_first("model", payload.get("model"))
            self._keep_first("cwd", payload.get("cwd"))
        elif kind == "response_item":
            self.turns.extend(self._item_turns(payload))
        # event_msg lines repeat the messages (user_message, agent_message) or report progress, reasoning and
        # token counts; compacted lines summarize what the rollout already holds.

    def metadata(self) -> dict[str, Any]:
        """The snapshot: session identity and context, all stable when the session grows."""
        snapshot: dict[str, Any] = {
            key: self.context.get(key) for key in ("session_id", "cwd", "cli_version", "model", "originator")
        }
        snapshot["first_timestamp"] = self.started_at
        for key in ("model_provider", "git_branch", "git_commit"):
            if key in self.context:
                snapshot[key] = self.context[key]
        return snapshot

    def _take_meta(self, payload: dict[str, Any]) -> None:
        if "session_id" in self.context:
            return
        self._keep_first("session_id", payload.get("id"))
        for key in ("cwd", "cli_version", "originator", "model_provider"):
            self._keep_first(key, payload.get(key))
        git = as_dict(payload.get("git"))
        self._keep_first("git_branch", git.get("branch"))
        # The repository URL is left out: a remote URL may carry a token.
        self._keep_first("git_commit", git.get("commit_hash"))
        self._note_start(payload.get("timestamp"))

    def _item_turns(self, item: dict[str, Any]) -> list[Turn]:
        """A response item as turns: messages keep their text, calls become markers, the rest is dropped."""
        kind = item.get("type")
        if kind == "message":
            return self._message_turns(item)
        if kind == "function_call":
            return [
                Turn(
                    "tool",
                    tool_marker(
                        str(item.get("name") or "function"),
                        summarize_arguments(_parsed_arguments(item.get("arguments"))),
                    ),
                )
            ]
        if kind == "custom_tool_call":
            return [Turn("tool", tool_marker(str(item.get("name") or "tool"), _custom_input(item.get("input"))))]
        if kind == "local_shell_call":
            action = as_dict(item.get("action"))
            return [Turn("tool", tool_marker("shell", summarize_arguments(action)))]
        if kind == "web_search_call":
            return [Turn("tool", tool_marker("web_search", summarize_arguments(as_dict(item.get("action")))))]
        # reasoning, *_output, ghost_snapshot, compaction, …
        return []

    def _message_turns(self, item: dict[str, Any]) -> list[Turn]:
        role = item.get("role")
        if role not in ("user", "assistant"):
            return []  # developer and system messages are instructions, not the conversation
        content = item.get("content")
        parts: list[str] = []
        for block in content if isinstance(content, list) else []:
            block = as_dict(block)
            kind = block.get("type")
            text = str(block.get("text") or "")
            if kind in ("input_text", "output_text", "text"):
                if role == "user" and text.lstrip().startswith(_INJECTED_INPUT):
                    self._note_environment(text)
                    continue
                parts.append(text.strip())
            elif kind == "input_image":
                parts.append("[image]")
        text = SEGMENT_SEPARATOR.join(part for part in parts if part)
        return [Turn(role, text)] if text else []

    def _note_environment(self, text: str) -> None:
        found = _ENVIRONMENT_CWD.search(text)
        if found:
            self._keep_first("cwd", found.group(1).strip())

    def _note_start(self, value: Any) -> None:
        if self.started_at is None:
            self.started_at = instant(value)

    def _keep_first(self, key: str, value: Any) -> None:
        if key not in self.context and isinstance(value, str) and value:
            self.context[key] = value


def _parsed_arguments(arguments: Any) -> Any:
    """Function-call arguments arrive as JSON text; parse them when they are JSON."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments


def _custom_input(text: Any) -> str:
    """A freeform tool input: for a patch, the files it touches; else its text."""
    if not isinstance(text, str):
        return ""
    files = _PATCHED_FILE.findall(text)
    return ", ".join(name.strip() for name in files) if files else text
