"""The `opencode` connector: OpenCode's sessions, asked of the `opencode` program itself.

OpenCode (1.2 and later) keeps every session in one SQLite database it writes while it runs, so the database is not
opened here: the `opencode` command, which owns it, is run — `opencode db --format json "<query>"` to list the
sessions updated past the cursor (the `session` table's `id`, `time_updated` and `directory` columns, in
milliseconds), `opencode export <id>` for one session as JSON (`{info: {id, slug, projectID, directory, title,
version, time: {created, updated}}, messages: [{info: {role, time, summary?}, parts: [...]}]}`), and `opencode db
path` to name the history when no locator does. The program runs without a shell, with MemCastle's own variables
removed from its environment, a time bound and an output bound.

Kept: user and assistant text, tool calls as markers (`[tool: read — scripts/rotate.sh]`), attached files by name.
Left out: reasoning, tool output, patches and snapshots, the step markers, text OpenCode injected itself (parts it
marks `synthetic` or `ignored`) and the summaries it writes when it compacts a session.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memcastle.clock import from_epoch, parse_instant, to_datetime
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
    SINCE_OPTION,
    Turn,
    as_dict,
    render_turns,
    room_for,
    summarize_arguments,
    tool_marker,
    transcript_document,
)
from memcastle.errors import InvalidRequest

PROGRAM = "opencode"
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
TIMEOUT_SECONDS = 60.0
MAX_OUTPUT_BYTES = 16 << 20  # a session export past this is skipped, with the reason


class OpenCodeConnector(ConnectorBase):
    """Mines OpenCode sessions through the `opencode` command; the cursor is the last session's update time."""

    name = "opencode"
    source_kind = "transcript"
    options: Mapping[str, OptionSpec] = {
        "since": SINCE_OPTION,
        "dir": OptionSpec("string", "only the sessions whose working directory is this folder"),
        "session": OptionSpec(
            "string",
            "only this session, by its id (what the OpenCode plugin mines when a session goes idle)",
            identity=False,
        ),
    }

    def __init__(self, program: str = PROGRAM) -> None:
        self.program = program

    def identify(self, source: SourceSpec) -> str:
        """The locator names the history when given; else the database `opencode db path` prints (a moved
        `XDG_DATA_HOME` is another history, with a cursor of its own). `dir` selects a slice of it."""
        name = source.locator.strip() or self._run(["db", "path"]).strip()
        narrowing = {"dir": _directory(source.options["dir"])} if source.options.get("dir") else {}
        return identify_source(self.name, name, narrowing)

    def default_wing(self, source: SourceSpec) -> str:
        return self.name

    def local_paths(self, source: SourceSpec) -> tuple[Path, ...]:
        """None: MemCastle opens no file of OpenCode's; the `opencode` program reads its own database (a grant of
        one named program, run without a shell, rather than of a folder)."""
        return ()

    def check(self, source: SourceSpec) -> None:
        """A malformed `since` or `session` is a 400 naming it; a missing `opencode` program, a 400 naming the
        locator."""
        if source.options.get("since"):
            parse_instant(source.options["since"], field="options.since")
        _session(source)
        if shutil.which(self.program) is None:
            raise InvalidRequest(
                f"the {self.program!r} program is not on the daemon's PATH: OpenCode's history is read through it",
                field="locator",
                help="install OpenCode 1.2 or later (its history lives in a database only it reads)",
            )

    def discover(self, source: SourceSpec, cursor: str | None) -> list[Candidate]:
        """The sessions updated past the cursor (`<time_updated>:<id>`), oldest first, each advancing it."""
        session = _session(source)
        if session is not None:  # one session, whatever the cursor: it does not move the cursor
            rows = self._sessions(f"SELECT id, time_updated FROM session WHERE id = {_quote(session)}")
            return [Candidate(external_id=str(row["id"])) for row in rows]
        after_time, after_id = _cursor(cursor)
        where = [f"(time_updated > {after_time} OR (time_updated = {after_time} AND id > {_quote(after_id)}))"]
        if source.options.get("since"):
            stamp = to_datetime(parse_instant(source.options["since"], field="options.since")).timestamp()
            where.append(f"time_updated >= {int(stamp * 1000)}")
        if source.options.get("dir"):
            where.append(f"rtrim(directory, '/') = {_quote(_directory(source.options['dir']))}")
        query = f"SELECT id, time_updated FROM session WHERE {' AND '.join(where)} ORDER BY time_updated, id"
        return [
            Candidate(external_id=str(row["id"]), cursor_after=f"{int(row['time_updated'])}:{row['id']}")
            for row in self._sessions(query)
        ]

    def _sessions(self, query: str) -> list[dict[str, Any]]:
        """The `{id, time_updated}` rows `opencode db` answers for a query of its `session` table."""
        try:
            rows = json.loads(self._run(["db", "--format", "json", query]))
        except json.JSONDecodeError as exc:
            raise SkipDocument(f"opencode db answered something that is not JSON ({exc.msg})") from None
        if not isinstance(rows, list):
            raise SkipDocument("opencode db answered something other than a list of sessions")
        return [
            row
            for row in rows
            if isinstance(row, dict) and isinstance(row.get("id"), str) and isinstance(row.get("time_updated"), int)
        ]

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        """One session, as `opencode export` gives it, rendered as turns."""
        try:
            exported = json.loads(self._run(["export", candidate.external_id]))
        except json.JSONDecodeError as exc:
            raise SkipDocument(f"opencode export answered something that is not JSON ({exc.msg})") from None
        info = as_dict(as_dict(exported).get("info"))
        messages = as_dict(exported).get("messages")
        turns = [turn for message in messages if isinstance(message, dict) for turn in _turns(message)] if isinstance(
            messages, list
        ) else []  # fmt: skip
        segments = render_turns(turns)
        if not segments:
            raise SkipDocument("no user or assistant messages")
        times = as_dict(info.get("time"))
        created = _instant_ms(times.get("created"))
        metadata: dict[str, Any] = {
            "session_id": info.get("id") or candidate.external_id,
            "project_id": info.get("projectID"),
            "cwd": info.get("directory"),
            "title": info.get("title"),
            "version": info.get("version"),
            "first_timestamp": created,
        }
        if isinstance(info.get("parentID"), str):
            metadata["parent_session"] = info["parentID"]
        return RawDocument(
            external_id=candidate.external_id,
            body=SEGMENT_SEPARATOR.join(segments),
            metadata=metadata,
            occurred_at=created,
            title=info.get("title") if isinstance(info.get("title"), str) else None,
            uri=f"opencode://session/{candidate.external_id}",
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        return transcript_document(raw, room=room_for(raw.metadata.get("cwd")), name=raw.external_id)

    def _run(self, arguments: Sequence[str]) -> str:
        """Run `opencode ARGUMENTS`; its standard output, or `SkipDocument` with the reason it failed."""
        argv = [self.program, *arguments]
        environment = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMCASTLE_")}
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=TIMEOUT_SECONDS, env=environment, stdin=subprocess.DEVNULL
            )
        except FileNotFoundError:
            raise SkipDocument(f"the {self.program!r} program is not installed") from None
        except subprocess.TimeoutExpired:
            raise SkipDocument(f"`{' '.join(argv[:2])}` did not answer within {TIMEOUT_SECONDS:g} s") from None
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise SkipDocument(f"`{' '.join(argv[:2])}` failed: {reason[-1] if reason else f'exit {done.returncode}'}")
        if len(done.stdout) > MAX_OUTPUT_BYTES:
            raise SkipDocument(f"`{' '.join(argv[:2])}` answered more than {MAX_OUTPUT_BYTES >> 20} MiB")
        return done.stdout.decode("utf-8", "replace")


