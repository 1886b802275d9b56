"""What the server tells an agent at initialize: how to use this memory, in clauses each tied to the tool it names,
so a session limited to some tools (a token's `--tools`) is told only about those (SPEC §7)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Collection

from memcastle.mcp.profiles import HEADER as PROFILE_HEADER

INTRO = (
    "MemCastle is your long-term memory: verbatim evidence (drawers) with provenance, searchable across sessions.\n"
    "Every tool works on this memory alone (nothing outside it); ids may be shortened to their first 8 characters.\n"
)

# Each bullet is a run of clauses; a clause is shown when every tool it names, and every tool it speaks of without
# naming (the second element of a pair), may be called.
Clause = str | tuple[str, str]
SEARCH = "memcastle_search"
GUIDE: tuple[tuple[Clause, ...], ...] = (
    ("Start each session with memcastle_wake_up (your agent name): your last diary entry and recent checkpoints.",),
    (
        "Before answering about past work, decisions or code history, memcastle_search.",
        "Read a hit whole with memcastle_get_drawer.",
        (
            "Check a hit's origin and preference before trusting it; a hit marked `contested` evidences a disputed"
            " fact and names the claim that stands: say so when you use it.",
            SEARCH,
        ),
    ),
    (
        "When memory is wrong, correct it:",
        "a drawer's text is wrong or outdated → memcastle_drawer_supersede (new text);",
        "a fact's value changed → memcastle_fact_supersede;",
        "a fact is simply wrong → memcastle_fact_invalidate.",
        ("Each changes what the next search ranks first.", SEARCH),
    ),
    (
        "When a decision is made or work changes state, memcastle_checkpoint; tag a decision `decision` and every"
        " agent waking up in that wing sees it.",
        "Other context, memcastle_note.",
    ),
    ("End a session with memcastle_diary_write: what was done, what is open, what comes next.",),
    ("If a tool says memory is disabled or read-only, respect it.",),
    (
        "memcastle_set_mode is offered where a choice can be kept (an MCP session, or a bearer token); otherwise the"
        " client's X-MemCastle-Mode header sets the mode.",
    ),
)

_TOOL = re.compile(r"\bmemcastle_[a-z_]+")
_WIDTH = 116


DEFAULT_BUDGET = 16_000  # characters an answer holds unless a call sets max_chars (the mcp.max_chars setting)


def instructions_for(
    tools: Collection[str] | None = None, *, every: Collection[str] = (), budget: int = DEFAULT_BUDGET
) -> str:
    """The instructions for a session that lists `tools` (None: every tool). A clause about a tool the session
    does not list is left out, and so is a bullet left with nothing to do (only its lead-in); when `every` (all
    the tools there are) holds more than the session lists, the last line says how to list them. `budget` is the
    size of an answer that does not set its own."""
    lines = [INTRO.rstrip("\n")]
    lines.append(
        f"An answer holds at most {budget:,} characters unless the call sets max_chars: it keeps whole items, counts"
        " what it left out (omitted) and its note says how to ask for it."
    )
    for bullet in GUIDE:
        texts = [_text(clause) for clause in bullet if _allowed(clause, tools)]
        if any(_TOOL.search(_text(c)) for c in bullet) and not any(_TOOL.search(text) for text in texts):
            continue  # every clause that did something was about a tool this session cannot call
        if texts:
            lines.extend(textwrap.wrap(" ".join(texts), _WIDTH, initial_indent="- ", subsequent_indent="  "))
    hidden = len(set(every) - set(tools)) if tools is not None else 0
    if hidden:
        lines.append(
            f"- {hidden} more tools (recall, facts' history and links, entities and the graph, jobs, mining, triggers,"
            f" audit) are listed with the header {PROFILE_HEADER}: full."
        )
    return "\n".join(lines) + "\n"


def _text(clause: Clause) -> str:
    return clause if isinstance(clause, str) else clause[0]


def _allowed(clause: Clause, tools: Collection[str] | None) -> bool:
    if tools is None:
        return True
    text, needs = (clause, "") if isinstance(clause, str) else clause
    return all(name in tools for name in [*_TOOL.findall(text), *([needs] if needs else [])])


INSTRUCTIONS = instructions_for()
