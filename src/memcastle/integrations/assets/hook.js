// MemCastle's bridge to `memcastle hook EVENT --agent AGENT`, the command Claude Code's and Codex CLI's hooks run:
// the payload goes to its standard input as JSON, the wake-up comes back on its standard output. It never throws and
// never waits past DEADLINE_MS: a hook that could not do its work says why in one line, and the agent goes on.
import { spawn } from "node:child_process";

const DEADLINE_MS = 5000;

function memcastleHook(event, payload) {
  return new Promise((resolve) => {
    let out = "";
    let err = "";
    let child;
    try {
      child = spawn(MEMCASTLE[0], [...MEMCASTLE.slice(1), "hook", event, "--agent", AGENT], {
        stdio: ["pipe", "pipe", "pipe"],
      });
    } catch (error) {
      resolve({ out: "", err: `memcastle hook ${event}: ${error}` });
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), DEADLINE_MS);
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (err += chunk));
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve({ out: "", err: `memcastle hook ${event}: ${error.message}` });
    });
    child.on("close", () => {
      clearTimeout(timer);
      resolve({ out, err: err.trim() });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

// The wake-up bundle's text, from the hook's `hookSpecificOutput` ("" when there is none).
function wakeUpText(out) {
  try {
    return JSON.parse(out).hookSpecificOutput.additionalContext || "";
  } catch {
    return "";
  }
}

// The per-turn reminder to search memory first, at the level chosen at install (`hooks.reminder`), by the same rule
// as `memcastle hook prompt`: always; sometimes — a session's first prompt, one asking about past work, every
// REMIND_EVERY-th; off.
function remindNow(prompt, count) {
  if (REMINDER_LEVEL === "always") return true;
  if (REMINDER_LEVEL !== "sometimes") return false;
  return count === 1 || count % REMIND_EVERY === 0 || new RegExp(CUES, "i").test(prompt ?? "");
}
