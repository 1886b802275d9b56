"""Agent integrations: `memcastle integration list/install/uninstall` over the four agents, and the Pi extension and
the OpenCode plugin they write, loaded by Node and driven the way Pi and OpenCode drive them (their documented event
names, handler arguments and context objects), against a real daemon."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from agent_logs import ASSISTANT, CONVERSATION, install_opencode, write_session
from waiting import CEILING, wait_until

from memcastle.errors import ConfigError
from memcastle.hooks.dispatch import REMINDER
from memcastle.integrations import INTEGRATIONS, endpoint_of, install, status, uninstall
from memcastle.mcp.profiles import CORE
from memcastle.mcp.tools import TOOLS

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="the Pi extension and the OpenCode plugin are JavaScript")

# Pi's extension events (packages/coding-agent/docs/extensions.md; not `session_switch` and `session_fork`, which
# the newest Pi folds into `session_start` with a `reason` and the `previousSessionFile`) and OpenCode's plugin hooks
# (packages/plugin/src/index.ts): what the written files may register for.
PI_EVENTS = {
    "session_directory", "session_start", "session_before_switch", "session_before_fork", "session_before_compact",
    "session_compact", "session_before_tree", "session_tree", "session_shutdown", "before_agent_start",
    "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update", "message_end",
    "tool_execution_start", "tool_execution_update", "tool_execution_end", "context", "before_provider_request",
    "model_select", "tool_call", "tool_result", "user_bash", "input",
}  # fmt: skip
OPENCODE_HOOKS = {
    "event", "config", "tool", "auth", "chat.message", "chat.params", "permission.ask", "tool.execute.before",
    "tool.execute.after", "shell.env", "experimental.chat.messages.transform", "experimental.chat.system.transform",
    "experimental.session.compacting",
}  # fmt: skip

# Loads the written file as Pi does (its default export called with the extension API), then fires the events Pi
# fires with the context Pi passes; prints what the handlers returned and what they told the user.
PI_DRIVER = """
const [file, sessionFile, cwd, ...events] = process.argv.slice(2);
const handlers = {};
const notices = [];
const tools = {};
const pi = {
  on: (name, handler) => (handlers[name] ??= []).push(handler),
  registerTool: (tool) => (tools[tool.name] = tool),
};
(await import(file)).default(pi);
const ctx = {
  cwd, hasUI: true, ui: { notify: (message, level) => notices.push([level, message]) },
  sessionManager: { getSessionFile: () => sessionFile, getSessionId: () => "0199a3c1-7d2e", getCwd: () => cwd },
};
const results = {};
for (const name of events) {
  const event = name === "before_agent_start" ? { type: name, prompt: "hi", systemPrompt: "BASE PROMPT" }
    : name === "session_start" && process.env.PI_PREVIOUS
    ? { type: name, reason: "new", previousSessionFile: process.env.PI_PREVIOUS }
    : { type: name };
  for (const handler of handlers[name] ?? []) results[name] = (await handler(event, ctx)) ?? null;
}
// Then the model's tool calls, as Pi makes them: execute(toolCallId, params, signal, onUpdate, ctx).
const calls = [];
for (const [tool, params] of JSON.parse(process.env.PI_TOOL_CALLS ?? "[]")) {
  try {
    calls.push({ tool, result: await tools[tool].execute("call-1", params, undefined, undefined, ctx) });
  } catch (error) {
    calls.push({ tool, error: error.message });
  }
}
const listed = Object.values(tools).map(({ name, description, parameters }) => ({ name, description, parameters }));
console.log(JSON.stringify({ registered: Object.keys(handlers), results, notices, tools: listed, calls }));
"""

# Loads the written file as OpenCode does (each exported plugin function called with the plugin input), then calls
# its hooks with OpenCode's arguments.
OPENCODE_DRIVER = """
const [file, cwd, session] = process.argv.slice(2);
const logs = [];
const client = { app: { log: async (entry) => logs.push(entry) } };
// As OpenCode 1.x's `applyPlugin` does: a default `{ id, server }` (`readV1Plugin`), its `server` called once.
const mod = await import(file);
if (Object.keys(mod).join() !== "default" || typeof mod.default.id !== "string") throw new Error("not { id, server }");
const input = { directory: cwd, worktree: cwd, project: { id: "prj_1" }, client, $: undefined };
const hooks = await mod.default.server(input);
const output = { system: ["BASE PROMPT"] };
const message = { message: {}, parts: [{ type: "text", text: "What did we decide about the keys?" }] };
await hooks["chat.message"]({ sessionID: session, agent: "build" }, message);
await hooks["experimental.chat.system.transform"]({ sessionID: session, model: {} }, output);
await hooks.event({ event: { type: "message.updated", properties: { info: { sessionID: session } } } });
await hooks.event({ event: { type: "session.status", properties: { sessionID: session, status: { type: "idle" } } } });
await hooks.event({ event: { type: "session.idle", properties: { sessionID: session } } });
console.log(JSON.stringify({ registered: Object.keys(hooks), system: output.system, logs }));
"""

# Loads the written file as OpenCode 2's config-plugin loader does (a default `{ id, setup }`), calls `setup` with a
# context that offers the session's `request.before` hook, then makes two model requests of one turn and a second
# turn, as the host sends them; the session then goes quiet (option `idleMs`) and the cleanup runs at exit.
OPENCODE2_DRIVER = """
const [file, cwd, session] = process.argv.slice(2);
process.chdir(cwd);
const { default: plugin } = await import(file);
if (typeof plugin.id !== "string" || typeof plugin.setup !== "function") throw new Error("not { id, setup }");
const before = [];
const cleanup = await plugin.setup({
  options: { idleMs: 300 },
  session: { request: { before: async (callback) => (before.push(callback), { dispose: async () => {} }) } },
});
const user = (text) => ({ role: "user", content: [{ type: "text", text }] });
const requests = [
  [user("What did we decide about the keys?")],
  [user("What did we decide about the keys?"), { role: "assistant", content: "Looking." }],
  [user("What did we decide about the keys?"), { role: "assistant", content: "Monday." }, user("Thanks, go on.")],
];
const systems = [];
for (const messages of requests) {
  const event = { sessionID: session, agent: "build", model: {}, system: [{ type: "text", text: "BASE PROMPT" }],
    messages, tools: {} };
  for (const callback of before) await callback(event);
  systems.push(event.system.map((part) => part.text));
}
console.log(JSON.stringify({ hooks: before.length, systems, cleanup: typeof cleanup }));
await new Promise((resolve) => setTimeout(resolve, 1500));
"""


def drive(driver: str, installed: Path, *args: str, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run a driver in Node over a copy of the written file (Node reads a `.ts` as TypeScript only past 22)."""
    module = cwd / f"loaded-{installed.stem}.mjs"
    shutil.copyfile(installed, module)
    (cwd / "driver.mjs").write_text(driver, encoding="utf-8")
    assert NODE is not None
    done = subprocess.run(
        [NODE, "driver.mjs", str(module), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=CEILING
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_install_list_and_uninstall_over_the_four_agents(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "shop"
    project.mkdir()
    claude_settings = home / ".claude" / "settings.json"
    claude_settings.parent.mkdir(parents=True)
    claude_settings.write_text('{"model": "opus"}\n')
    for name in INTEGRATIONS:
        for change in install(name, "user", project, home=home):
            assert change.changed
            change.write()
        assert {s.state for s in status(name, "user", project, home=home)} == {"installed"}, name
        assert not any(c.changed for c in install(name, "user", project, home=home)), "installing again: no change"
    assert json.loads(claude_settings.read_text())["model"] == "opus"
    skill = (home / ".claude" / "skills" / "memcastle" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: memcastle\ndescription: ")  # the Agent Skills frontmatter
    named = set(re.findall(r"memcastle_[a-z_]+", skill))
    assert named and named <= set(TOOLS), "the skill names only tools that exist"
    assert (home / ".pi" / "agent" / "extensions" / "memcastle.ts").exists()
    # For another palace, the extension (which names the palace) is no longer what installing would write.
    elsewhere = {s.kind: s.state for s in status("pi", "user", project, palace="/elsewhere", home=home)}
    assert elsewhere == {"extension": "outdated", "skill": "installed", "command": "installed"}
    for name in INTEGRATIONS:
        for change in uninstall(name, "user", project, home=home):
            change.write()
        assert {s.state for s in status(name, "user", project, home=home)} == {"missing"}, name
    assert json.loads(claude_settings.read_text()) == {"model": "opus"}
    assert not (home / ".claude" / "skills" / "memcastle").exists(), "the skill's own folder goes with it"
    assert (home / ".pi" / "agent" / "extensions").is_dir(), "Pi's own folder stays"


def test_a_file_of_the_users_own_is_never_overwritten_or_removed(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    mine = project / ".opencode" / "plugins" / "memcastle.js"
    mine.parent.mkdir(parents=True)
    mine.write_text("export const Mine = async () => ({})\n")
    with pytest.raises(ConfigError) as refused:
        install("opencode", "project", project)
    assert str(mine) in refused.value.message and "not MemCastle's" in refused.value.message
    assert {s.kind: s.state for s in status("opencode", "project", project)} == {
        "plugin": "foreign",
        "skill": "missing",
        "command": "missing",
        "mcp": "missing",
    }
    assert not any(c.changed for c in uninstall("opencode", "project", project))
    assert mine.read_text() == "export const Mine = async () => ({})\n"


def test_the_cli_shows_a_dry_run_installs_lists_and_uninstalls(daemon: Any, tmp_path: Path) -> None:
    served = daemon()
    project = tmp_path / "shop"
    project.mkdir()
    where = ("--scope", "project", "--project", str(project))
    dry = json.loads(served.cli("--json", "integration", "install", "claude", *where, "--dry-run").stdout)
    assert dry["dry_run"] and [Path(c["file"]).name for c in dry["changes"]] == [
        "settings.json",
        "SKILL.md",
        "memcastle-checkpoint.md",
        ".mcp.json",
    ]
    assert not (project / ".claude").exists()
    done = served.cli("--json", "integration", "install", "opencode", *where)
    assert done.returncode == 0, done.stderr
    listed = json.loads(served.cli("--json", "integration", "list", "--project", str(project)).stdout)
    states = {(r["integration"], r["scope"], r["kind"]): r["state"] for r in listed["integrations"]}
    assert states[("opencode", "project", "plugin")] == "installed"
    assert states[("claude", "project", "skill")] == "missing"
    gone = json.loads(served.cli("--json", "integration", "uninstall", "opencode", *where).stdout)
    assert gone["changes"][0]["removed"] and not (project / ".opencode" / "plugins" / "memcastle.js").exists()
    unknown = served.cli("integration", "install", "cursor")
    assert unknown.returncode == 2 and "cursor" in unknown.stderr


@needs_node
def test_the_pi_extension_wakes_up_and_has_the_session_mined(daemon: Any, tmp_path: Path) -> None:
    served = daemon()
    with served.http() as http:
        saved = {"agent": "pi", "items": [{"content": "Decided: staging deploys go through port 8443."}]}
        assert http.post("/api/checkpoint", json=saved).status_code == 201
    project = served.home.root / "atlas-app"
    project.mkdir()
    port = {"MEMCASTLE_SERVER_PORT": served.address.rsplit(":", 1)[1]}  # the address the extension is written for
    where = ("--scope", "project", "--project", str(project))
    assert served.cli("integration", "install", "pi", *where, extra_env=port).returncode == 0
    extension = project / ".pi" / "extensions" / "memcastle.ts"
    sessions = served.home.root / ".pi" / "agent" / "sessions"
    session_file = write_session(sessions, str(project), "0199a3c1-7d2e", CONVERSATION, "2026-03-02T09:00:00.000Z")
    events = ("session_start", "before_agent_start", "agent_end", "session_shutdown")
    calls = [
        ["memcastle_search", {"query": "staging deploys port", "ranking": "lexical"}],
        ["memcastle_checkpoint", {"agent": "pi", "items": [{"content": "Decided: Pi files its own checkpoints."}]}],
        ["memcastle_get_drawer", {"drawer_id": "zzzzzzzz"}],
    ]
    env = {**served.env, "PI_TOOL_CALLS": json.dumps(calls)}
    answer = drive(PI_DRIVER, extension, str(session_file), str(project), *events, env=env, cwd=tmp_path)
    assert set(answer["registered"]) <= PI_EVENTS and {"session_start", "agent_end"} <= set(answer["registered"])
    assert answer["notices"] == []
    prompt = answer["results"]["before_agent_start"]["systemPrompt"]
    assert prompt.startswith("BASE PROMPT\n\n") and "port 8443" in prompt
    assert prompt.endswith("\n\n" + REMINDER), "a session's first prompt carries the reminder"
    # Pi's model has the core tools, as every MCP client of the integrations has them (ADR 0052).
    assert {tool["name"] for tool in answer["tools"]} == set(CORE) - {"memcastle_set_mode"}, "no session: no set_mode"
    for tool in answer["tools"]:
        assert tool["description"] and tool["parameters"]["type"] == "object", tool
    searched, filed, missing = answer["calls"]
    (hit, *_) = json.loads(searched["result"]["content"][0]["text"])["hits"]
    assert "8443" in hit["snippet"]["text"]
    (written,) = json.loads(filed["result"]["content"][0]["text"])["drawers"]
    with served.http() as http:
        assert http.get(f"/api/drawers/{written['id']}").json()["content"] == "Decided: Pi files its own checkpoints."
    assert "no drawer" in missing["error"] and "hint: " in missing["error"], "an error reaches the model with its hint"

    def search(words: str) -> list[dict[str, Any]]:
        with served.http() as http:
            return http.post("/api/search", json={"query": words, "ranking": "lexical"}).json()["hits"]

    hits = wait_until(lambda: search("why does the deploy fail"), what="the Pi session to be mined")
    assert hits[0]["drawer"]["source"]["origin"]["connector"] == "pi"
    with served.http() as http:
        mines = http.get("/api/jobs", params={"kind": "mine"}).json()["jobs"]
    relative = session_file.relative_to(sessions).as_posix()
    assert mines and all(j["params"]["options"] == {"session": relative} for j in mines)


@needs_node
def test_without_a_daemon_the_pi_extension_says_why_and_pi_goes_on(tmp_path: Path, xdg_home: Any) -> None:
    project = tmp_path / "app"
    for change in install("pi", "project", project):
        change.write()
    env = xdg_home.env()
    answer = drive(PI_DRIVER, project / ".pi" / "extensions" / "memcastle.ts", "", str(project), "session_start",
                   "before_agent_start", env=env, cwd=tmp_path)  # fmt: skip
    assert answer["results"]["before_agent_start"] is None, "the prompt is left as it was"
    (hook, tools) = sorted(answer["notices"], key=lambda notice: notice[1])
    assert hook[0] == "warning" and hook[1].startswith("memcastle hook session-start: ")
    assert tools[0] == "warning" and tools[1].startswith("memcastle tools: MemCastle at http://127.0.0.1:8420/mcp")
    assert answer["tools"] == [], "none registered; told once, tried again at the next prompt"


@needs_node
def test_the_opencode_plugin_wakes_up_and_has_the_idle_session_mined_once(daemon_process: Any, tmp_path: Path) -> None:
    """Under both of OpenCode's loaders: 1.x (`server`, session `ses_a`) and 2 (`setup`, session `ses_b`)."""
    project = tmp_path / "app"
    project.mkdir()
    history = [("ses_a", str(project), 1_770_000_000_000), ("ses_b", str(project), 1_770_000_000_000)]
    bin_dir = install_opencode(tmp_path, history, ASSISTANT)
    served = daemon_process(extra_env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    with served.http() as http:
        saved = {"agent": "opencode", "items": [{"content": "Decided: rotate the keys every Monday."}]}
        assert http.post("/api/checkpoint", json=saved).status_code == 201
    done = served.cli("integration", "install", "opencode", "--scope", "project", "--project", str(project))
    assert done.returncode == 0, done.stderr
    plugin = project / ".opencode" / "plugins" / "memcastle.js"
    answer = drive(OPENCODE_DRIVER, plugin, str(project), "ses_a", env=served.env, cwd=tmp_path)
    assert set(answer["registered"]) <= OPENCODE_HOOKS and answer["logs"] == []
    assert answer["system"][0] == "BASE PROMPT" and "every Monday" in answer["system"][1]
    assert answer["system"][2] == REMINDER, "a question about the past gets the reminder (hooks.reminder sometimes)"

    def mined() -> list[dict[str, Any]]:
        with served.http() as http:
            jobs = http.get("/api/jobs", params={"kind": "mine"}).json()["jobs"]
        return [j for j in jobs if j["status"] == "completed"]

    (job,) = wait_until(mined, what="the idle session to be mined")
    assert job["params"]["connector"] == "opencode" and job["params"]["options"] == {"session": "ses_a"}
    assert job["result"]["created"] >= 1
    with served.http() as http:
        (hit, *_) = http.post("/api/search", json={"query": "rotation script", "ranking": "lexical"}).json()["hits"]
    assert hit["drawer"]["source"]["uri"] == "opencode://session/ses_a"

    answer = drive(OPENCODE2_DRIVER, plugin, str(project), "ses_b", env=served.env, cwd=tmp_path)
    assert answer["hooks"] == 1 and answer["cleanup"] == "function"
    first, same_turn, second = answer["systems"]
    assert first[0] == "BASE PROMPT" and "every Monday" in first[1] and first[2] == REMINDER, "turn 1, about the past"
    assert same_turn == first, "each request of a turn carries the same bundle and reminder"
    assert second == first[:2], "turn 2 neither asks about the past nor is a tenth: no reminder"
    both = wait_until(lambda: len(mined()) == 2 and mined(), what="the quiet session to be mined")
    assert sorted(j["params"]["options"]["session"] for j in both) == ["ses_a", "ses_b"]


def test_each_agent_gets_a_checkpoint_command_in_its_own_folder_and_format(tmp_path: Path, monkeypatch: Any) -> None:
    home, project = tmp_path / "home", tmp_path / "shop"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for variable in ("OPENCODE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR"):
        monkeypatch.delenv(variable, raising=False)
    where = {
        "claude": home / ".claude" / "commands",
        "codex": home / ".codex" / "prompts",  # Codex reads prompts from its home only (`/prompts:NAME`)
        "opencode": home / ".config" / "opencode" / "command",
        "pi": home / ".pi" / "agent" / "prompts",  # Pi's prompt templates
    }
    for name in INTEGRATIONS:
        for change in install(name, "user", project, home=home):
            change.write()
        text = (where[name] / "memcastle-checkpoint.md").read_text()
        _, front, body = text.split("---\n", 2)
        meta = yaml.safe_load(front)  # the agents read YAML frontmatter; MemCastle's mark is a comment in it
        assert set(meta) == {"description", "argument-hint"} and f"memcastle integration install {name}" in front
        assert "$ARGUMENTS" in body and "memcastle_checkpoint" in body and "decision" in body, name
        for change in uninstall(name, "user", project, home=home):
            change.write()
        assert not (where[name] / "memcastle-checkpoint.md").exists()
    assert not any(c.kind == "command" for c in status("codex", "project", project, home=home))


@needs_node
def test_a_pi_extension_written_for_a_port_chosen_at_start_says_it_has_no_tools(tmp_path: Path, xdg_home: Any) -> None:
    project = tmp_path / "app"
    for change in install("pi", "project", project, endpoint=endpoint_of("127.0.0.1", 0, auth=False, palace=None)):
        change.write()
    answer = drive(PI_DRIVER, project / ".pi" / "extensions" / "memcastle.ts", "", str(project), "session_start",
                   env=xdg_home.env(), cwd=tmp_path)  # fmt: skip
    assert answer["tools"] == [] and any("server.port = 0" in message for _, message in answer["notices"])
