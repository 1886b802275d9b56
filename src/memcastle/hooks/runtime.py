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
hook that did nothing is never mistaken for one that had nothing to do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

# Agents allow a hook 10 s or more; a session start should not wait that long. A wake-up reads only what it answers
# with (an index per agent), so these leave room for a daemon busy mining and embedding on a loaded machine.
DEADLINE = 3.0  # seconds a hook may take, end to end
CALL_TIMEOUT = 2.5  # seconds one call to the daemon may take
MAX_CONTEXT_BYTES = 8192
EVENTS = ("session-start", "stop", "pre-compact")
TRANSCRIPT_AGENTS = ("claude", "codex", "pi")  # whose hooks name a transcript file; OpenCode's names its session


class Daemon(Protocol):
    def get(self, path: str, **params: Any) -> Any: ...
    def post(self, path: str, body: Any = None) -> Any: ...


def handle(
    agent: str,
    event: str,
    payload: Mapping[str, Any],
    daemon: Daemon,
    *,
    checkpoint: bool = False,
    project: str | None = None,
) -> str:
    """The hook's standard output for this event (empty when there is nothing to say). `project` is the wing of the
    folder the agent works in, when the payload said."""
    if event == "session-start":
        return _wake_up(agent, daemon, project)
    request = mine_request(agent, payload)
    if request is not None:
        daemon.post("/mine", request)
    message = payload.get("last_assistant_message")
    if checkpoint and isinstance(message, str) and message.strip():
        session_id = str(payload.get("session_id") or "")
        name = f"{agent}-{session_id}-{event}" if session_id else None
        item = {"content": message, "name": name, **({"wing": project} if project else {})}
        daemon.post("/checkpoint", {"agent": agent, "items": [item]})
    return ""


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
