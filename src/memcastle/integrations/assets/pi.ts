// Pi: `session_start` fetches the wake-up bundle, which `before_agent_start` appends to the system prompt of each
// prompt; `agent_end`, `session_before_compact`, `session_shutdown` and the session left by `/new`, `/resume` or
// `/fork` have the session file mined (a daemon job: only what was added since the last mine is filed again).
// Plain JavaScript is valid TypeScript: Pi loads this file as it is, without a build step.

export default function memcastle(pi) {
  let memory = "";

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

  pi.on("session_start", async (_event, ctx) => wakeUp(ctx));
  pi.on("session_switch", async (event, ctx) => {
    await mine(ctx, "stop", event.previousSessionFile);
    await wakeUp(ctx);
  });
  pi.on("session_fork", async (event, ctx) => mine(ctx, "stop", event.previousSessionFile));
  pi.on("before_agent_start", async (event) =>
    memory ? { systemPrompt: `${event.systemPrompt}\n\n${memory}` } : undefined,
  );
  pi.on("agent_end", async (_event, ctx) => mine(ctx, "stop"));
  pi.on("session_before_compact", async (_event, ctx) => {
    await mine(ctx, "pre-compact");
  });
  pi.on("session_shutdown", async (_event, ctx) => mine(ctx, "stop"));
}
