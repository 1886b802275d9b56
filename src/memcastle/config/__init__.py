"""Settings: built-in defaults < config.toml < MEMCASTLE_* environment < command-line flags (SPEC §7).

Every setting is declared once in `SETTINGS`; a key that is not declared is an error naming the key (and the file
and line when it came from a file). `Settings.origin(key)` says where each effective value came from.
Only composition roots (`memcastle.app`, the CLI entry point) read settings.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from memcastle.config.toml import line_for, line_from_message, read_toml_text
from memcastle.errors import ConfigError
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
    SettingSpec("palace.path", str, _default_palace, "the palace directory this daemon serves", env="MEMCASTLE_PALACE"),
    SettingSpec(
        "mode",
        str,
        "full",
        "this client's memory mode; for the daemon (serve), the ceiling of every client's mode",
        choices=MODES,
    ),
    SettingSpec("server.host", str, "127.0.0.1", "address the daemon binds"),
    SettingSpec("server.port", int, 8420, "port the daemon binds (0 picks a free one)", minimum=0, maximum=65535),
    SettingSpec("logging.level", str, "info", "the daemon's log level (-v: info, -vv: debug)", choices=LOG_LEVELS),
    SettingSpec(
        "logging.format",
        str,
        "text",
        "the daemon's log lines: text, or json (one object per line: time, level, logger, message)",
        choices=("text", "json"),
    ),
    SettingSpec("server.max_body_bytes", int, 8 * 1024 * 1024, "largest request body accepted", minimum=1024),
    SettingSpec("store.url", str, "", "empty for the embedded SQLite palace, or postgresql://…"),
    SettingSpec("jobs.workers", int, 2, "background job worker threads", minimum=1, maximum=32),
    SettingSpec(
        "jobs.background_share",
        float,
        1.0,
        "the share of the workers the background sweeps (embed, extract) may take at once, at least one: below 1, "
        "a mine or an export asked for meanwhile finds a worker free",
        minimum=0,
        maximum=1,
    ),
    SettingSpec("jobs.drain_seconds", float, 10.0, "how long shutdown waits for running jobs", minimum=0),
    SettingSpec(
        "jobs.lease_seconds",
        float,
        60.0,
        "job lease length; renewed at checkpoints (and on PostgreSQL every third of it while the daemon lives)",
        minimum=1,
    ),
    SettingSpec("mining.chunk_chars", int, 6000, "largest drawer a mined document is cut into", minimum=200),
    SettingSpec(
        "mining.github_api_url",
        str,
        "https://api.github.com",
        "the GitHub REST API the github connector reads (GitHub Enterprise: https://HOST/api/v3); its token comes "
        "from GH_TOKEN, else GITHUB_TOKEN, never from a setting",
    ),
    SettingSpec(
        "mining.github_wiki_url",
        str,
        "https://github.com",
        "the site the github connector clones a repository's wiki from (<site>/<owner>/<repo>.wiki.git) when its "
        "wiki option asks for the wiki pages",
    ),
    SettingSpec(
        "mining.max_documents",
        int,
        0,
        "a mine stops once it has filed this many new or changed documents (unchanged ones do not count; the next "
        "mine goes on from there; 0: no bound)",
        minimum=0,
    ),
    SettingSpec("mining.max_file_bytes", int, 2 * 1024 * 1024, "files larger than this are skipped", minimum=1),
    SettingSpec(
        "jobs.resume_free_bytes",
        int,
        1 << 30,
        "free bytes the palace's disk needs before jobs a full disk paused resume by themselves (0: only by hand)",
        minimum=0,
    ),
    SettingSpec(
        "storage.reserve_bytes",
        int,
        4 << 20,
        "room kept back in <palace>/reserve so cancel, pause and forget work on a full disk (0: none)",
        minimum=0,
    ),
    SettingSpec(
        "mining.hard_links",
        bool,
        False,
        "mine a file that has more than one name (a hard link): its other names may lie outside mining.roots",
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
        "search.lexical_weight", float, 0.6, "weight of the lexical leg in fusion (chosen by measurement)", minimum=0
    ),
    SettingSpec(
        "search.semantic_weight", float, 0.4, "weight of the semantic leg in fusion (chosen by measurement)", minimum=0
    ),
    SettingSpec(
        "search.ann_min_rows",
        int,
        20_000,
        "passage vectors above which the semantic leg uses an HNSW graph (below: an exact scan)",
        minimum=1,
    ),
    SettingSpec(
        "search.fill_rows",
        int,
        10_000,
        "hybrid: most drawers the lexical leg's any-term fill may score; above, its rarest terms only (0: no bound)",
        minimum=0,
    ),
    SettingSpec(
        "search.context_weight",
        float,
        0.5,
        "hybrid: how much a query word in a drawer's neighbours counts beside its own words (ADR 0056; 0: own only)",
        minimum=0,
        maximum=1,
    ),
    SettingSpec(
        "search.parallel", int, 0, "searches computed at once, the others wait (0: one per CPU core)", minimum=0
    ),
    SettingSpec(
        "search.rerank",
        str,
        "auto",
        "the second stage over the fused pool (docs/adr/0047-second-stage.md): on re-scores its best candidates by how "
        "much of the query each holds and how close together; auto (the default), for queries of two words or more "
        "over a pool of code, documents or history, not of short drawers such as conversation turns (ADR 0054); "
        "off, the fusion's order",
        choices=("off", "on", "auto"),
    ),
    SettingSpec(
        "search.rerank_depth",
        int,
        40,
        "how many of the fused pool's best candidates the second stage re-scores",
        minimum=2,
        maximum=200,
    ),
    SettingSpec(
        "search.rerank_weight",
        float,
        0.3,
        "the most the second stage adds to a candidate's fused relevance (which spans 0-1 among those re-scored)",
        minimum=0,
        maximum=1,
    ),
    SettingSpec(
        "search.freshness",
        str,
        "",
        "a half-life such as 30d: recent drawers get a bounded boost, shown on each hit (empty: off)",
    ),
    SettingSpec(
        "embeddings.provider", str, "builtin", "embedding provider", choices=("builtin", "command", "http", "none")
    ),
    SettingSpec(
        "embeddings.model",
        str,
        "",
        "model name passed to command/http providers; for builtin, all-MiniLM-L6-v2-q8 (the default: the shipped "
        "model's copy for the CPU's int8 units, made once per machine a second after a start), "
        "all-MiniLM-L6-v2-int8 (as shipped) or multilingual-e5-small (the multilingual extra)",
    ),
    SettingSpec("embeddings.command", list, [], "argv of the command provider (no shell)"),
    SettingSpec("embeddings.url", str, "", "base URL of an OpenAI-compatible embeddings endpoint"),
    SettingSpec("embeddings.api_key", str, "", "bearer key for the http provider", secret=True),
    SettingSpec(
        "embeddings.query_prefix", str, "", "put before a query by the command and http providers (e5: 'query: ')"
    ),
    SettingSpec(
        "embeddings.document_prefix",
        str,
        "",
        "put before a passage by the command and http providers (e5: 'passage: ')",
    ),
    SettingSpec(
        "embeddings.input_type", str, "", "request field the http provider names the text kind in (empty: not sent)"
    ),
    SettingSpec("embeddings.timeout", float, 30.0, "seconds before a provider call fails", minimum=0.1),
    SettingSpec(
        "embeddings.threads", int, 2, "runs of the builtin model at once for a batch of passages", minimum=1, maximum=64
    ),
    SettingSpec("embeddings.batch_size", int, 64, "drawers embedded per unit of the embed job", minimum=1),
    SettingSpec(
        "embeddings.passage_chars", int, 700, "longest passage a drawer is cut into for its vectors", minimum=50
    ),
    SettingSpec("embeddings.passage_overlap", int, 0, "characters a passage shares with the one before it", minimum=0),
    SettingSpec(
        "embeddings.sentence_chars",
        int,
        700,
        "drawers this short also get a vector per sentence (ADR 0057; 0: none)",
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
        "what the command provider sends and expects: objects (texts with id, provenance and preference, answered "
        "by results) or plain (the original MemCastle's: texts as strings and a vocabulary, answered by "
        "extractions); either answer is read",
        choices=("objects", "plain"),
    ),
    SettingSpec(
        "extraction.max_entities",
        int,
        100,
        "the most entities kept from one drawer, in the provider's order (0: no cap)",
        minimum=0,
    ),
    SettingSpec(
        "extraction.max_relations",
        int,
        100,
        "the most relations kept from one drawer, the most confident first (0: no cap)",
        minimum=0,
    ),
    SettingSpec("extraction.api_key", str, "", "bearer key for the http extraction provider", secret=True),
    SettingSpec("extraction.timeout", float, 120.0, "seconds before an extraction call fails", minimum=0.1),
    SettingSpec(
        "extraction.min_confidence",
        float,
        0.3,
        "facts below this confidence are dropped, whatever the source's preference",
        minimum=0,
        maximum=1,
    ),
    SettingSpec("extraction.batch_size", int, 16, "drawers per extraction batch (one transaction)", minimum=1),
    SettingSpec(
        "extraction.code",
        bool,
        False,
        "also read source code and data files for entities and facts (off: the names in code are mostly noise)",
    ),
    SettingSpec("audit.enabled", bool, True, "record who read what (ids, never text): the read audit"),
    SettingSpec("audit.retention", str, "30d", "how long read audit records are kept (a duration: 30d, 12h)"),
    SettingSpec(
        "audit.max_records", int, 1_000_000, "the most read audit records kept (the oldest go first)", minimum=1000
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
        "similarity at which drawers of a room count as near copies",
        minimum=0,
        maximum=1,
    ),
    SettingSpec("web.enabled", bool, True, "serve the web page (/ and /static); the API and MCP are served either way"),
    SettingSpec(
        "dedup.enabled",
        bool,
        True,
        "link the near copies in a room (exact and normalized copies of a note are found either way); off: no "
        "near-duplicate bookkeeping at all",
    ),
    SettingSpec(
        "dedup.entity_fuzzy",
        bool,
        True,
        "take a name one edit from a known entity's (Atlass, Atlas) for that entity, with an alias; off: only exact "
        "names, keys and aliases match",
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
        "how often an agent's prompt carries the reminder to search memory first (Claude Code's and Codex CLI's "
        "UserPromptSubmit hook; Pi's extension and OpenCode's plugin, written at install): always; sometimes — a "
        "session's first prompt, one asking about past work, every tenth; off",
        choices=("off", "sometimes", "always"),
    ),
    SettingSpec(
        "mcp.max_chars",
        int,
        16_000,
        "the most characters an MCP answer holds when the call does not set max_chars: whole items are kept, and "
        "what is left out is counted (omitted) with a note saying how to ask for it",
        minimum=1_000,
    ),
    SettingSpec(
        "mcp.tools",
        str,
        "core",
        "the tool profile an MCP session lists unless it chooses (header X-MemCastle-Tools, memcastle mcp --tools): "
        "core, what an agent needs every session; full, every tool. Unlisted tools still answer by name",
        choices=("core", "full"),
    ),
)

SPEC_BY_KEY = {spec.key: spec for spec in SETTINGS}
FLAG_ALIASES = {"palace": "palace.path"}  # --palace sets palace.path
# Tables that are validated by their own modules rather than key by key here.
STRUCTURED_TABLES = ("miners", "lifecycle", "preferences", "palace.preferences")


@dataclass(frozen=True)
class RawTable:
    """A structured table kept for its own validator, with the file it came from."""

    value: Any
    file: str
    text: str


@dataclass
class Settings:
    """The effective settings and, for each key, where its value came from."""

    values: dict[str, Any]
    origins: dict[str, str]
    config_file: Path
    tables: dict[str, RawTable] = field(default_factory=dict)
    text: str = ""  # the config file's text, to find a key's line in

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def error(self, key: str, message: str, *, help: str | None = None) -> ConfigError:
        """An error about a setting's value, naming where it came from: the file and line, or the variable."""
        origin = self.origins.get(key, "")
        if origin.startswith("file "):
            return ConfigError(message, file=str(self.config_file), line=line_for(self.text, key), key=key, help=help)
        return ConfigError(message, key=origin.removeprefix("env ") if origin.startswith("env ") else key, help=help)

    def origin(self, key: str) -> str:
        return self.origins[FLAG_ALIASES.get(key, key)]

    @property
    def palace(self) -> Path:
        return Path(self.values["palace.path"]).expanduser()

    def describe(self) -> list[dict[str, Any]]:
        """Every setting with its effective value (secrets masked) and origin."""
        rows = []
        for spec in SETTINGS:
            value = self.values[spec.key]
            if spec.secret and value:
                value = "********"
            elif isinstance(value, str) and "://" in value:
                value = mask_url_password(value)
            rows.append(
                {"key": spec.key, "value": value, "origin": self.origins[spec.key], "description": spec.description}
            )
        return rows


