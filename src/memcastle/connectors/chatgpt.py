"""The `chatgpt` connector: a ChatGPT data export, one document per conversation.

The locator is `conversations.json`, the export `.zip`, or a folder holding either. Recent exports split the
conversations over `conversations-000.json`, `conversations-001.json`, …; those are read together. A conversation
is a tree: `mapping` holds nodes `{id, message, parent, children}` and `current_node` is the leaf the user last
saw, so the transcript is the path from the root to `current_node`; regenerated or edited branches are left out.
"""

from __future__ import annotations

import json
import re
import zipfile
import zlib
from collections.abc import Callable, Mapping
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
from memcastle.connectors.files import open_local, read_local_bytes
from memcastle.connectors.transcript import (
    DEFAULT_ROOM,
    SEGMENT_SEPARATOR,
    SINCE_OPTION,
    Turn,
    as_dict,
    as_text,
    first_text,
    identity_options,
    instant,
    is_active_since,
    render_turns,
    since_instant,
    summarize_arguments,
    title_from,
    tool_marker,
    transcript_document,
)
from memcastle.errors import InvalidRequest

_EXPORT_FILE = re.compile(r"conversations(-\d+)?\.json")
# Content that is the model's reasoning, or context and memory the user never sees in the thread.
_HIDDEN_CONTENT = {"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"}


