"""Tool profiles (docs/mcp.md, "Tool profiles"; ADR 0046): which tools a session *lists*, so that the list an agent
reads at every start stays small while the palace's whole vocabulary stays callable.

`core` is what an agent needs every session — resume, search, read and trace, write, correct — and is listed by
default (ADR 0052 says why these); `full` lists every tool. Everything MemCastle tells an agent — the instructions,
the skill, the wake-up text — names only `core` tools, the profile the integrations ask for (tested). A session
chooses with the `X-MemCastle-Tools` header (a profile, tool names, or both, comma-separated; the stdio bridge sends
`memcastle mcp --tools`), the daemon's default is `mcp.tools`, and a token limited to some tools (`--tools`) lists
only those whatever is asked. A profile never forbids: a tool it does not list still answers when called by name
(what a token allows is the only permission)."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from memcastle.errors import InvalidRequest

HEADER = "X-MemCastle-Tools"
CORE = (
    "memcastle_wake_up",
    "memcastle_search",
    "memcastle_get_drawer",
    "memcastle_note",
    "memcastle_checkpoint",
    "memcastle_diary_write",
    "memcastle_drawer_supersede",
    "memcastle_history",
    "memcastle_fact_list",
    "memcastle_fact_supersede",
    "memcastle_fact_invalidate",
    "memcastle_status",
    "memcastle_set_mode",
)
FULL = "full"
PROFILES = {
    "core": "what an agent needs every session: wake up, search, read, trace, note, checkpoint, diary, correct",
    FULL: "every tool: also recall, history, facts' history and links, entities and the graph, jobs, mining, "
    "miners and triggers, audit and repair, forgetting",
}


def tool_set(value: str, every: Collection[str], *, field: str = HEADER) -> frozenset[str]:
    """The tools `value` names: profile names expanded, tool names kept (the `memcastle_` prefix may be left
    out); an unknown name is refused by name with what there is."""
    names: set[str] = set()
    for raw in value.split(","):
        name = raw.strip()
        if not name:
            continue
        names.update(expand([name], every, field=field))
    if not names:
        raise InvalidRequest(f"{field} names no tools; give a profile ({', '.join(PROFILES)}) or tool names",
                             field=field)  # fmt: skip
    return frozenset(names)


def expand(names: Iterable[str], every: Collection[str], *, field: str) -> list[str]:
    """Each name as the tools it stands for: a profile its tools, a tool itself (with or without its prefix)."""
    out: list[str] = []
    for name in names:
        if name == FULL:
            out.extend(every)
        elif name in PROFILES:
            out.extend(CORE)
        elif name in every or f"memcastle_{name}" in every:
            out.append(name if name in every else f"memcastle_{name}")
        else:
            raise InvalidRequest(
                f"no MCP tool or profile named {name!r}; the profiles: {', '.join(PROFILES)}; the tools: "
                + ", ".join(every),
                field=field,
            )
    return list(dict.fromkeys(out))
