"""What each MCP tool answers, as docs/mcp.md's Tools table says it (`mcp.reference` writes the table with cog:
the hints and arguments from the tools themselves, the answer from here). A tool without an entry fails the
generation."""

from __future__ import annotations

ANSWERS: dict[str, str] = {
    "memcastle_status": (
        "version, palace, store, drawer and job counts, embeddings, extraction, warnings, `mode`, "
        "`mode_source` (`session`, `header` or `default`)"
    ),
    "memcastle_set_mode": ('`{mode, previous, scope: "session"}`'),
    "memcastle_search": (
        "`{hits: [Hit], ranking, warnings?, omitted?, note?}`; a hit is `{id, wing, room, name?, tags?, "
        "origin, closed?, superseded_by?, supersedes?, chars, snippet: {text, lines, terms}, score, signals, "
        "preference, via?}`, with `content` instead of `snippet` when `full`"
    ),
    "memcastle_recall": (
        "like search, over a whole wing (never a room; no connector or record time), with `pinned: [Drawer]`: "
        "the wing's pinned drawers the search did not find"
    ),
    "memcastle_get_drawer": (
        "the drawer with `content` verbatim (or those lines) and the `lines` given; `more` says which lines a "
        "`max_chars` cut left out"
    ),
    "memcastle_history": ("`{versions: [Drawer]}` oldest first"),
    "memcastle_duplicates": ("`{duplicates: [Drawer + verdict, similarity]}`"),
    "memcastle_explain_preference": ("the preference resolution trace: `result`, `steps`, each criterion tried"),
    "memcastle_wing_list": ("`{wings: [{wing, drawers}]}`; with `wing`, `{wing, rooms: [{room, drawers}]}`"),
    "memcastle_wake_up": (
        "`{agent, wing, pinned?: [Drawer], diary: [Drawer], decisions?: [Drawer + agent], checkpoints: "
        "[Drawer], omitted}`, drawers with their `content`; pinned drawers of the wing (and of no project) "
        "come first; `decisions`: the wing's checkpoint items tagged `decision`, by any agent"
    ),
    "memcastle_diary_read": ("`{entries: [Drawer]}` newest first, with their `content`"),
    "memcastle_diary_write": ("`{drawer}` in room `diary`; the same text again returns the existing entry"),
    "memcastle_note": (
        "`{drawer, created, replayed}`; the same unnamed text from the same writer already in the room "
        "returns the existing drawer with `created: false`"
    ),
    "memcastle_checkpoint": (
        "`{drawers: [Drawer], replayed}` tagged `checkpoint` (room `checkpoints` by default); all items are "
        "validated before any is saved; each `fact` is recorded with its drawer as evidence"
    ),
    "memcastle_drawer_supersede": (
        "`{drawer}`: the new version (same wing, room, name and tags); the old one is closed, kept in the "
        "history with the reason"
    ),
    "memcastle_drawer_mark": (
        "`{drawer}` with its marks: pinned always enters its wing's wake-up and recall; hidden is left out of "
        "search, recall and wake-up (no MCP search includes it; read it by its id)"
    ),
    "memcastle_forget": (
        "the forget report: `{dry_run, scope, counts, drawers, more, tombstone}` — see "
        "[lifecycle.md](lifecycle.md). Erases for good; only the tombstone stays"
    ),
    "memcastle_fact_list": (
        '`{facts: [{id, fact: "subject predicate object", state, preferred?, basis?, confidence, valid_from, '
        'valid_to?, evidence, explicit?, links: ["contradicts <id>", "superseded by <id>", "invalidated: '
        '<reason>", …]}]}`: each link read from this fact — which way it points, the other fact, why it ended'
    ),
    "memcastle_fact_get": ("the whole fact, as `GET /api/facts/{id}` answers it"),
    "memcastle_fact_history": (
        "`{facts: [Fact]}`: the fact and everything transitively linked, by valid_from; with `as_of`, as the "
        "history stood then (the facts valid by that instant, in the states they had)"
    ),
    "memcastle_fact_supersede": (
        "`{fact, superseded}`: the replacement (the old fact with what was given changed, valid from now) and "
        "the closed one"
    ),
    "memcastle_fact_invalidate": ("`{fact}`, closed, the reason on its `invalidates` link"),
    "memcastle_fact_link": ("`{link, from, to}`"),
    "memcastle_entity": (
        "`{id, name, kind, aliases?, facts: [Fact], mentioned, mentions: [8-char drawer ids], same_name?}`: "
        "what it is, what is known about it and where it is mentioned"
    ),
    "memcastle_graph": (
        '`{from, reached, facts: ["subject predicate object [state] id8"], links?, truncated?}`: the '
        "neighbourhood as sentences"
    ),
    "memcastle_job_list": (
        "`{under?, jobs: [{id, kind, status, source?, progress?, note?, at, error?}]}` newest first: "
        "8-character ids (`memcastle_job_get` takes them), `at` when it finished (else when it was asked "
        "for), sources relative to the folder they share (`under`), progress left out once all of it is done; "
        "20 jobs fit in 3,000 characters"
    ),
    "memcastle_job_get": (
        "the whole job (parameters, progress, result or error) and, for a queued one, what it waits for"
    ),
    "memcastle_job_control": ("`{job}`; a move the job's status does not allow is a tool error (`illegal_transition`)"),
    "memcastle_mine": ("`{job, joined}` at once; follow it with `memcastle_job_get`"),
    "memcastle_miner_list": ("`{miners: [{name, source, wing?, triggers, state, last_run?, next_run?}]}`"),
    "memcastle_miner_get": ("the whole miner, as `GET /api/miners` lists it"),
    "memcastle_miner_run": ("`{job, joined}`: a run queued now (a disabled miner runs too, by hand)"),
    "memcastle_audit": ("`{job}`: the palace audit, queued (nothing changes); `memcastle_job_get` shows its findings"),
    "memcastle_repair": (
        "a dry run: `{job, dry_run}` (an audit) or, based on an audit, `{would_repair: [check], dry_run}`; "
        "applied: `{job}`, the repair queued; `{job: null, note}` when the audit found nothing to repair"
    ),
}
