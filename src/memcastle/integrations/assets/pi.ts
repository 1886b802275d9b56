// Pi: `session_start` fetches the wake-up bundle, which `before_agent_start` appends to the system prompt of each
// prompt; `agent_end`, `session_before_compact` and `session_shutdown` have the session file mined (a daemon job: only
// what was added since the last mine is filed again), and a session started by `/new`, `/resume` or `/fork` has the
// one it left (`previousSessionFile`) mined too.
// Pi has no MCP: the extension registers MemCastle's tools itself. It lists the daemon's `core` tools on its MCP
// endpoint (stateless streamable HTTP, one POST a call) and registers each with Pi under the same name, description
// and JSON Schema; a call is forwarded as it is, and its answer — or its error, with its hint — comes back as it is.
// Plain JavaScript is valid TypeScript: Pi loads this file as it is, without a build step.

const MCP_PROTOCOL = "2026-07-28";
let requests = 0;

async function mcpRequest(method, params, name, signal) {
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": MCP_PROTOCOL,
    "Mcp-Method": method,
    "X-MemCastle-Tools": "core",
  };
  if (name) headers["Mcp-Name"] = name;
  const token = TOKEN_VARIABLE ? process.env[TOKEN_VARIABLE] : "";
  if (token) headers.Authorization = `Bearer ${token}`;
  const meta = {
    "io.modelcontextprotocol/protocolVersion": MCP_PROTOCOL,
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  let response;
  try {
    response = await fetch(MCP_URL, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: ++requests, method, params: { ...params, _meta: meta } }),
      signal: signal ?? AbortSignal.timeout(60000),
    });
  } catch (error) {
    const why = error.cause?.code ?? error.message;
    throw new Error(`MemCastle at ${MCP_URL} did not answer (${why}); start it with \`memcastle daemon start\``);
  }
  const answer = await response.json().catch(() => ({ error: { message: `HTTP ${response.status}` } }));
  if (answer.error) throw new Error(`MemCastle at ${MCP_URL}: ${answer.error.message}`);
  return answer.result;
}

export default function memcastle(pi) {
  let memory = "";
  let tools = null;

  function payload(ctx, file) {
    const sessions = ctx.sessionManager;
    return {
      session_id: sessions.getSessionId?.() ?? "",
      transcript_path: file ?? sessions.getSessionFile?.() ?? "",
      cwd: ctx.cwd,
    };
  }

  async function run(event, body, ctx) {
    const { out, err } = await memcastleHook(event, body);
    if (err && ctx.hasUI) ctx.ui.notify(err.split("\n")[0], "warning");
    return out;
  }

  async function wakeUp(ctx) {
    memory = wakeUpText(await run("session-start", payload(ctx), ctx));
  }

  async function mine(ctx, event, file) {
    const body = payload(ctx, file);
    if (body.transcript_path) await run(event, body, ctx);
  }

  function tool(listed) {
    return {
      name: listed.name,
      label: listed.name.replace(/^memcastle_/, "memcastle "),
      description: listed.description ?? "",
      parameters: listed.inputSchema ?? { type: "object", properties: {} },
      async execute(_toolCallId, params, signal) {
        const result = await mcpRequest("tools/call", { name: listed.name, arguments: params ?? {} }, listed.name, signal);
        const text = (result.content ?? []).filter((block) => block.type === "text").map((block) => block.text);
        if (result.isError) throw new Error(text.join("\n"));
        return { content: text.map((line) => ({ type: "text", text: line })), details: {} };
      },
    };
  }

  // The tools, once: at load when the daemon answers, else at the next session start or prompt (one attempt at a
  // time; the first failure is told to the user, and it is tried again at the next prompt).
  let registering = null;
  let told = false;
  async function attempt(ctx) {
    try {
      const listed = await mcpRequest("tools/list", {});
      for (const found of listed.tools) pi.registerTool(tool(found));
      tools = listed.tools.map((found) => found.name);
    } catch (error) {
      if (ctx?.hasUI && !told) ctx.ui.notify(`memcastle tools: ${error.message}`, "warning");
      told ||= Boolean(ctx?.hasUI);
    }
    registering = null;
    return tools;
  }
  function registerTools(ctx) {
    if (!MCP_URL && ctx?.hasUI && !told) {
      ctx.ui.notify("memcastle tools: the daemon's port is chosen at start (server.port = 0): set one and install again", "warning");
      told = true;
    }
    if (tools || !MCP_URL) return Promise.resolve(tools);
    registering ??= attempt(ctx);
    return registering;
  }
  registerTools(null);

  let prompts = 0;
  pi.on("session_start", async (event, ctx) => {
    prompts = 0;
    await registerTools(ctx);
    if (event?.previousSessionFile) await mine(ctx, "stop", event.previousSessionFile);
    await wakeUp(ctx);
  });
  pi.on("before_agent_start", async (event, ctx) => {
    await registerTools(ctx);
    prompts += 1;
    const added = [memory, tools && remindNow(event.prompt, prompts) ? REMINDER : ""].filter(Boolean);
    return added.length ? { systemPrompt: [event.systemPrompt, ...added].join("\n\n") } : undefined;
  });
  pi.on("agent_end", async (_event, ctx) => mine(ctx, "stop"));
  pi.on("session_before_compact", async (_event, ctx) => {
    await mine(ctx, "pre-compact");
  });
  pi.on("session_shutdown", async (_event, ctx) => mine(ctx, "stop"));
}
