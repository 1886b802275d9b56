"""`memcastle integration install claude|codex|opencode` registers MemCastle's MCP server in the agent's own
configuration, on a private HOME: what is written parses under that agent's rules, a client started from exactly what
was written searches the palace and files a checkpoint, installing twice is installing once, and removing gives the
file back byte for byte.

The agents' rules, as their sources define them:
- Codex CLI: `RawMcpServerConfig` (codex-rs/config/src/mcp_types.rs; `deny_unknown_fields`): `command`/`args`/`env`
  for stdio or `url`/`http_headers`/`bearer_token_env_var` for streamable HTTP, in `[mcp_servers.NAME]` of
  `config.toml`;
- OpenCode: `McpLocal` / `McpRemote` (packages/opencode/src/config/config.ts; zod `.strict()`), under `mcp`;
- Claude Code: `mcpServers` in `~/.claude.json` (user scope) or `.mcp.json` (project scope), an `http` server with
  `url` and `headers` whose `${VAR}` are expanded from the environment (code.claude.com/docs/en/mcp).
"""

from __future__ import annotations

import json
import re
import socket
import tomllib
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memcastle.integrations import INTEGRATIONS, endpoint_of, install, status, uninstall
from memcastle.integrations.registration import SERVER, TOOLS_HEADER
from memcastle.mcp.profiles import CORE, HEADER

CODEX_FIELDS = {
    "command", "args", "env", "env_vars", "cwd", "http_headers", "env_http_headers", "url", "bearer_token",
    "bearer_token_env_var", "environment_id", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec",
    "enabled", "required", "enabled_tools", "disabled_tools", "scopes", "oauth_resource", "tools",
}  # fmt: skip
OPENCODE_REMOTE = {"type", "url", "enabled", "headers", "oauth", "timeout"}
OPENCODE_LOCAL = {"type", "command", "environment", "enabled", "timeout"}

# What each agent's home holds before MemCastle is installed: other servers, other keys, Codex's comments.
BEFORE = {
    ".claude.json": '{\n  "numStartups": 12,\n  "mcpServers": {\n    "github": {\n      "type": "http",\n'
    '      "url": "https://api.githubcopilot.com/mcp/"\n    }\n  }\n}\n',
    ".codex/config.toml": '# my Codex\nmodel = "gpt-5.5"  # the default\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    'args = ["--stdio"]\n',
    ".config/opencode/opencode.json": '{\n  "$schema": "https://opencode.ai/config.json",\n'
    '  "theme": "tokyonight"\n}\n',
}
WRITTEN = {"claude": ".claude.json", "codex": ".codex/config.toml", "opencode": ".config/opencode/opencode.json"}


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    answer: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return answer


def follows_the_agents_rules(agent: str, path: Path) -> dict[str, Any]:
    """MemCastle's entry as the agent reads the file, checked against the agent's rules."""
    text = path.read_text(encoding="utf-8")
    if agent == "codex":
        entry = tomllib.loads(text)["mcp_servers"][SERVER]
        assert set(entry) <= CODEX_FIELDS and ("url" in entry) != ("command" in entry), entry
        assert all(isinstance(v, str) for v in entry.get("http_headers", {}).values())
    elif agent == "opencode":
        entry = json.loads(text)["mcp"][SERVER]
        assert set(entry) <= (OPENCODE_REMOTE if entry["type"] == "remote" else OPENCODE_LOCAL), entry
        assert isinstance(entry["url"], str) and entry["enabled"] is True
    else:
        entry = json.loads(text)["mcpServers"][SERVER]
        assert entry["type"] == "http" and set(entry) <= {"type", "url", "headers"}, entry
    return dict(entry)


