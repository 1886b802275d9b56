"""The MCP server entry each agent reads (docs/agents.md, ADR 0053): what `integration install` merges into the
agent's own configuration so that its model has MemCastle's tools from the first session.

- Claude Code: `mcpServers.memcastle` in `~/.claude.json` (user scope) or `<project>/.mcp.json` (project scope);
- Codex CLI: `[mcp_servers.memcastle]` in `$CODEX_HOME/config.toml` (`~/.codex`) or `<project>/.codex/config.toml`;
- OpenCode: `mcp.memcastle` in its `opencode.json` (`opencode.jsonc` when that is the one there).

Each reaches the daemon's `/mcp` over streamable HTTP at the configured address, asking for the `core` tool profile
(the tools the skill and the instructions name, ADR 0052); a daemon whose port is chosen at start (`server.port = 0`)
has no address to write, and the agent runs the stdio bridge instead (`memcastle mcp --start --tools core`). With
authentication on, the agent sends the token from `$MEMCASTLE_AUTH_TOKEN` in its own way of reading the environment:
the token itself is never written.

Merging keeps everything else: another server, another key, the file's layout (Codex's comments too). Installing
again changes nothing; removing takes out MemCastle's entry and, when nothing else changed since, gives back the file
byte for byte (its `.bak` copy, made before the first change).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from memcastle.errors import ConfigError
from memcastle.hooks import Change

SERVER = "memcastle"  # the entry's name in every agent's configuration
TOOLS_HEADER = ("X-MemCastle-Tools", "core")  # the profile the skill is checked against (memcastle.mcp.profiles)
TOKEN_VARIABLE = "MEMCASTLE_AUTH_TOKEN"
PROTOCOL = "2026-07-28"  # the stateless MCP protocol the Pi extension and `answers` speak (one POST a request)


@dataclass(frozen=True)
class Endpoint:
    """How an agent reaches this installation's daemon: its `/mcp` address when it is known before the daemon
    starts, else the stdio bridge's command; `token` when the daemon asks for one."""

    url: str | None
    bridge: tuple[str, ...]
    token: bool = False


def registration_file(agent: str, scope: str, project: Path, home: Path, config_dir: Path) -> Path | None:
    """The file the agent reads MCP servers from for that scope (`config_dir`: OpenCode's user folder), or None for
    an agent that takes its tools another way (Pi: the extension registers them)."""
    user = scope == "user"
    if agent == "claude":
        return home / ".claude.json" if user else project / ".mcp.json"
    if agent == "codex":
        return config_dir / "config.toml" if user else project / ".codex" / "config.toml"
    if agent == "opencode":
        folder = config_dir if user else project
        existing = [folder / name for name in ("opencode.jsonc", "opencode.json") if (folder / name).exists()]
        return existing[0] if existing else folder / "opencode.json"
    return None


def entry(agent: str, endpoint: Endpoint) -> dict[str, Any]:
    """MemCastle's server entry in the agent's own shape."""
    name, value = TOOLS_HEADER
    if endpoint.url is None:
        program, *args = endpoint.bridge
        if agent == "claude":
            return {"type": "stdio", "command": program, "args": args}
        if agent == "codex":
            return {"command": program, "args": args}
        return {"type": "local", "command": [program, *args], "enabled": True}
    if agent == "claude":  # Claude Code expands ${VAR} in a server's headers
        token = {"Authorization": f"Bearer ${{{TOKEN_VARIABLE}}}"} if endpoint.token else {}
        return {"type": "http", "url": endpoint.url, "headers": {name: value, **token}}
    if agent == "codex":
        found: dict[str, Any] = {"url": endpoint.url, "http_headers": {name: value}}
        return {**found, "bearer_token_env_var": TOKEN_VARIABLE} if endpoint.token else found
    token = {"Authorization": f"Bearer {{env:{TOKEN_VARIABLE}}}"} if endpoint.token else {}  # OpenCode's {env:VAR}
    return {"type": "remote", "url": endpoint.url, "enabled": True, "headers": {name: value, **token}}


def register(agent: str, path: Path, endpoint: Endpoint) -> Change:
    """The change that puts MemCastle's entry into the file (made when there is none)."""
    document = _Document.read(agent, path)
    document.servers(create=True)[SERVER] = entry(agent, endpoint)
    return Change(path, document.before, document.text())