def _turns(message: dict[str, Any]) -> list[Turn]:
    info = as_dict(message.get("info"))
    role = info.get("role")
    if role not in ("user", "assistant") or info.get("summary") is True:
        return []  # a compaction summary restates what the session already holds
    turns: list[Turn] = []
    texts: list[str] = []
    for part in message.get("parts") or []:
        part = as_dict(part)
        kind = part.get("type")
        if kind == "text" and not part.get("synthetic") and not part.get("ignored"):
            texts.append(str(part.get("text") or "").strip())
        elif kind == "file":
            texts.append(f"[file: {part.get('filename') or part.get('url') or 'attachment'}]")
        elif kind == "tool":
            state = as_dict(part.get("state"))
            detail = state.get("title") or summarize_arguments(state.get("input"))
            turns.append(Turn("tool", tool_marker(str(part.get("tool") or "tool"), str(detail or ""))))
        # reasoning, step markers, snapshots, patches and part types this reader does not know: skipped
    text = SEGMENT_SEPARATOR.join(t for t in texts if t)
    return ([Turn(role, text)] if text else []) + turns


def _cursor(cursor: str | None) -> tuple[int, str]:
    if not cursor:
        return -1, ""
    stamp, _, session = cursor.partition(":")
    try:
        return int(stamp), session
    except ValueError:
        return -1, ""


def _session(source: SourceSpec) -> str | None:
    """The `session` option: an OpenCode session id (`ses_…`: letters, digits, `_` and `-`), else a 400 naming it."""
    session = source.options.get("session")
    if not session:
        return None
    if not SESSION_ID.fullmatch(session):
        raise InvalidRequest(
            f"not an OpenCode session id: {session!r}", field="options.session", help="ids look like ses_3f2a…"
        )
    return session


def _quote(text: str) -> str:
    """An SQL string literal: `'` doubled, nothing else interpreted."""
    return "'" + text.replace("'", "''") + "'"


def _directory(value: str) -> str:
    return str(Path(value).expanduser().resolve()).rstrip("/") or "/"


def _instant_ms(value: Any) -> str | None:
    return from_epoch(value / 1000) if isinstance(value, int | float) and not isinstance(value, bool) else None
