// The journal connector: MemCastle writes one JSON request line on standard input and reads JSON lines back.
//   {"op": "list", "locator", "options", "cursor"} -> {"id", "cursor"} per day after the cursor, oldest first
//   {"op": "read", "locator", "options", "id"}     -> {"body", "title", "occurred_at", "metadata"}
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const request = JSON.parse(readFileSync(0, "utf8").split("\n")[0]);
const folder = request.locator;
const tag = request.options?.tag;
const day = /^(\d{4}-\d{2}-\d{2})\.txt$/;
const out = (value) => process.stdout.write(JSON.stringify(value) + "\n");

if (request.op === "list") {
  const days = readdirSync(folder).filter((name) => day.test(name)).sort();
  for (const name of days) {
    const date = name.slice(0, 10);
    if (request.cursor && date <= request.cursor) continue;
    if (tag && !readFileSync(join(folder, name), "utf8").includes(`#${tag}`)) continue;
    out({ id: name, cursor: date });
  }
} else if (request.op === "read") {
  const text = readFileSync(join(folder, request.id), "utf8");
  const date = request.id.slice(0, 10);
  out({
    body: text,
    title: `Journal, ${date}`,
    occurred_at: `${date}T00:00:00Z`,
    metadata: { day: date, words: text.split(/\s+/).filter(Boolean).length },
  });
} else {
  process.stderr.write(`unknown op ${request.op}\n`);
  process.exit(2);
}