def unregister(agent: str, path: Path) -> Change:
    """The change that takes MemCastle's entry out: a table left empty goes too, a file left empty that MemCastle
    made is removed, and a file back to what its `.bak` copy holds is that copy, byte for byte."""
    document = _Document.read(agent, path)
    servers = document.servers(create=False)
    if document.before is None or servers is None or SERVER not in servers:
        return Change(path, document.before, document.before)
    del servers[SERVER]
    if not servers:
        document.drop_servers()
    backup = path.with_name(path.name + ".bak")
    if backup.exists():
        kept = backup.read_text(encoding="utf-8")
        if _Document.parse(agent, path, kept) == document.plain():
            return Change(path, document.before, kept)
    elif not document.plain():
        return Change(path, document.before, None)  # MemCastle made the file
    return Change(path, document.before, document.text())


def answers(url: str | None, token: str | None = None, timeout: float = 3.0) -> str | None:
    """None when the MCP endpoint at `url` lists tools (a stateless `tools/list`, as the Pi extension asks), else
    why not, in a few words."""
    if url is None:
        return "the stdio bridge finds the daemon when the agent starts it"
    meta = {"io.modelcontextprotocol/protocolVersion": PROTOCOL, "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": "tools/list",
        TOOLS_HEADER[0]: TOOLS_HEADER[1],
        **({"Authorization": f"Bearer {token}"} if token else {}),
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    import httpx  # on use: the command line's other commands do not load an HTTP client for it

    try:
        answer = httpx.post(url, json=body, headers=headers, timeout=timeout, trust_env=False)
    except httpx.HTTPError as exc:
        return f"no answer at {url} ({exc.__class__.__name__})"
    if answer.status_code != 200:
        return f"{url} answered {answer.status_code}"
    try:
        tools = answer.json()["result"]["tools"]
    except (ValueError, KeyError, TypeError):
        return f"{url} did not answer as an MCP endpoint"
    return None if tools else f"{url} lists no tools"


def registered(agent: str, path: Path) -> dict[str, Any] | None:
    """MemCastle's entry as the file holds it, or None."""
    servers = _Document.read(agent, path).servers(create=False)
    found = servers.get(SERVER) if servers is not None else None
    return _plain(found) if isinstance(found, Mapping) else None


class _Document:
    """An agent's configuration file: JSON (Claude Code, OpenCode) or TOML kept with its comments (Codex)."""

    def __init__(self, agent: str, path: Path, before: str | None, data: Any) -> None:
        self.agent, self.path, self.before, self.data = agent, path, before, data
        self.key = {"claude": "mcpServers", "codex": "mcp_servers", "opencode": "mcp"}[agent]

    @classmethod
    def read(cls, agent: str, path: Path) -> _Document:
        try:
            before: str | None = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            before = None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot be read ({exc}); nothing was changed", file=str(path)) from None
        if agent == "codex":
            return cls(agent, path, before, cls._toml(path, before or ""))
        return cls(agent, path, before, cls.parse(agent, path, before or ""))

    @staticmethod
    def parse(agent: str, path: Path, text: str) -> dict[str, Any]:
        if agent == "codex":
            parsed: dict[str, Any] = _plain(_Document._toml(path, text))
            return parsed
        if not text.strip():
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"not plain JSON ({exc.msg}; comments cannot be kept), nothing was changed: add the `{SERVER}` entry "
                "`integration install --dry-run` shows by hand",
                file=str(path),
                line=exc.lineno,
            ) from None
        if not isinstance(data, dict):
            raise ConfigError("must be a JSON object; nothing was changed", file=str(path))
        return data

    @staticmethod
    def _toml(path: Path, text: str) -> tomlkit.TOMLDocument:
        try:
            return tomlkit.parse(text)
        except TOMLKitError as exc:
            line = getattr(exc, "line", None)
            raise ConfigError(f"not valid TOML ({exc}); nothing was changed", file=str(path), line=line) from None

    def servers(self, *, create: bool) -> Any:
        found = self.data.get(self.key)
        if found is None and create:
            found = tomlkit.table(is_super_table=True) if self.agent == "codex" else {}
            self.data[self.key] = found
        if found is not None and not isinstance(found, Mapping):
            raise ConfigError(f"`{self.key}` must be a table of servers", file=str(self.path), key=self.key)
        return found

    def drop_servers(self) -> None:
        del self.data[self.key]

    def plain(self) -> dict[str, Any]:
        plain: dict[str, Any] = _plain(self.data)
        return plain

    def text(self) -> str:
        if self.agent == "codex":
            return tomlkit.dumps(self.data)
        unchanged = self.before is not None and self.before.strip() and json.loads(self.before) == self.data
        if unchanged:
            assert self.before is not None
            return self.before
        return json.dumps(self.data, indent=2, ensure_ascii=False) + "\n"


def _plain(value: Any) -> Any:
    """A parsed document as plain dicts and lists (tomlkit's containers unwrapped), for comparing."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value.unwrap() if hasattr(value, "unwrap") else value