def mask_url_password(url: str) -> str:
    """`postgresql://user:secret@host/db` → `postgresql://user:********@host/db`; other text as it is."""
    return re.sub(r"(://[^/@:\s]*:)[^/\s]*@", r"\1********@", url)


def default_config_file() -> Path:
    return Path(platformdirs.user_config_dir(APP)) / "config.toml"


def load_settings(
    *,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Merge defaults, the config file, MEMCASTLE_* variables and flags (None flags are ignored)."""
    env = os.environ if env is None else env
    flags = {FLAG_ALIASES.get(k, k): v for k, v in (flags or {}).items() if v is not None}
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for spec in SETTINGS:
        values[spec.key] = spec.default() if callable(spec.default) else spec.default
        origins[spec.key] = "default"

    path = config_file or (Path(env["MEMCASTLE_CONFIG"]) if env.get("MEMCASTLE_CONFIG") else default_config_file())
    tables: dict[str, RawTable] = {}
    text = ""
    if path.exists():
        text = _apply_file(path, values, origins, tables)
    elif config_file is not None or env.get("MEMCASTLE_CONFIG"):
        raise ConfigError("config file does not exist", file=str(path))

    _apply_env(env, values, origins)
    for key, value in flags.items():
        flag_spec = SPEC_BY_KEY.get(key)
        if flag_spec is None:
            raise ConfigError("unknown setting", key=key)
        values[key] = _coerce(flag_spec, value, where=f"flag for {key}")
        origins[key] = "flag"
    return Settings(values=values, origins=origins, config_file=path, tables=tables, text=text)


def _apply_file(path: Path, values: dict[str, Any], origins: dict[str, str], tables: dict[str, RawTable]) -> str:
    text = read_toml_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = line_from_message(str(exc))
        raise ConfigError(str(exc), file=str(path), line=line) from None
    origin = f"file {path}"
    for key, value in _flatten(data):
        spec = SPEC_BY_KEY.get(key)
        line = line_for(text, key)
        if spec is None:
            raise ConfigError(_unknown_message(key), file=str(path), line=line, key=key)
        try:
            values[key] = _coerce(spec, value, where=key)
        except ConfigError as exc:
            raise ConfigError(exc.reason, file=str(path), line=line, key=key) from None
        origins[key] = origin
    for name in STRUCTURED_TABLES:
        node: Any = data
        for part in name.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            tables[name] = RawTable(value=node, file=str(path), text=text)
    return text


def _apply_env(env: Mapping[str, str], values: dict[str, Any], origins: dict[str, str]) -> None:
    by_var = {spec.env_var: spec for spec in SETTINGS}
    for var, raw in env.items():
        if not var.startswith("MEMCASTLE_") or var == "MEMCASTLE_CONFIG":
            continue
        spec = by_var.get(var)
        if spec is None:
            known = ", ".join(sorted(by_var)[:6])
            raise ConfigError(f"unknown environment variable {var} (known ones look like {known}, …)", key=var)
        values[spec.key] = _coerce(spec, _parse_env_value(spec, raw, var), where=var)
        origins[spec.key] = f"env {var}"


def _parse_env_value(spec: SettingSpec, raw: str, var: str) -> Any:
    if spec.type is list:
        try:
            return tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            raise ConfigError('expected a TOML array such as ["a", "b"]', key=var) from None
    if spec.type is bool:
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"expected true or false, got {raw!r}", key=var)
    return raw


def _coerce(spec: SettingSpec, value: Any, *, where: str) -> Any:
    converters: dict[type, Callable[[Any], Any]] = {int: int, float: float, str: str}
    if spec.type is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"expected true or false, got {value!r}", key=where)
        return value
    if spec.type is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"expected a list of strings, got {value!r}", key=where)
        return list(value)
    if spec.type in (int, float) and isinstance(value, bool):
        raise ConfigError(f"expected a number, got {value!r}", key=where)
    if spec.type is str and not isinstance(value, str):
        raise ConfigError(f"expected a string, got {value!r}", key=where)
    try:
        coerced = converters[spec.type](value)
    except (TypeError, ValueError):
        raise ConfigError(f"expected {spec.type.__name__}, got {value!r}", key=where) from None
    if spec.type is int and isinstance(value, float) and not value.is_integer():
        raise ConfigError(f"expected an integer, got {value!r}", key=where)
    if spec.choices and coerced not in spec.choices:
        raise ConfigError(f"{coerced!r} is not one of {', '.join(spec.choices)}", key=where)
    if spec.minimum is not None and coerced < spec.minimum:
        raise ConfigError(f"{coerced!r} is below the minimum {spec.minimum:g}", key=where)
    if spec.maximum is not None and coerced > spec.maximum:
        raise ConfigError(f"{coerced!r} is above the maximum {spec.maximum:g}", key=where)
    return coerced


def _flatten(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if dotted in STRUCTURED_TABLES:
            continue
        if isinstance(value, dict) and dotted not in SPEC_BY_KEY:
            out.extend(_flatten(value, dotted + "."))
        else:
            out.append((dotted, value))
    return out


def _unknown_message(key: str) -> str:
    section = key.rsplit(".", 1)[0] if "." in key else ""
    siblings = [s.key for s in SETTINGS if section and s.key.startswith(section + ".")]
    hint = f"; known keys in [{section}]: {', '.join(siblings)}" if siblings else ""
    return f"unknown setting{hint}"
