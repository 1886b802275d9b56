// OpenCode: the wake-up bundle of a session is fetched at its first model request and added to the system prompt
// of each (`experimental.chat.system.transform`), with the search reminder on the turns its level picks (a user
// message arrives through `chat.message`); when a session goes idle (the agent finished answering) or is
// about to be compacted, it is mined (a daemon job, through `opencode export`; the same session idle twice within a
// moment is mined once).

const REMINE_AFTER_MS = 2000;

export const MemCastle = async ({ directory, client }) => {
  const memory = new Map();
  const mined = new Map();
  const prompts = new Map(); // a session's prompts so far, and whether this one gets the reminder
  const remindThisTurn = new Map();

  async function run(event, body) {
    const { out, err } = await memcastleHook(event, body);
    if (err) {
      try {
        await client?.app?.log?.({ body: { service: "memcastle", level: "warn", message: err } });
      } catch {
        // the log is a courtesy; the agent goes on
      }
    }
    return out;
  }

  async function mine(event, sessionID) {
    const now = Date.now();
    if (!sessionID || now - (mined.get(sessionID) ?? -Infinity) < REMINE_AFTER_MS) return;
    mined.set(sessionID, now);
    await run(event, { session_id: sessionID, cwd: directory });
  }

  return {
    event: async ({ event }) => {
      const properties = event.properties ?? {};
      const idle =
        event.type === "session.idle" || (event.type === "session.status" && properties.status?.type === "idle");
      if (idle) await mine("stop", properties.sessionID);
    },
    "experimental.session.compacting": async (input) => mine("pre-compact", input.sessionID),
    "chat.message": async (input, output) => {
      const key = input.sessionID ?? "";
      const count = (prompts.get(key) ?? 0) + 1;
      prompts.set(key, count);
      const text = (output?.parts ?? []).filter((part) => part.type === "text").map((part) => part.text);
      remindThisTurn.set(key, remindNow(text.join("\n"), count));
    },
    "experimental.chat.system.transform": async (input, output) => {
      const key = input.sessionID ?? "";
      if (!memory.has(key)) {
        memory.set(key, wakeUpText(await run("session-start", { session_id: key, cwd: directory })));
      }
      if (memory.get(key)) output.system.push(memory.get(key));
      if (remindThisTurn.get(key)) output.system.push(REMINDER);
    },
  };
};
