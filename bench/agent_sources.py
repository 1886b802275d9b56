"""The original's sources at real size, used as their users use them: a real daemon, the CLI, an MCP client.

- **Pi**: no Pi history is public, so `--sessions` (default 1,000) session files are written in Pi's format (version
  3 header, `message` entries with text, `thinking` and `toolCall` blocks, tool results, model changes), each a
  conversation about a module of this machine's standard library (its docstrings as the answers), spread over 40
  working folders. Mined with `memcastle mine pi DIR --wait`, mined again (nothing new), one session grown by a turn
  and mined by its agent hook (`memcastle hook stop --agent pi`), searched over MCP.
- **OpenCode**: the same conversations as OpenCode sessions, answered by a stand-in `opencode` program (the one the
  tests use: `opencode db` runs the query on a real SQLite `session` table, `opencode export` prints the export JSON)
  first on the daemon's PATH; mined, mined again, one session mined by id (the plugin's `session` option).
- **GitHub**: a real project's issues and pull requests — the GitHub REST responses PyGithub recorded for its test
  suite (`tests/ReplayData` of a PyGithub checkout: openFrameworks, PyGithub and others, with their bodies and
  comments) — served by a loopback server in GitHub's shapes (pagination with `Link`, rate-limit headers), mined with
  `memcastle mine github --option include=…`, mined again (the cursor: nothing new), searched over MCP.

For each: wall time, the daemon's CPU seconds (from `/proc`), drawers and documents, and the characters an agent
receives for a default `memcastle_search`.

    python -m bench.agent_sources --replay /path/to/PyGithub/tests/ReplayData [--replay-from "PyGithub@<commit>"]
                                  [--sessions 1000] [--write]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from bench.common import command_line, write_section
from bench.search import start_daemon
from memcastle.connectors.pi import session_folder_name
from tests.agent_logs import install_opencode
from tests.github_api import GitHubHandler

ISSUE_URL = re.compile(r"https://api\.github\.com/repos/([^/]+/[^/]+)/issues/(\d+)$")


# --- the conversations ------------------------------------------------------------------------------------------


def conversations(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """`count` conversations about standard-library modules: the user asks about a function, the assistant reads
    the module and answers with the function's docstring, then a follow-up about another function."""
    stdlib = Path(os.__file__).parent
    documented: list[tuple[str, str, str, str]] = []
    for path in sorted(stdlib.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and (doc := ast.get_docstring(node)):
                if len(doc) > 80:
                    documented.append((path.stem, node.name, doc, str(path)))
    rng = random.Random(seed)
    folders = [f"/home/dev/work/project-{n:02d}" for n in range(40)]
    chosen = []
    for n in range(count):
        first, second = rng.sample(documented, 2)
        chosen.append({"n": n, "cwd": folders[n % len(folders)], "turns": [first, second]})
    return chosen


def write_pi(root: Path, talks: list[dict[str, Any]]) -> Path:
    """Pi session files: `<root>/--<cwd>--/<timestamp>_<uuid>.jsonl`."""
    for talk in talks:
        n = talk["n"]
        stamp = f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00.000Z"
        session_id = f"0199a3c1-{n:04x}-7000-8000-{n:012x}"
        folder = root / session_folder_name(talk["cwd"])
        folder.mkdir(parents=True, exist_ok=True)
        entries: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": session_id, "timestamp": stamp,
                                          "cwd": talk["cwd"]},
                                         {"type": "model_change", "id": "m0", "parentId": None, "timestamp": stamp,
                                          "provider": "anthropic", "modelId": "claude-sonnet-4-5"}]  # fmt: skip
        for k, (module, name, doc, path) in enumerate(talk["turns"]):
            call = f"call_{n}_{k}"
            entries += [
                _pi_entry(
                    f"u{k}",
                    stamp,
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": f"What does {module}.{name} do, and when should I use it?"}
                        ],
                    },
                ),  # fmt: skip
                _pi_entry(
                    f"a{k}",
                    stamp,
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "thinking", "thinking": "Read the module first."},
                            {"type": "toolCall", "id": call, "name": "read", "arguments": {"path": path}},
                        ],
                    },
                ),  # fmt: skip
                _pi_entry(
                    f"t{k}",
                    stamp,
                    {
                        "role": "toolResult",
                        "toolCallId": call,
                        "toolName": "read",
                        "content": [{"type": "text", "text": "(the module's source)"}],
                    },
                ),  # fmt: skip
                _pi_entry(
                    f"b{k}",
                    stamp,
                    {"role": "assistant", "content": [{"type": "text", "text": f"`{module}.{name}`: {doc}"}]},
                ),  # fmt: skip
            ]
        path = folder / f"{stamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"
        path.write_text("\n".join(json.dumps(e) for e in entries) + "\n", encoding="utf-8")
    return root