class ChatGPTConnector(ConnectorBase):
    """Mines a ChatGPT export: the visible branch of each conversation, tool use as one-line markers."""

    name = "chatgpt"
    source_kind = "transcript"
    options: Mapping[str, OptionSpec] = {"since": SINCE_OPTION}

    def identify(self, source: SourceSpec) -> str:
        """The absolute path of the export."""
        return identify_source(self.name, str(_export_path(source)), identity_options(self.options, source.options))

    def default_wing(self, source: SourceSpec) -> str:
        """Transcripts go to the connector's wing."""
        return self.name

    notices_removal = False

    def lists_everything(self, source: SourceSpec) -> bool:
        """Discovery lists every conversation of the export."""
        return True

    def discover(self, source: SourceSpec, cursor: str | None) -> list[Candidate]:
        """Every conversation of the export, by id; an unreadable export raises `SkipDocument`."""
        since = since_instant(source)
        candidates = []
        for external_id, conversation in sorted(_load_conversations(source).items()):
            if isinstance(conversation, dict) and since is not None:
                last = instant(conversation.get("update_time")) or instant(conversation.get("create_time"))
                if not is_active_since(last, since):
                    continue
            candidates.append(Candidate(external_id=external_id, hint=conversation))
        return candidates

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        """One conversation's current branch rendered as turns; a malformed one raises `SkipDocument`."""
        conversation = candidate.hint
        if conversation is None:
            conversation = _load_conversations(source).get(candidate.external_id)
            if conversation is None:
                raise SkipDocument(f"conversation {candidate.external_id} is not in the export")
        if not isinstance(conversation, dict):
            raise SkipDocument(f"conversation {candidate.external_id} is not a JSON object")
        if not (as_text(conversation.get("conversation_id")) or as_text(conversation.get("id"))):
            raise SkipDocument(f"conversation {candidate.external_id} has no id")
        mapping = conversation.get("mapping")
        if not isinstance(mapping, dict) or not mapping:
            raise SkipDocument(f"conversation {candidate.external_id} has no message mapping")
        messages = [as_dict(node.get("message")) for node in _current_branch(mapping, conversation.get("current_node"))]
        turns = _turns(message for message in messages if message)
        segments = render_turns(turns)
        if not segments:
            raise SkipDocument(f"conversation {candidate.external_id} has no user or assistant messages")
        created = instant(conversation.get("create_time"))
        first_message = next((stamp for message in messages if (stamp := instant(message.get("create_time")))), None)
        title = as_text(conversation.get("title"))
        metadata: dict[str, Any] = {
            "conversation_id": candidate.external_id,
            "title": title,
            "model": as_text(conversation.get("default_model_slug")) or _first_model(messages),
            "create_time": created,
        }
        if as_text(conversation.get("gizmo_id")):
            metadata["gizmo_id"] = conversation["gizmo_id"]
        return RawDocument(
            external_id=candidate.external_id,
            body=SEGMENT_SEPARATOR.join(segments),
            metadata=metadata,
            occurred_at=created or first_message,
            title=title or title_from(first_text(turns, "user")),
            uri=f"chatgpt://conversation/{candidate.external_id}",
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        """One segment per turn; conversations have no working folder, so they share one room."""
        return transcript_document(raw, room=DEFAULT_ROOM, name=raw.title or raw.external_id)


def _export_path(source: SourceSpec) -> Path:
    if not source.locator.strip():
        raise InvalidRequest(
            "the chatgpt connector needs the path of an export (conversations.json, the .zip, or their folder)",
            field="locator",
        )
    return source.path


def _load_conversations(source: SourceSpec) -> dict[str, Any]:
    """The export's conversations by id; an entry without an id is kept under `invalid-<n>` for `read` to refuse."""
    entries: list[Any] = []
    for name, data in _export_files(_export_path(source), source.may_read, source.hard_links):
        try:
            value = json.loads(data.decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise SkipDocument(f"{name}: not valid UTF-8 at byte {exc.start}") from None
        except json.JSONDecodeError as exc:
            raise SkipDocument(f"{name}: invalid JSON ({exc.msg} at line {exc.lineno})") from None
        # A single conversation saved on its own is an object rather than a list.
        if isinstance(value, dict) and "mapping" in value:
            value = [value]
        if not isinstance(value, list):
            raise SkipDocument(f"{name}: expected a list of conversations")
        entries.extend(value)
    conversations: dict[str, Any] = {}
    for index, entry in enumerate(entries):
        entry_dict = as_dict(entry)
        external_id = as_text(entry_dict.get("conversation_id")) or as_text(entry_dict.get("id"))
        conversations.setdefault(external_id or f"invalid-{index}", entry)
    return conversations


def _export_files(path: Path, may_read: Callable[[Path], bool], hard_links: bool) -> list[tuple[str, bytes]]:
    """The conversation files of an export, named for messages, in order (a symbolic link out of what the mine may
    read is left out)."""
    if path.is_dir():
        # An unpacked export holds its files at the top, or one folder down when unpacked into a folder.
        found = sorted(
            child
            for child in (
                *path.glob("*.json"),
                *(nested for folder in _folders(path, may_read) for nested in folder.glob("*.json")),
            )
            if _is_export_file(child.relative_to(path).as_posix()) and may_read(child)
        )
        if found:
            return [(str(child), read_local_bytes(child, hard_links=hard_links)) for child in found]
        archives = sorted(child for child in path.glob("*.zip") if may_read(child))
        if len(archives) != 1:
            raise SkipDocument(f"no conversations.json and not exactly one export .zip in {path}")
        path = archives[0]
    if path.suffix.lower() == ".zip":
        return _archive_files(path, hard_links)
    return [(str(path), read_local_bytes(path, hard_links=hard_links))]


def _folders(path: Path, may_read: Callable[[Path], bool]) -> list[Path]:
    return [child for child in path.iterdir() if child.is_dir() and may_read(child)]


def _archive_files(path: Path, hard_links: bool) -> list[tuple[str, bytes]]:
    try:
        with open_local(path, hard_links=hard_links) as handle, zipfile.ZipFile(handle) as archive:
            names = sorted(name for name in archive.namelist() if _is_export_file(name))
            if not names:
                raise SkipDocument(f"no conversations.json in {path}")
            return [(f"{path}:{name}", archive.read(name)) for name in names]
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise SkipDocument(f"cannot read export archive {path}: {exc}") from None
    except OSError as exc:
        raise SkipDocument(f"cannot read {path}: {exc.strerror or exc}") from None


def _is_export_file(relative: str) -> bool:
    parts = relative.split("/")
    # macOS archivers add __MACOSX/._conversations.json resource forks next to the real files.
    return bool(_EXPORT_FILE.fullmatch(parts[-1])) and not any(part.startswith(("__MACOSX", ".")) for part in parts)


def _current_branch(mapping: dict[str, Any], current_node: Any) -> list[dict[str, Any]]:
    """The nodes from the root down to `current_node` (else the latest leaf): the branch the user last saw."""
    leaf = current_node if isinstance(current_node, str) and current_node in mapping else _latest_leaf(mapping)
    branch: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id: Any = leaf
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = as_dict(mapping[node_id])
        branch.append(node)
        node_id = node.get("parent")
    branch.reverse()
    return branch


def _latest_leaf(mapping: dict[str, Any]) -> str | None:
    leaves = [
        (instant(as_dict(as_dict(node).get("message")).get("create_time")) or "", node_id)
        for node_id, node in mapping.items()
        if not as_dict(node).get("children")
    ]
    return max(leaves)[1] if leaves else None


def _turns(messages: Any) -> list[Turn]:
    """Visible user and assistant messages as turns; tool use as markers; system, hidden and reasoning dropped."""
    turns: list[Turn] = []
    pending_tool: str | None = None
    for message in messages:
        author = as_dict(message.get("author"))
        role = author.get("role")
        content = as_dict(message.get("content"))
        metadata = as_dict(message.get("metadata"))
        if (
            role not in ("user", "assistant", "tool")
            or metadata.get("is_visually_hidden_from_conversation")
            or content.get("content_type") in _HIDDEN_CONTENT
            or message.get("channel") == "analysis"
        ):
            continue
        recipient = as_text(message.get("recipient")) or "all"
        if role == "assistant" and recipient != "all":
            # The model addressing a tool (python, browser, dalle.text2im, bio, …) rather than the user.
            turns.append(Turn("tool", tool_marker(recipient, _call_detail(content))))
            pending_tool = recipient
        elif role == "tool":
            name = as_text(author.get("name")) or "tool"
            # The call's marker already stands for its output.
            if name != pending_tool:
                turns.append(Turn("tool", tool_marker(name)))
            pending_tool = None
        else:
            text = _content_text(content)
            if role == "user":
                text = SEGMENT_SEPARATOR.join(part for part in (text, _attachments(metadata)) if part)
            turns.append(Turn(role, text))
            pending_tool = None
    return turns


def _content_text(content: dict[str, Any]) -> str:
    """The readable text of a message: its parts, with images and audio as short markers."""
    parts = content.get("parts")
    if isinstance(parts, list):
        return SEGMENT_SEPARATOR.join(piece for part in parts if (piece := _part_text(part).strip()))
    text = content.get("text")
    return text.strip() if isinstance(text, str) else ""


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    if isinstance(part.get("text"), str):
        return str(part["text"])  # e.g. an audio_transcription
    kind = str(part.get("content_type") or "")
    if "image" in kind:
        return "[image]"
    if "audio" in kind or "video" in kind:
        return "[audio]"
    return f"[{kind}]" if kind else ""


def _call_detail(content: dict[str, Any]) -> str:
    """What a tool call asked for: its code or query, or the telling field of its JSON arguments."""
    text = _content_text(content)
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError:
        return text
    return summarize_arguments(arguments) if isinstance(arguments, dict) else text


def _attachments(metadata: dict[str, Any]) -> str:
    """Markers for the files a user attached; images already show as `[image]` parts."""
    attachments = metadata.get("attachments")
    if not isinstance(attachments, list):
        return ""
    files = [as_dict(item) for item in attachments]
    names = [as_text(item.get("name")) for item in files if not str(item.get("mime_type") or "").startswith("image/")]
    return "\n".join(f"[attachment: {name}]" for name in names if name)


def _first_model(messages: list[dict[str, Any]]) -> str | None:
    for message in messages:
        if as_dict(message.get("author")).get("role") == "assistant":
            model = as_text(as_dict(message.get("metadata")).get("model_slug"))
            if model:
                return model
    return None
