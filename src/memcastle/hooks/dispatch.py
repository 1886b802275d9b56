"""What `memcastle hook EVENT --agent AGENT` does with the JSON an agent writes on its standard input.

- `session-start`: the agent's wake-up bundle (its latest diary entry and the most recent checkpoints) goes back as
  additional context, in the `hookSpecificOutput` both agents read.
- `stop`, `pre-compact`: the session is mined as a daemon job — for Claude Code, Codex CLI and Pi the transcript file
  the payload names (`transcript_path`), that one file; for OpenCode the session the payload names (`session_id`),
  through the opencode connector. The hook queues it and returns. Unchanged parts of a transcript stay as they were,
  so mining after every turn costs the new turns only; while one mine of the session waits, another request joins
  it. With `--checkpoint`, a `last_assistant_message` in the payload (Codex sends one) is saved as a checkpoint too.

Both are scoped to the agent and, when the payload names its working folder (`cwd`), to that project's wing: the
checkpoints a hook saves go there, and the bundle holds that agent's own for that project.

A hook never blocks or fails the agent: it gives up after `DEADLINE` seconds in all and exits 0. When it could not
do its work (no daemon, a daemon too slow to answer, a refusal) it says so in one line on standard error, so that a
hook that did nothing is never mistaken for one that had nothing to do. A session start is never left empty for that:
each wake-up the daemon sends is kept on disk (`SavedWakeUp`), and when the daemon is stopped or slow the hook answers
with the last one, marked as such with its age.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from memcastle.errors import Conflict

# Agents allow a hook 10 s or more; a session start should not wait that long. A wake-up reads only what it answers
# with (an index per agent), so these leave room for a daemon busy mining and embedding on a loaded machine.
DEADLINE = 3.0  # seconds a hook may take, end to end
CALL_TIMEOUT = 2.5  # seconds one call to the daemon may take
MAX_CONTEXT_BYTES = 8192
EVENTS = ("session-start", "prompt", "stop", "pre-compact")
# The per-turn reminder (`hooks.reminder`): `always` each prompt; `sometimes` a session's first prompt, a prompt that
# asks about past work (CUES), and every REMIND_EVERY-th; `off` never. Said in one line, naming only core tools.
REMINDER_LEVELS = ("off", "sometimes", "always")
REMINDER = (
    "MemCastle: if this touches past work, decisions or code history, search memory first (memcastle_search) and "
    "say where what you use came from; file decisions as you make them (memcastle_checkpoint)."
)
CUES = (
    r"\b(remember|recall|last time|previous(ly)?|earlier|before|again|yesterday|last (week|month|session)|history|"
    r"decided|decision|why did|did we|we (agreed|chose|said)|what was|who (owns|wrote)|used to)\b"
)
REMIND_EVERY = 10
TRANSCRIPT_AGENTS = ("claude", "codex", "pi")  # whose hooks name a transcript file; OpenCode's names its session


class Daemon(Protocol):
    def get(self, path: str, **params: Any) -> Any: ...
    def post(self, path: str, body: Any = None) -> Any: ...


class SavedWakeUp:
    """The last wake-up the daemon sent for an agent in a project, kept in the state folder (one small JSON file per
    palace, agent and project), for a session start the daemon cannot answer in time."""

    def __init__(self, state: Path, palace: Path, agent: str, project: str | None) -> None:
        digest = hashlib.sha256(str(palace).encode()).hexdigest()[:16]
        key = hashlib.sha256(f"{agent}\0{project or ''}".encode()).hexdigest()[:16]
        self.path = state / "wake-up" / digest / f"{key}.json"

    def keep(self, output: str, at: str) -> None:
        """Keep what a session start answered (nothing when it had nothing to say)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        temporary.write_text(json.dumps({"saved_at": at, "output": output}), encoding="utf-8")
        os.replace(temporary, self.path)

    def answer(self, at: str, why: str) -> tuple[str, str] | None:
        """The saved answer, marked with its age and why it is not fresh, and the one line that says so; None when
        nothing was saved."""
        try:
            saved = json.loads(self.path.read_text(encoding="utf-8"))
            age = _age((datetime.fromisoformat(at) - datetime.fromisoformat(saved["saved_at"])).total_seconds())
            bundle = json.loads(saved["output"]) if saved["output"] else None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        told = f"{why}; answered with the wake-up saved {age} ago"
        if bundle is None:
            return "", told
        mark = f"[Saved {age} ago — the MemCastle daemon did not answer in time ({why}); the last wake-up it gave.]\n"
        context = bundle["hookSpecificOutput"]["additionalContext"]
        bundle["hookSpecificOutput"]["additionalContext"] = mark + context
        return json.dumps(bundle, ensure_ascii=False), told