def _pi_entry(entry_id: str, stamp: str, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": None, "timestamp": stamp, "message": message}


def opencode_export(talk: dict[str, Any], session_id: str, created: int) -> list[dict[str, Any]]:
    """The assistant parts of one OpenCode message per turn (the stand-in's export wraps them)."""
    parts: list[dict[str, Any]] = []
    for module, name, doc, path in talk["turns"]:
        parts += [
            {"type": "step-start"},
            {
                "type": "tool",
                "tool": "read",
                "state": {"status": "completed", "input": {"filePath": path}, "output": "(source)", "title": path},
            },  # fmt: skip
            {"type": "text", "text": f"`{module}.{name}`: {doc}"},
            {"type": "step-finish", "reason": "stop"},
        ]
    return parts


# --- a loopback GitHub from PyGithub's recorded responses ----------------------------------------------------------


class Recorded:
    """Issues (pull requests among them) and their comments, from PyGithub's ReplayData files: every GET answer that
    holds an issue (a list, one issue, or search results), the latest version of each kept."""

    def __init__(self, replay: Path) -> None:
        self.issues: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
        self.comments: dict[tuple[str, int], dict[int, dict[str, Any]]] = defaultdict(dict)
        self.skipped = 0
        for path in sorted(replay.glob("*.txt")):
            lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
            i = 0
            while i + 9 < len(lines):
                if lines[i] not in ("https", "http"):
                    i += 1
                    continue
                method, request_path, body = lines[i + 1], lines[i + 4], lines[i + 9]
                i += 10
                if method == "GET":
                    self._take(request_path.split("?")[0], body)

    def _take(self, path: str, body: str) -> None:
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            self.skipped += 1
            return
        comments = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", path)
        if comments and isinstance(data, list):
            for comment in data:
                if isinstance(comment, dict) and "id" in comment:
                    self.comments[(comments.group(1), int(comments.group(2)))][comment["id"]] = comment
            return
        items = data if isinstance(data, list) else [data, *(data.get("items") or [])] if isinstance(data, dict) else []
        for item in items:
            if not isinstance(item, dict) or "number" not in item or "title" not in item:
                continue
            found = ISSUE_URL.match(str(item.get("url", "")))
            if found:
                repo, number = found.group(1), int(found.group(2))
                old = self.issues[repo].get(number)
                if old is None or str(item.get("updated_at") or "") >= str(old.get("updated_at") or ""):
                    self.issues[repo][number] = {**item, "comments": len(self.comments.get((repo, number), {}))}

    def largest(self, count: int) -> list[str]:
        return sorted(self.issues, key=lambda r: -len(self.issues[r]))[:count]


def github_handler(recorded: Recorded) -> type[BaseHTTPRequestHandler]:
    class Handler(GitHubHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            segments = parts.path.strip("/").split("/")
            repo = "/".join(segments[1:3])
            if segments[:1] == ["repos"] and len(segments) == 3:
                if repo in recorded.issues:
                    self.answer(200, {"full_name": repo, "topics": []})
                else:
                    self.answer(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
            elif segments[3:] == ["issues"]:
                since = query.get("since", [""])[0]
                items = [i for i in recorded.issues.get(repo, {}).values() if str(i.get("updated_at")) >= since]
                self.page(sorted(items, key=lambda i: (str(i.get("updated_at")), i["number"])), query)
            elif segments[3:4] == ["issues"] and segments[5:] == ["comments"]:
                found = recorded.comments.get((repo, int(segments[4])), {})
                self.page(sorted(found.values(), key=lambda c: str(c.get("created_at"))), query)
            elif segments[3:4] == ["issues"] and len(segments) == 5:
                self.answer(200, recorded.issues[repo][int(segments[4])])
            elif segments[3:4] == ["pulls"] and segments[5:] in (["reviews"], ["comments"], ["files"]):
                self.page([], query)
            else:
                self.answer(404, {"message": "Not Found"})

    return Handler


@contextmanager
def loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# --- measuring through the daemon -------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cli(home: Path, palace: Path, env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memcastle", "--palace", str(palace), "--json", *args],
        env={
            **env,
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
        },  # fmt: skip
        input=stdin,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memcastle {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def mine(home: Path, palace: Path, env: dict[str, str], pid: int, *args: str) -> dict[str, Any]:
    """One `memcastle mine … --wait`: its job's result, wall time and the daemon's CPU seconds."""
    cpu, started = cpu_seconds(pid), time.monotonic()
    out = cli(home, palace, env, "mine", *args, "--wait")
    wall, used = time.monotonic() - started, cpu_seconds(pid) - cpu
    answer = json.loads(out)
    job = answer.get("job", answer)
    return {"result": job.get("result") or {}, "status": job.get("status"), "wall": wall, "cpu": used}


async def mcp_search(address: str, query: str, **filters: Any) -> tuple[int, list[dict[str, Any]]]:
    async with httpx2.AsyncClient(trust_env=False, timeout=600.0) as transport:
        async with Client(streamable_http_client(address + "/mcp", http_client=transport)) as client:
            result = await client.call_tool("memcastle_search", {"query": query, **filters})
            [block] = result.content
            assert isinstance(block, TextContent) and not result.is_error, result.content
            return len(block.text), json.loads(block.text)["hits"]


def drawer_count(address: str, wing: str) -> int:
    with httpx.Client(base_url=address, trust_env=False, timeout=60) as http:
        wings = {w["name"]: w for w in http.get("/api/wings").json()["wings"]}
    return int(wings.get(wing, {}).get("drawers", 0))


def run(args: argparse.Namespace) -> str:
    work = Path(tempfile.mkdtemp(prefix="agent-sources-"))
    home, palace = work / "home", work / "palace"
    talks = conversations(args.sessions)
    pi_root = write_pi(work / "pi-sessions", talks)
    stamps = [(f"ses_{t['n']:05d}", t["cwd"], 1_770_000_000_000 + t["n"] * 60_000) for t in talks]
    bin_dir = install_opencode(work / "opencode", stamps[:1], opencode_export(talks[0], stamps[0][0], stamps[0][2]))
    for (sid, _, updated), talk in zip(stamps[1:], talks[1:], strict=True):  # the rest, each its own conversation
        _add_opencode_session(work / "opencode" / "opencode-data", sid, talk, updated)
    recorded = Recorded(Path(args.replay))
    repos = recorded.largest(3)
    rows: list[str] = []
    with loopback(github_handler(recorded)) as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCASTLE_")}
        env["PATH"] = f"{bin_dir}:{env['PATH']}"
        env.update({"GH_TOKEN": "bench-token", "MEMCASTLE_EMBEDDINGS_PROVIDER": "none",
                    "MEMCASTLE_MINING_GITHUB_API_URL": api})  # fmt: skip
        proc, address = start_daemon(
            palace, home, extra_env={k: v for k, v in env.items() if k.startswith(("MEM", "GH_", "PATH"))}
        )
        try:
            module, name = talks[len(talks) // 2]["turns"][1][:2]
            rows += measure_source(
                "pi", home, palace, env, proc.pid, address, ["pi", str(pi_root)], f"what does {module}.{name} do"
            )
            grown = sorted(pi_root.rglob("*.jsonl"))[0]
            with grown.open("a") as log:
                late = {"role": "user", "content": [{"type": "text", "text": "One more: pin the zoneinfo version."}]}
                log.write(json.dumps(_pi_entry("late", "2026-12-01T10:00:00.000Z", late)) + "\n")
            started = time.monotonic()
            cli(home, palace, env, "hook", "stop", "--agent", "pi",
                stdin=json.dumps({"transcript_path": str(grown), "cwd": "/home/dev"}))  # fmt: skip
            hook_took = time.monotonic() - started
            while not anyio.run(lambda: mcp_search(address, "pin the zoneinfo version", wing="pi"))[1]:
                if time.monotonic() - started > 600:
                    raise TimeoutError("the grown session's new turn never became searchable")
                time.sleep(0.2)
            searchable = time.monotonic() - started
            rows.append(f"| pi | the agent hook on one grown session | hook {hook_took:.2f} s; the new turn found "
                        f"{searchable:.1f} s after | | | | |")  # fmt: skip
            rows += measure_source(
                "opencode", home, palace, env, proc.pid, address, ["opencode"], f"what does {module}.{name} do"
            )
            one = mine(home, palace, env, proc.pid, "opencode", f"session={stamps[5][0]}")
            rows.append(f"| opencode | one session by id (the plugin) | {one['wall']:.1f} s | {one['cpu']:.1f} | "
                        f"{one['result'].get('created', 0)} new | | |")  # fmt: skip
            rows += measure_source(
                "github", home, palace, env, proc.pid, address,
                ["github", f"include={','.join(repos)}"], "openFrameworks addon build error",
            )  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(timeout=120)
    issues = sum(len(recorded.issues[r]) for r in repos)
    pulls = sum(1 for r in repos for i in recorded.issues[r].values() if i.get("pull_request"))
    comments = sum(len(c) for (r, _), c in recorded.comments.items() if r in repos)
    header = (
        f"{args.sessions} generated Pi sessions and {args.sessions} OpenCode sessions (40 working folders, standard-"
        f"library docstrings as answers); GitHub: {issues} real issues and pull requests ({pulls} pull requests, "
        f"{comments} comments) of {', '.join(repos)}, as PyGithub recorded GitHub's answers"
        f"{f' ({args.replay_from})' if args.replay_from else ''}, served on loopback.\n\n"
        "| source | run | wall | daemon CPU s | drawers / new | documents | MCP default search chars |\n"
        "|---|---|---|---|---|---|---|\n"
    )
    shutil.rmtree(work, ignore_errors=True)
    return header + "\n".join(rows) + f"\n\n`{command_line()}`"


def _add_opencode_session(data: Path, sid: str, talk: dict[str, Any], updated: int) -> None:
    import sqlite3

    from tests.agent_logs import session_export

    with sqlite3.connect(data / "opencode.db") as db:
        db.execute("INSERT INTO session VALUES (?, ?, ?)", (sid, talk["cwd"], updated))
    export = session_export(sid, talk["cwd"], updated - 60_000, opencode_export(talk, sid, updated))
    export["messages"][0]["parts"][0]["text"] = f"What does {talk['turns'][0][0]}.{talk['turns'][0][1]} do?"
    (data / "export" / f"{sid}.json").write_text(json.dumps(export), encoding="utf-8")


def measure_source(
    wing: str, home: Path, palace: Path, env: dict[str, str], pid: int, address: str, mine_args: list[str], query: str
) -> list[str]:
    first = mine(home, palace, env, pid, *mine_args)
    drawers = drawer_count(address, wing)
    documents = first["result"].get("documents", "?")
    chars, hits = anyio.run(lambda: mcp_search(address, query, wing=wing))
    again = mine(home, palace, env, pid, *mine_args)
    top = hits[0]["origin"].get("document") if hits else "—"
    return [
        f"| {wing} | first mine ({first['status']}) | {first['wall']:.1f} s | {first['cpu']:.1f} | {drawers} | "
        f"{documents} | {chars} (top: {top}) |",
        f"| {wing} | mined again | {again['wall']:.1f} s | {again['cpu']:.1f} | "
        f"{again['result'].get('created', 0)} new | | |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replay", required=True, help="tests/ReplayData of a PyGithub checkout")
    parser.add_argument("--replay-from", default="", help="where the ReplayData came from, reported")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--write", action="store_true", help="record the run in bench/RESULTS.md")
    args = parser.parse_args()
    report = run(args)
    print(report)
    if args.write:
        write_section("agent-sources", "## The original's sources at real size (`bench.agent_sources`)\n\n" + report)


if __name__ == "__main__":
    main()
