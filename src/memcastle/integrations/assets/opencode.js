// OpenCode: the wake-up bundle of a session is fetched at its first model request and added to the system prompt
// of each, with the search reminder on the turns its level picks; a session is mined (a daemon job, through
// `opencode export`) when it goes idle or is about to be compacted — the same session twice within a moment is
// mined once.
//
// One default export serves both plugin loaders: OpenCode 1.x reads `{ id, server }` (`readV1Plugin`,
// packages/opencode/src/plugin/shared.ts) and calls `server(input)` for its hooks; OpenCode 2 decodes `{ id, setup }`
// (packages/core/src/config/plugin/external.ts) and calls `setup(context)`, where the plugin registers what that
// host offers. Each loader ignores the other's key. Nothing else is exported: a loader that calls every export would
// otherwise start the plugin twice.

const REMINE_AFTER_MS = 2000;
const QUIET_MS = 60000; // OpenCode 2: a session with no model request for this long is idle (option `idleMs`)

// What both entry points share: one wake-up per session, the reminder by turn, mining at most once a moment.
function sessions(directory, warn) {
  const memory = new Map();
  const mined = new Map();

  async function run(event, body) {
    const { out, err } = await memcastleHook(event, body);
    if (err) await warn(err);
    return out;
  }

  return {
    async wakeUp(sessionID) {
      const key = sessionID ?? "";
      if (!memory.has(key)) memory.set(key, wakeUpText(await run("session-start", { session_id: key, cwd: directory })));
      return memory.get(key);
    },
    async mine(event, sessionID) {
      const now = Date.now();
      if (!sessionID || now - (mined.get(sessionID) ?? -Infinity) < REMINE_AFTER_MS) return;
      mined.set(sessionID, now);
      await run(event, { session_id: sessionID, cwd: directory });
    },
  };
}

// OpenCode 1.x: hooks returned from `server`; a user message arrives through `chat.message`, each model request's
// system prompt through `experimental.chat.system.transform`, idle sessions through `event`.
async function server({ directory, client }) {
  const log = async (message) => {
    try {
      await client?.app?.log?.({ body: { service: "memcastle", level: "warn", message } });
    } catch {
      // the log is a courtesy; the agent goes on
    }
  };
  const memcastle = sessions(directory, log);
  const prompts = new Map(); // a session's prompts so far
  const remindThisTurn = new Map();

  return {
    event: async ({ event }) => {
      const properties = event.properties ?? {};
      const idle =
        event.type === "session.idle" || (event.type === "session.status" && properties.status?.type === "idle");
      if (idle) await memcastle.mine("stop", properties.sessionID);
    },
    "experimental.session.compacting": async (input) => memcastle.mine("pre-compact", input.sessionID),
    "chat.message": async (input, output) => {
      const key = input.sessionID ?? "";
      const count = (prompts.get(key) ?? 0) + 1;
      prompts.set(key, count);
      const text = (output?.parts ?? []).filter((part) => part.type === "text").map((part) => part.text);
      remindThisTurn.set(key, remindNow(text.join("\n"), count));
    },
    "experimental.chat.system.transform": async (input, output) => {
      const key = input.sessionID ?? "";
      const bundle = await memcastle.wakeUp(key);
      if (bundle) output.system.push(bundle);
      if (remindThisTurn.get(key)) output.system.push(REMINDER);
    },
  };
}

// The text a message holds, whether its content is a string or a list of parts.
function textOf(message) {
  const content = message?.content;
  if (typeof content === "string") return content;
  return (Array.isArray(content) ? content : []).filter((part) => part?.type === "text").map((part) => part.text).join("\n");
}

// OpenCode 2: `setup(context)` registers on the session's `request.before` hook (its event carries the session id,
// the messages so far and the system parts the request will send); the turn is the number of user messages, and a
// session whose requests stop for `idleMs` is mined. A host without that hook gets nothing registered rather than an
// error: the MCP tools (opencode.json) and the skill still reach the model.
async function setup(context) {
  const before = context?.session?.request?.before ?? context?.hook?.session?.request?.before;
  if (typeof before !== "function") return;
  const memcastle = sessions(process.cwd(), async () => {});
  const quietMs = Number(context.options?.idleMs) > 0 ? Number(context.options.idleMs) : QUIET_MS;
  const timers = new Map();

  function mineWhenQuiet(sessionID) {
    clearTimeout(timers.get(sessionID));
    const timer = setTimeout(() => {
      timers.delete(sessionID);
      memcastle.mine("stop", sessionID);
    }, quietMs);
    timer.unref?.();
    timers.set(sessionID, timer);
  }

  await before(async (event) => {
    const key = event.sessionID ?? "";
    const asked = (event.messages ?? []).filter((message) => message?.role === "user");
    const bundle = await memcastle.wakeUp(key);
    if (bundle) event.system.push({ type: "text", text: bundle });
    if (remindNow(textOf(asked.at(-1)), asked.length)) event.system.push({ type: "text", text: REMINDER });
    if (key) mineWhenQuiet(key);
  });
  return async () => {
    for (const [sessionID, timer] of timers) {
      clearTimeout(timer);
      await memcastle.mine("stop", sessionID);
    }
  };
}

export default { id: "memcastle", server, setup };