def connection(agent: str, entry: dict[str, Any], environment: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The URL and headers the agent connects with, its environment references resolved its own way."""
    if agent == "codex":
        headers = dict(entry.get("http_headers", {}))
        if "bearer_token_env_var" in entry:
            headers["Authorization"] = f"Bearer {environment[entry['bearer_token_env_var']]}"
        return entry["url"], headers
    pattern = r"\$\{(\w+)\}" if agent == "claude" else r"\{env:(\w+)\}"
    headers = {k: re.sub(pattern, lambda m: environment[m.group(1)], v) for k, v in entry["headers"].items()}
    return entry["url"], headers


def test_each_agent_gets_a_server_its_client_reaches_and_removing_gives_its_file_back(
    daemon: Any, cli_runner: Any, tmp_path: Path, xdg_home: Any
) -> None:
    palace = tmp_path / "secured"
    created = cli_runner(["--palace", str(palace), "--json", "auth", "token", "create", "agent"], env=xdg_home.env({}))
    token = json.loads(created.stdout)["token"]
    served = daemon(palace=palace, extra_env={"MEMCASTLE_AUTH_ENABLED": "true"})
    home = tmp_path / "home"
    for name, text in BEFORE.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text, encoding="utf-8")
    private = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "MEMCASTLE_SERVER_PORT": served.address.rsplit(":", 1)[1],
        "MEMCASTLE_AUTH_ENABLED": "true",
    }
    for agent in ("claude", "codex", "opencode"):
        done = served.cli("--json", "integration", "install", agent, extra_env=private)
        assert done.returncode == 0, done.stderr
        again = json.loads(served.cli("--json", "integration", "install", agent, extra_env=private).stdout)
        assert not any(change["changed"] for change in again["changes"]), "installing twice is installing once"
        entry = follows_the_agents_rules(agent, home / WRITTEN[agent])
        assert token not in (home / WRITTEN[agent]).read_text(), "the token is read from the environment"
        url, headers = connection(agent, entry, {"MEMCASTLE_AUTH_TOKEN": token})
        assert headers[HEADER] == "core"

        async def scenario(url: str = url, headers: dict[str, str] = headers, agent: str = agent) -> None:
            async with httpx2.AsyncClient(headers=headers, trust_env=False, timeout=30) as http:
                async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                    listed = {tool.name for tool in (await client.list_tools()).tools}
                    assert listed == set(CORE)
                    decided = [{"content": f"Decided: {agent} keeps its memory in MemCastle."}]
                    filed = await call(client, "memcastle_checkpoint", agent=agent, items=decided)
                    assert filed["drawers"]
                    found = await call(client, "memcastle_search", query=f"{agent} keeps its memory",
                                       ranking="lexical")  # fmt: skip
                    assert found["hits"][0]["id"][:8] == filed["drawers"][0]["id"][:8]

        anyio.run(scenario)
    told = served.cli("--json", "integration", "status", extra_env={**private, "MEMCASTLE_AUTH_TOKEN": token})
    answering = {row["integration"]: row["answers"] for row in json.loads(told.stdout)["integrations"]}
    assert answering == {"claude": True, "codex": True, "opencode": True, "pi": False}, told.stdout
    refused = json.loads(served.cli("--json", "integration", "status", "codex", extra_env=private).stdout)
    assert refused["integrations"][0]["why"].endswith("answered 401"), "no token: the daemon refuses, and it is said"
    # doctor asks the same of a running daemon's registered servers.
    checked = {f["check"]: f for f in json.loads(served.cli("doctor", extra_env=private).stdout)["findings"]}
    assert checked["agent tools"]["level"] == "warning" and "answered 401" in checked["agent tools"]["detail"]
    with_token = served.cli("doctor", extra_env={**private, "MEMCASTLE_AUTH_TOKEN": token}).stdout
    assert "agent tools" not in {f["check"] for f in json.loads(with_token)["findings"]}
    for agent in ("claude", "codex", "opencode"):
        gone = served.cli("--json", "integration", "remove", agent, extra_env=private)
        assert gone.returncode == 0, gone.stderr
    for name, text in BEFORE.items():
        assert (home / name).read_text(encoding="utf-8") == text, f"{name} is given back byte for byte"


def test_a_file_made_for_memcastle_goes_with_it_and_other_servers_stay(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "shop"
    endpoint = endpoint_of("127.0.0.1", 8420, auth=False, palace=None)
    for agent in ("claude", "codex", "opencode"):
        for change in install(agent, "project", project, home=home, endpoint=endpoint):
            change.write()
    written = {
        "claude": project / ".mcp.json",
        "codex": project / ".codex" / "config.toml",
        "opencode": project / "opencode.json",
    }
    for agent, path in written.items():
        assert follows_the_agents_rules(agent, path)["url"] == "http://127.0.0.1:8420/mcp"
    # Another server added beside MemCastle's stays when MemCastle's goes.
    mcp = json.loads(written["claude"].read_text())
    mcp["mcpServers"]["mine"] = {"type": "stdio", "command": "mine-mcp"}
    written["claude"].write_text(json.dumps(mcp, indent=2) + "\n")
    for agent in ("claude", "codex", "opencode"):
        states = {s.kind: s.state for s in status(agent, "project", project, home=home, endpoint=endpoint)}
        assert states["mcp"] == "installed", agent
        for change in uninstall(agent, "project", project, home=home):
            change.write()
    assert json.loads(written["claude"].read_text()) == {
        "mcpServers": {"mine": {"type": "stdio", "command": "mine-mcp"}}
    }
    assert not written["codex"].exists() and not written["opencode"].exists(), "made for MemCastle, gone with it"


def test_a_port_chosen_at_start_registers_the_stdio_bridge() -> None:
    bridge = endpoint_of("0.0.0.0", 0, auth=False, palace="/palaces/work")
    assert bridge.url is None and bridge.bridge[-6:] == (
        "--palace",
        "/palaces/work",
        "mcp",
        "--start",
        "--tools",
        "core",
    )
    wildcard = endpoint_of("0.0.0.0", 9000, auth=False, palace=None)
    assert wildcard.url == "http://127.0.0.1:9000/mcp", "a wildcard bind is reached on loopback"


def test_a_configuration_that_cannot_be_kept_is_refused_naming_it(tmp_path: Path, monkeypatch: Any) -> None:
    home = tmp_path / "home"
    config = tmp_path / "opencode-config" / "opencode.json"
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", str(config.parent))  # OpenCode's own variable is honoured
    config.parent.mkdir(parents=True)
    config.write_text('{\n  // my theme\n  "theme": "nord"\n}\n')
    with pytest.raises(Exception) as refused:
        install("opencode", "user", tmp_path, home=home)
    assert f"{config}:2" in str(refused.value) and "comments cannot be kept" in str(refused.value)
    assert config.read_text() == '{\n  // my theme\n  "theme": "nord"\n}\n', "nothing was changed"


def test_the_header_written_is_the_profile_header() -> None:
    assert TOOLS_HEADER == (HEADER, "core") and set(INTEGRATIONS) >= {"claude", "codex", "opencode"}


def test_installing_with_no_daemon_says_what_to_do_next(cli_runner: Any, xdg_home: Any, tmp_path: Path) -> None:
    with socket.socket() as spare:  # a port where nothing answers
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    home = tmp_path / "home"
    env = xdg_home.env({"HOME": str(home), "MEMCASTLE_SERVER_PORT": str(port)})
    done = cli_runner(["--palace", str(tmp_path / "palace"), "--json", "integration", "install", "claude"], env=env)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["next"].startswith("next: start the daemon (`memcastle daemon start`)")
    assert f"127.0.0.1:{port}/mcp" in answer["next"]
    dry = cli_runner(["--palace", str(tmp_path / "palace"), "--json", "integration", "install", "codex", "--dry-run"],
                     env=env)  # fmt: skip
    assert "next" not in json.loads(dry.stdout), "a dry run changes nothing and promises nothing"