def _age(seconds: float) -> str:
    minutes = max(0, int(seconds // 60))
    if minutes < 60:
        return f"{minutes} min"
    hours = minutes // 60
    return f"{hours} h {minutes % 60} min" if hours < 48 else f"{hours // 24} days"


def remind(level: str, prompt: str, count: int) -> bool:
    """Whether the `count`-th prompt of a session (from 1) gets the reminder at this level."""
    if level == "always":
        return True
    if level != "sometimes":
        return False
    return count == 1 or count % REMIND_EVERY == 0 or re.search(CUES, prompt, re.IGNORECASE) is not None


class PromptCount:
    """How many prompts a session has had, kept in the state folder (one small file per session, for `sometimes`)."""

    def __init__(self, state: Path, agent: str, session: str) -> None:
        key = hashlib.sha256(f"{agent}\0{session}".encode()).hexdigest()[:16]
        self.path = state / "prompts" / key

    def next(self) -> int:
        try:
            count = int(self.path.read_text(encoding="utf-8")) + 1
        except (OSError, ValueError):
            count = 1
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(str(count), encoding="utf-8")
        return count


def reminder_output(level: str, payload: Mapping[str, Any], count: int) -> str:
    """The `prompt` hook's answer: the reminder as the prompt's additional context, or nothing."""
    prompt = payload.get("prompt")
    if not remind(level, prompt if isinstance(prompt, str) else "", count):
        return ""
    output = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": REMINDER}}
    return json.dumps(output, ensure_ascii=False)


def handle(
    agent: str,
    event: str,
    payload: Mapping[str, Any],
    daemon: Daemon,
    *,
    checkpoint: bool = False,
    project: str | None = None,
    saved: SavedWakeUp | None = None,
    now: str | None = None,
) -> str:
    """The hook's standard output for this event (empty when there is nothing to say). `project` is the wing of the
    folder the agent works in, when the payload said; a session start's answer is kept in `saved` (at `now`)."""
    if event == "session-start":
        output = _wake_up(agent, daemon, project)
        if saved is not None and now is not None:
            saved.keep(output, now)
        return output
    request = mine_request(agent, payload)
    if request is not None:
        daemon.post("/mine", request)
    session_id = str(payload.get("session_id") or "")
    message = payload.get("last_assistant_message")
    if checkpoint and isinstance(message, str) and message.strip():
        name = f"{agent}-{session_id}-{event}" if session_id else None
        item = {"content": message, "name": name, **({"wing": project} if project else {})}
        file_checkpoint(daemon, agent, item)
    if event == "pre-compact":
        emergency = emergency_checkpoint(agent, payload, project)
        if emergency is not None:
            file_checkpoint(daemon, agent, emergency)
    return ""


def file_checkpoint(daemon: Daemon, agent: str, item: dict[str, Any]) -> None:
    """File one checkpoint item; a session's named checkpoint filed again replaces its current version (a
    supersession, the old one kept in its history) instead of being refused as a clash of names."""
    try:
        daemon.post("/checkpoint", {"agent": agent, "items": [item]})
    except Conflict as clash:
        if not item.get("name") or not clash.existing_id:
            raise
        correction = {"content": item["content"], "reason": "a later checkpoint of the same session", "agent": agent}
        daemon.post(f"/drawers/{clash.existing_id}/supersede", correction)


# An emergency checkpoint holds at most this much of the last exchange: what the next wake-up needs, not a transcript.
EMERGENCY_CHARS = 1500
TAIL_BYTES = 512 * 1024  # how much of a transcript's end is read for it


def emergency_checkpoint(agent: str, payload: Mapping[str, Any], project: str | None) -> dict[str, Any] | None:
    """Before a context is compacted, where the work stood — the last request and the last answer, from the end of
    the transcript — as a checkpoint tagged `pre-compact`, one per session (a later one replaces it), so the
    wake-up after the compaction carries it. None when the payload names no transcript with an exchange in it."""
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return None
    asked, answered = last_exchange(Path(transcript).expanduser())
    if not answered:
        return None
    half = EMERGENCY_CHARS // 2
    text = (f"Asked: {_clip(asked, half)}\n" if asked else "") + f"Answered: {_clip(answered, half)}"
    session = str(payload.get("session_id") or "")
    content = (
        f"Before compacting the context{f' of session {session}' if session else ''}, the work stood here.\n{text}"
    )
    name = f"{agent}-{session}-pre-compact" if session else None
    return {"content": content, "name": name, "tags": ["pre-compact"], **({"wing": project} if project else {})}


def last_exchange(transcript: Path) -> tuple[str, str]:
    """The last user request and the last assistant text in a transcript's JSON lines, in Claude Code's, Codex CLI's
    or Pi's shape ("" when there is none); only the file's end is read."""
    try:
        with transcript.open("rb") as handle:
            handle.seek(max(0, transcript.stat().st_size - TAIL_BYTES))
            lines = handle.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return "", ""
    asked = answered = ""
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        role, text = _turn(record)
        if role == "assistant" and text and not answered:
            answered = text
        elif role == "user" and text and answered:
            asked = text
            break
    return asked, answered


def _turn(record: Any) -> tuple[str, str]:
    """(role, text) of one transcript line: Claude Code's `{type, message: {role, content}}`, Pi's `{type: "message",
    message: {…}}`, Codex CLI's `{type: "response_item", payload: {type: "message", role, content}}`."""
    if not isinstance(record, dict):
        return "", ""
    message = record.get("payload") if record.get("type") == "response_item" else record.get("message")
    if not isinstance(message, dict) or record.get("isMeta") or record.get("isSidechain"):
        return "", ""
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") in ("text", "input_text", "output_text")
            and isinstance(part.get("text"), str)
        )
    else:
        text = ""
    if text.lstrip().startswith("<"):  # a command's or a hook's markup, not the user's words
        text = ""
    return str(message.get("role") or ""), text.strip()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def mine_request(agent: str, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The `/mine` request that files the session a payload names, when the agent's sessions are mined and the
    payload names one."""
    if agent == "opencode":
        session = payload.get("session_id")
        if not isinstance(session, str) or not session:
            return None
        return {"connector": "opencode", "locator": "", "options": {"session": session}}
    transcript = payload.get("transcript_path")
    if agent not in TRANSCRIPT_AGENTS or not isinstance(transcript, str) or not transcript:
        return None
    where = session_source(agent, Path(transcript))
    if where is None:
        return None
    root, session = where
    return {"connector": agent, "locator": str(root), "options": {"session": session}}


def session_source(agent: str, transcript: Path) -> tuple[Path, str] | None:
    """The connector's folder for a transcript and the transcript's path inside it: Claude Code keeps
    `<projects>/<project>/<session>.jsonl`, Pi `<sessions>/--<cwd>--/<timestamp>_<id>.jsonl`, Codex
    `<sessions>/YYYY/MM/DD/rollout-….jsonl`."""
    path = transcript.expanduser()
    if path.suffix != ".jsonl":
        return None
    if agent in ("claude", "pi"):
        root = path.parent.parent
    else:
        root = next((p for p in path.parents if p.name == "sessions"), path.parent)
    return root, path.relative_to(root).as_posix()


# What a session's context starts with, above the drawers; it names only tools the integrations' sessions list.
WAKE_UP_HEAD = (
    "MemCastle memory for this agent (verbatim drawers: pinned ones, the latest diary entry, the project's "
    "decisions by any agent, then recent checkpoints). "
    "Search it with the memcastle_search tool before answering questions about past work."
)


def _wake_up(agent: str, daemon: Daemon, project: str | None) -> str:
    scope = {"wing": project} if project else {}
    bundle = daemon.get("/wake-up", agent=agent, max_bytes=MAX_CONTEXT_BYTES, **scope)
    drawers = [*(bundle.get(part, []) for part in ("pinned", "diary", "decisions", "checkpoints"))]
    drawers = [drawer for part in drawers for drawer in part]
    if not drawers:
        return ""
    lines = [WAKE_UP_HEAD]
    for drawer in drawers:
        when = (drawer.get("valid_from") or "")[:19].replace("T", " ")
        lines.append(f"\n--- {drawer['wing']}/{drawer['room']} · {when} · {drawer['id']}\n{drawer['content']}")
    context = "\n".join(lines)
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}, ensure_ascii=False
    )


def read_payload(text: str) -> Mapping[str, Any]:
    """The hook's JSON input; an empty or malformed one is an empty payload (the hook then does what it can)."""
    try:
        found = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}
