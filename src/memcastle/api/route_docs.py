"""What each REST route takes and answers, as docs/http-api.md's Endpoints table says it (`api.reference` writes the
table with cog from the routes themselves: a route without an entry here fails the generation, and an entry without
a route too)."""

from __future__ import annotations

# "METHOD path" (the route's own path) → (what it takes: body or query; what it answers).
ROUTE_DOCS: dict[str, tuple[str, str]] = {
    "GET /api/health": ("", '`{"ok": true}`'),
    "GET /api/status": (
        "",
        "`ok`, `version`, `palace`, `store {backend, location}`, `drawers` (current), `drawers_total`, `jobs` "
        "(count per status), `embeddings`, `extraction`, `warnings`; `daemon {pid, address, started_at, "
        "uptime_seconds, mode, auth, logging {level, format}}` (pid and address null for a palace used in-process); "
        "`schema {version, latest, pending_migrations}` (null for a token limited to some wings)",
    ),
    "POST /api/status/acknowledge": (
        "`{}`",
        '`{"acknowledged": n}`: clears the notices among `warnings` — what the daemon did on its own, such as '
        "rebuilding a damaged vector cache — which stay until acknowledged (a scoped token: 403)",
    ),
    "GET /api/config": (
        "",
        "`{config_file, settings: [{key, value, origin, description}]}`: the daemon's effective settings and where "
        "each came from (`default`, `file PATH`, `env MEMCASTLE_…`, `flag`), tokens and API keys as `********`, a "
        "URL's password masked; refused (403) for a token limited to some wings; `memcastle config show --daemon` "
        "prints it",
    ),
    "POST /api/notes": (
        "`{content, wing?, room?, tags?, agent?, name?, expires_at?, idempotency_key?}` (`expires_at`: an RFC 3339 "
        "instant or a duration from now, `7d`)",
        '201 `{"drawer": Drawer, "created": true, "replayed": false}`, or 200 with `created: false` and the '
        "existing drawer for an exact unnamed copy in the same room; 200 with `replayed: true` for a retry with the "
        "same idempotency key. With `emergency: true` (a session about to end): checked as a write would be (a 400 "
        "names the item's field), then queued as a durable high-priority `checkpoint` job and answered at once with "
        '202 `{"job": Job}` — written even if the client is gone; the job\'s `result` names the drawers',
    ),
    "GET /api/drawers/{drawer_id}": ("", "the drawer"),
    "GET /api/drawers/{drawer_id}/history": ("", '`{"versions": [Drawer…]}` oldest first'),
    "POST /api/drawers/{drawer_id}/marks": (
        "`{pinned?, hidden?}`",
        "the drawer: pinned always enters its wing's wake-up and recall; hidden is left out of search, recall and "
        "wake-up unless `include_hidden` (see [lifecycle.md](lifecycle.md)); later versions keep the marks",
    ),
    "PUT /api/drawers/{drawer_id}/embedding": (
        "`{vector}`",
        "200 `{drawer_id, model, embedded, dimension, supplied: true}`: your own vector for a current drawer, of "
        "the palace's dimension, stored (normalized) as its one passage for the model searches rank by and searched "
        "at once; marked `supplied`, and kept while that model stays (an embed sweep leaves it); when "
        "`embeddings.model` changes, the drawer is embedded by the new model like any other. 400 naming `vector` "
        "for another dimension, a zero or non-finite vector, or a palace without embeddings",
    ),
    "GET /api/drawers/{drawer_id}/embedding": (
        "",
        "`{drawer_id, model, embedded, dimension, supplied}` for the model searches rank by",
    ),
    "POST /api/drawers/{drawer_id}/invalidate": (
        "`{reason}`",
        '200, the drawer closed with no replacement (`valid_to` now, `closed_reason` "invalidated: …"): searches of '
        "now no longer return it, history and time travel do; 400 naming `reason` when it is missing or blank; 409 "
        "when it was already closed",
    ),
    "POST /api/drawers/{drawer_id}/supersede": (
        "`{content, reason?, agent?}`",
        "201, the replacement drawer (its `source.agent` the corrector: `agent`, else the token's name), with "
        "`reason` in its `provenance` (409 when the drawer was already closed)",
    ),
    "GET /api/wings": ("", '`{"wings": [{name, drawers, created_at}]}`'),
    "POST /api/wings": (
        "`{name}`",
        "201 the new empty wing with its totals and `created: true`; 200 with `created: false` when it existed",
    ),
    "GET /api/wings/{wing}": (
        "",
        "`{wing, created_at, drawers (current), versions (every version), rooms, last_filed_at}`; 404 for an "
        "unknown wing",
    ),
    "GET /api/wings/{wing}/rooms": ("", '`{"rooms": [{wing, name, drawers, created_at}]}`'),
    "POST /api/wings/{wing}/rooms": (
        "`{name}`",
        "201 the new empty room (its wing made too when new) with its totals, `created: true`; 200 when it existed",
    ),
    "GET /api/wings/{wing}/rooms/{room}": ("", "`{wing, room, created_at, drawers, versions, last_filed_at}`"),
    "GET /api/drawers": (
        "`?wing=&room=&limit=&after=`",
        '`{"drawers": [Drawer…], "next_after": id or null}` (current drawers)',
    ),
    "POST /api/search": ("see below", '`{"hits": [Hit…], "ranking": used, "warnings": […]}`'),
    "GET /api/search": (
        "every field of the search request as a query parameter: `q` (or `query`), `wing`, `room`, `tag` (repeated) "
        "or `tags` (comma-separated), `limit`, `ranking`, `as_of`, `from`, `until`, `full=false`, `max_chars`, …",
        "as `POST /api/search`: a search as a link; an unknown or repeated parameter, or a wrong value, is a 400 "
        "naming it",
    ),
    "GET /api/recall": ("the same parameters", "as `POST /api/recall`"),
    "POST /api/recall": (
        "the search request without `room`",
        "like search: the agent-facing search over a whole wing, with `pinned: [Drawer…]` — the wing's pinned "
        "drawers the search did not find",
    ),
    "GET /api/drawers/{drawer_id}/preference": (
        "",
        "the preference resolution trace: `result {level, connector, criterion, adjustment}`, `steps`, each "
        "criterion tried with the value `found`, `matched`, `won`",
    ),
    "GET /api/preferences": (
        "",
        "the effective source-preference policy, each field with the `layer` it came from (see "
        "[preferences.md](preferences.md))",
    ),
    "POST /api/embed": (
        "`{}`",
        '202 `{"job": Job}`: fill missing embeddings (joins a queued sweep); `job: null` when embeddings are off',
    ),
    "POST /api/lifecycle/erase": (
        "`{}`",
        '202 `{"job": Job}`: erase for good what `[[lifecycle]]` rules with `forget_after` expired long enough ago '
        "(the daemon asks at start and hourly); `job: null` when no rule erases",
    ),
    "POST /api/diary": ("`{agent, content, wing?}`", '201 `{"drawer": Drawer}` in room `diary`'),
    "GET /api/diary": ("`?agent=&wing=&limit=`", '`{"entries": [Drawer…]}` newest first'),
    "GET /api/wake-up": (
        "`?agent=&wing=&max_items=&max_bytes=`",
        "`{agent, wing, diary: [Drawer], checkpoints: [Drawer], bytes, omitted}`: the agent's latest diary entry "
        "and its own most recent checkpoints (with `wing`, its project: that wing's and the default wing's), "
        "trimmed by whole drawers; read through an index of the agent's drawers, so its cost follows the answer, "
        "not the palace",
    ),
    "POST /api/checkpoint": (
        "`{items: [{content, wing?, room?, name?, tags?, expires_at?, fact?}], agent?, idempotency_key?}` (`fact` "
        "as in `POST /api/facts`; the checkpoint drawer is its evidence)",
        '201 `{"drawers": [Drawer…], "replayed": false}`: decisions and state saved as drawers tagged `checkpoint` '
        "(room `checkpoints` by default); 200 with `replayed: true` for a retry with the same idempotency key",
    ),
    "GET /api/drawers/{drawer_id}/duplicates": (
        "",
        '`{"duplicates": [{drawer, verdict: exact\\|normalized\\|near, similarity, linked_at}]}` — linked copies, '
        "never merged",
    ),
    "POST /api/extract": (
        "`{}`",
        '202 `{"job": Job}`: read new drawers for entities and facts (joins a queued sweep); `job: null` when '
        "extraction is off",
    ),
    "GET /api/facts": (
        "`?subject=&predicate=&object=&state=&as_of=&limit=`",
        '`{"facts": [Fact…]}`; subject/object are entity names',
    ),
    "GET /api/facts/{fact_id}": ("`?as_of=`", "the fact with its lifecycle"),
    "GET /api/facts/{fact_id}/history": (
        "`as_of`",
        '`{"facts": [Fact…]}`: the fact and everything transitively linked, by valid_from; with `as_of`, as it '
        "stood then (the facts valid by that instant, in their states at it)",
    ),
    "POST /api/facts": (
        "`{subject, predicate, object, confidence?, valid_from?, subject_kind?, object_kind?, evidence_drawer?}`",
        "201, the explicit fact",
    ),
    "GET /api/graph": (
        "query: `entity=NAME\\|ID` or `drawer=ID`, `[&depth=1\\|2][&limit=N]`",
        "the entities and facts around an entity — by its name or an alias (any case), else its id — (or around the "
        "entities a drawer mentions), for a picture: `{nodes: [{id, kind: entity\\|fact\\|drawer, label, …}], edges: "
        "[{from, to, kind}], truncated}` — an entity node per entity (`type`, `seed`), a fact node per fact "
        "(`state`, preference `level`) with `subject` and `object` edges, the facts' `confirms` / `contradicts` / "
        "`supersedes` / … links as edges between fact nodes, a drawer's `mentions`; `depth` 2 adds the facts of the "
        "entities reached; at most `limit` facts (default 50, at most 200), `truncated` when the bound cut it; a "
        "scoped token sees only facts read from its wings",
    ),
    "POST /api/facts/{fact_id}/supersede": (
        "`{object?, subject?, predicate?, confidence?, reason?}`",
        '201 `{"fact": new, "superseded": old}` (one transaction: close, open, link)',
    ),
    "POST /api/facts/{fact_id}/invalidate": ("`{reason}`", "the closed fact"),
    "POST /api/facts/{fact_id}/link": (
        "`{to, kind: confirms\\|contradicts\\|refines, reason}`",
        '201 `{"link", "from", "to"}`; the link id is deterministic, so a retry is safe',
    ),
    "GET /api/entities": ("`?name=&kind=&limit=`", '`{"entities": [Entity…]}`'),
    "GET /api/entities/{entity_id}": (
        "",
        "the entity with `aliases`, `mentions [{drawer, spelling}]` and `hints` (possibly_same)",
    ),
    "GET /api/entities/candidates": (
        "query: `limit=`",
        '`{"candidates": [{entity, entity_name, other, other_name, kind, reason}]}`: pairs that may be one entity '
        "(the same name as another kind, a name one edit from two), for a person to look at; nothing is merged",
    ),
    "POST /api/entities/{entity_id}/aliases": (
        "`{alias}`",
        "the entity with its aliases: later names in that spelling resolve to it; 409 naming the other entity when "
        "one already answers to it",
    ),
    "GET /api/entities/{entity_id}/relationships": (
        "query: `limit=`",
        '`{"facts": [Fact…]}`: the facts the entity takes part in, as subject or object, with their state',
    ),
    "POST /api/drawers/{drawer_id}/mentions": (
        "`{entity, kind?}`",
        "201, the entity: the drawer mentions it (a name — made when new, with a possibly-same hint when another "
        "kind has that name — or an entity id); the drawer must be one you may write",
    ),
    "POST /api/mine": (
        "`{connector, locator, options?, wing?, full?, notice_removed?}` (`notice_removed`: close the drawers of "
        "documents gone from the source; default yes for `directory` and `notes`, a 400 for a connector whose "
        "listing is not complete)",
        '202 `{"job": Job, "joined": bool}` (`joined`: an identical queued mine existed)',
    ),
    "GET /api/connectors": ("", '`{"connectors": [{name, source_kind, options}]}`'),
    "GET /api/miners": (
        "",
        '`{"miners": [{name, connector, locator, options, wing, full, watch, debounce, every, origin: config\\|api, '
        "triggers, enabled, state, last_run {job_id, status, at, trigger, result, error}, next_run, shadowed}]}` — "
        "see [triggers.md](triggers.md)",
    ),
    "GET /api/miners/{name}": (
        "",
        '`{"miner": Miner}`: one miner as the list shows it; 404 naming the miners there are',
    ),
    "POST /api/miners": (
        "`{name, connector, locator, options?, wing?, full?, watch?, debounce?, every?}` (`debounce`, `every`: "
        'seconds or `"2s"`, `"5m"`, `"2h"`, `"1d"`; `every` at least 10 s)',
        '201 `{"miner": Miner}`: kept in the palace; 409 when the config file defines that name (the config file '
        "wins); the source is checked as `POST /api/mine` checks it",
    ),
    "DELETE /api/miners/{name}": (
        "",
        '`{"ok": true}`; only a miner defined through the API (409 for a config file\'s)',
    ),
    "POST /api/miners/{name}/run": ("", '202 `{"job": Job, "joined": bool}`'),
    "POST /api/miners/{name}/enable": (
        "",
        '`{"miner": Miner}`: whether its triggers run it, kept in the palace (config miners too)',
    ),
    "POST /api/miners/{name}/disable": (
        "",
        '`{"miner": Miner}`: whether its triggers run it, kept in the palace (config miners too)',
    ),
    "GET /api/jobs": (
        "`?status=&kind=&limit=&before=`",
        '`{"jobs": [Job…]}` newest first; `before` (a job id or prefix) pages on to the jobs created before it, 404 '
        "when there is none",
    ),
    "GET /api/jobs/{job_id}": ("", "the job"),
    "POST /api/jobs/{job_id}/{action}": (
        "`action`: `pause`, `resume`, `cancel`, `retry` (`force-cancel`: the original MemCastle's `cancel`)",
        '`{"job": Job}`; 409 when the transition is not allowed',
    ),
    "GET /api/events": (
        "`?kinds=job,trigger,drawers,forget` · header `Last-Event-ID` (or `?after=`)",
        "`text/event-stream`: the live events, see [Events](#events)",
    ),
    "POST /api/verify": (
        "`{batch?, pace_ms?, priority?}`",
        '202 `{"job": Job}`: re-hash every current drawer (queues a job: needs `full`, as job controls do)',
    ),
    "POST /hooks/{name}": (
        "any body (the raw bytes are what is signed)",
        "a webhook delivery for the miner `name` declaring `webhook` (no bearer token: the delivery is verified "
        "itself, before anything else — not even whether the miner exists beyond a 404 is told): `hmac` — "
        "`X-Hub-Signature-256: sha256=<hex>` (GitHub's header) or `X-MemCastle-Signature-256`, the HMAC-SHA256 of "
        "the body under the secret; `token` — `Authorization: Bearer <secret>` or `X-MemCastle-Webhook-Token`; the "
        "secret is in the daemon's environment variable `secret_env` (503 while it is unset). Then 409 when the "
        "miner is disabled (a miner with a webhook is created disabled), 429 with `Retry-After` past 30 deliveries "
        "a minute, 200 `{duplicate: true}` for a delivery id (`X-GitHub-Delivery` or `X-Delivery-Id`) seen within a "
        "week, else 202 `{duplicate: false, delivery, job, joined}`: a run queued (or the queued one joined). The "
        "daemon's Host rules and mode apply",
    ),
    "POST /api/audit": (
        "`{priority?}`",
        '202 `{"job": Job}`: check the palace in the background; the job\'s `result` is `{ok, problems, findings: '
        "[{check, what, count, examples, repair, applies}]}`; nothing is changed (needs `full`)",
    ),
    "POST /api/repair": (
        "`{checks?, batch?, priority?}`",
        '202 `{"job": Job}`: fix what the audit finds (`checks`: only those; an unknown name is a 400 naming '
        "`checks`), `batch` rows per transaction (1–10000, default 500) with a checkpoint after each; `result` is "
        "`{repaired: {check: rows}, after: <an audit result>}`",
    ),
    "POST /api/forget": (
        "`{scope: drawer\\|document\\|source\\|room\\|wing\\|search, drawer_id?, source_id?, document?, wing?, room?, "
        "search?: {query, wing?, room?, tags?, source_kind?, connector?, as_of?, from?, until?, "
        "include_historical?, known_at?, known_from?, known_until?}, dry_run?}`",
        "`{dry_run, scope, counts, drawers: [{id, wing, room, valid_from, valid_to, document, preview}], more, "
        "tombstone}`: erase the scope's drawers and everything derived from them (see "
        "[lifecycle.md](lifecycle.md)); `dry_run` defaults to true for source, room, wing and search; 409 while a "
        "mine job writes to that source or wing",
    ),
    "DELETE /api/drawers/{drawer_id}": (
        "`?dry_run=`",
        "like `POST /api/forget` for one drawer with its whole version history",
    ),
    "DELETE /api/sources/{source_id}": (
        "`?dry_run=` (default true)",
        "like `POST /api/forget` for every drawer mined from the source",
    ),
    "GET /api/sources": (
        "",
        '`{"sources": [{id, connector, locator, options, updated_at, documents, drawers}]}`: mined sources, '
        "`drawers` counting current ones",
    ),
    "GET /api/tombstones": (
        "`?limit=`",
        '`{"tombstones": [{id, at, requested_by, scope, counts}]}` newest first: what each forget left (no content; '
        "a search scope by the SHA-256 of its query)",
    ),
    "DELETE /api/wings/{wing}": (
        "`?force=&dry_run=`",
        "the forget report: an empty wing or room is deleted; one holding drawers only with `force=true` (a forget "
        "of them), else 409",
    ),
    "DELETE /api/wings/{wing}/rooms/{room}": (
        "`?force=&dry_run=`",
        "the forget report: an empty wing or room is deleted; one holding drawers only with `force=true` (a forget "
        "of them), else 409",
    ),
    "POST /api/wings/{wing}/rename": (
        "`{name}`",
        "`{wing, room, warnings}`; 409 when the name is taken or a mine job files into the wing",
    ),
    "POST /api/wings/{wing}/rooms/{room}/rename": (
        "`{name}`",
        "`{wing, room, warnings}`; 409 when the name is taken or a mine job files into the wing",
    ),
    "POST /api/export": (
        "`{path, vectors?}` (`path`: an absolute file that does not exist yet, in a folder inside `mining.roots`)",
        '202 `{"job": Job}`: write the palace to a portable archive '
        "([lifecycle.md](lifecycle.md#export-and-import)); the job's result has `path`, `bytes`, `counts`; 409 when "
        "the file exists",
    ),
    "POST /api/import": (
        "`{path}`",
        '202 `{"job": Job}`: load an archive; the result has `added` and `present` per record kind, '
        "`skipped_records` (line and reason) and `warnings`; a conflicting record fails the job and imports nothing",
    ),
    "POST /api/shutdown": (
        "",
        "202; the daemon drains its jobs (bounded wait), requeues what did not finish, and exits",
    ),
    "GET /api/audit/reads": (
        "query `token?`, `agent?` (an MCP client's name), `drawer?` (a drawer or fact id: who saw it), `since?`, "
        "`limit?`",
        '`{"reads": [{id, at, interface, operation, token, client, session, query, drawer_ids, fact_ids}]}`, newest '
        "first — the read audit ([security](security.md#the-read-audit)); refused to a wing-scoped token",
    ),
    "GET /api/auth/tokens": (
        "—",
        '`{"tokens": [{name, created_at, mode, read, write, tools, routes}], "configured_secret": bool}` '
        "(`read`/`write`: the wings it is limited to, null for every wing)",
    ),
    "POST /api/auth/tokens": (
        "`{name, mode?, read?, write?, tools?, routes?}` (`full` by default; `read_only`, `disabled`; "
        "`read`/`write`: lists of wings or `wing/room`s; `tools`: MCP tool names; `routes`: route groups — the tags "
        "of this reference, and `web` for the pages)",
        "201 `{name, token, created_at, mode, read, write, tools, routes}` — the token is shown only in this "
        "answer; a client holding it never gets more than its mode, nor sees or writes outside its wings "
        "([security](security.md#scoped-tokens-a-palace-that-holds-only-some-wings))",
    ),
    "DELETE /api/auth/tokens/{name}": (
        "— (`Content-Type: application/json`, as every state change)",
        '`{"revoked": name}`; 404 naming the existing tokens',
    ),
    "GET /metrics": (
        "",
        "the daemon's counters and the palace's figures in Prometheus' text exposition format, for a monitor to "
        "scrape ([operations.md](operations.md) names each); behind the same door as `/api` (a bearer token when "
        "authentication is on); 403 for a token limited to some wings",
    ),
    "POST /api/jobs": (
        '`{"type": …}`',
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): `mine` (`path`: `POST "
        "/api/mine` with the `directory` connector; `provider` with `locator?`: that connector) with `wing?`, "
        "`full?`; `audit` (`POST /api/audit`); `repair` (`dry_run`, true by default: the audit; false: `POST "
        '/api/repair`); `extract`, `embed` (the sweeps). 202 `{"job": Job}`; a field the type does not take is '
        "refused naming it. A `checkpoint` is `POST /api/checkpoint` (its items are MemCastle's, not the original's "
        "`destination` shape)",
    ),
    "GET /api/entities/{entity_id}/mentions": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): `GET "
        '/api/entities/{id}`\'s `mentions`: `{"mentions": [{drawer, spelling}]}`',
    ),
    "GET /api/entities/{entity_id}/candidates": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): `GET "
        '/api/entities/{id}`\'s `hints`: `{"candidates": [{entity, other, kind, reason}]}`',
    ),
    "GET /api/wings/{wing}/rooms/{room}/drawers": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): `GET "
        "/api/drawers?wing=&room=` (`limit`, `after`)",
    ),
    "POST /api/wings/{wing}/rooms/{room}/drawers": (
        '`{"content", "name?", "tags?"}`',
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): `POST /api/notes` "
        "with `wing` and `room`: 201 `{drawer, created: true}`, 200 for an exact unnamed copy",
    ),
    "GET /api/wings/{wing}/rooms/{room}/drawers/{drawer:path}": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): `GET "
        "/api/drawers/{id}`: `{drawer}` is the room's drawer of that name, else an id in the room (a name may hold "
        "`/`)",
    ),
    "DELETE /api/wings/{wing}/rooms/{room}/drawers/{drawer:path}": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): `DELETE "
        "/api/drawers/{id}` (forgotten at once with its history; the forget report)",
    ),
    "GET /api/triggers": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): the miners' triggers "
        "(`GET /api/miners`): `{triggers: [{name, triggers, enabled, miner}]}`",
    ),
    "GET /api/triggers/{name}": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): one miner's (`GET "
        "/api/miners/{name}`)",
    ),
    "POST /api/miners/reload": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): the config file's "
        "`[[miners]]` read again and followed from now on (`{miners}` as `GET /api/miners`); a malformed file is a "
        "400 naming its line and key, and the miners stay as they were; `memcastle miner reload` too",
    ),
    "PUT /api/miners/{name}": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): `POST /api/miners` (a "
        "definition of the same name replaces it); the body's `name` must be the path's",
    ),
    "POST /api/auth/token": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): `POST "
        "/api/auth/tokens` with the name `default`, replacing the previous one; as every token route, it needs "
        "authentication on (the first token is made with `memcastle auth token create`), and as every state change "
        "here, a JSON body (`{}`)",
    ),
    "DELETE /api/auth/token": (
        "",
        "the original MemCastle's call ([compatibility](#compatibility-with-memcastle-rust)): `DELETE "
        "/api/auth/tokens/default`",
    ),
}
