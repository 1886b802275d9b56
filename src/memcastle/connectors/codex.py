"""The `codex` connector: Codex CLI rollouts, `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, one per session.

Since September 2025 every line is an envelope `{timestamp, type, payload}` with `type` one of `session_meta`,
`turn_context`, `response_item`, `event_msg` or `compacted`. Earlier rollouts have no envelope: the first line is the
bare session meta `{id, timestamp, instructions, git}`, then bare response items and `{"record_type": "state"}`
markers, and the working folder is known only from the `<environment_context>` of the first user message.
"""

from __future__ import annotations

import json
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

DEFAULT_LOCATOR = "~/.codex/sessions"

# Context Codex itself sends as user input on every session: environment, AGENTS.md and user instructions.
_INJECTED_INPUT = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions for ")
_ENVIRONMENT_CWD = re.compile(r"<cwd>(.*?)</cwd>", re.DOTALL)
_PATCHED_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)


class CodexConnector(ConnectorBase):
    """Mines Codex CLI sessions: user and assistant text, tool calls as one-line markers."""

    name = "codex"
    source_kind = "transcript"
    options: Mapping[str, OptionSpec] = {"since": SINCE_OPTION, "session": SESSION_OPTION}

    def identify(self, source: SourceSpec) -> str:
        """The absolute sessions folder."""
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
        """Every `rollout-*.jsonl` below the folder, by relative path (which sorts by date)."""
        root = locator_root(source, DEFAULT_LOCATOR)
        if not root.is_dir():
            raise SkipDocument(f"not a folder: {root}")
        only = session_only(source, root)
        if only is not None:
            return [Candidate(external_id=only)] if (root / only).is_file() else []
        since = since_instant(source)
        candidates = []
        for path in session_paths(source, root, root.rglob("rollout-*.jsonl")):
            if not path.is_file():
                continue
            if since is not None and not is_file_active_since(path, since):
                continue
            candidates.append(Candidate(external_id=path.relative_to(root).as_posix()))
        return candidates

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        """One rollout rendered as turns, with its metadata snapshot."""
        path = session_file(source, locator_root(source, DEFAULT_LOCATOR), candidate.external_id)
        lines = read_jsonl(path)
        session = _Session()
        for index, (number, record) in enumerate(lines.records):
            session.take(index, record, number, lines.warnings)
        segments = render_turns(session.turns)
        if not segments:
            raise SkipDocument("no user or assistant messages")
        return RawDocument(
            external_id=candidate.external_id,
            body=SEGMENT_SEPARATOR.join(segments),
            metadata=session.metadata(),
            occurred_at=session.started_at,
            title=title_from(first_text(session.turns, "user")),
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
