"""Terminal rendering: rich tables and panels on a TTY, JSON otherwise.

Rich is imported on first use, not with this module: JSON output (a pipe, `--json`) never pays for it.
`render.console` and `render.errors` are the two consoles (standard output and standard error).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from memcastle.clock import eta_text
from memcastle.model.answers import drawer_title, standing_line

if TYPE_CHECKING:
    from rich.console import Console
    from rich.panel import Panel


@functools.cache
def _console(stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False) if stderr else Console(highlight=False, soft_wrap=False)


def __getattr__(name: str) -> Console:
    if name == "console":
        return _console()
    if name == "errors":
        return _console(stderr=True)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def wants_json(flag: bool) -> bool:
    return flag or not sys.stdout.isatty()


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _short(stamp: str | None) -> str:
    return stamp[:19].replace("T", " ") if stamp else "—"


def short_time(stamp: str | None) -> str:
    """`2026-12-02 03:14:15` from an RFC 3339 instant; `—` for none."""
    return _short(stamp)


def duration_text(seconds: float) -> str:
    """`90s`, `5m`, `2h`, `1d`, `1h30m` for a period in seconds."""
    whole = int(round(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if whole >= size and whole % size == 0:
            return f"{whole // size}{unit}"
    if whole >= 3600:
        return f"{whole // 3600}h{(whole % 3600) // 60}m"
    if whole >= 60:
        return f"{whole // 60}m{whole % 60}s"
    return f"{seconds:g}s"


def title_of(drawer: Mapping[str, Any]) -> str:
    """A drawer's heading: its document and lines, else its name, else the start of its text."""
    origin = (drawer.get("source") or {}).get("origin") or {}
    return drawer_title(origin.get("document"), origin.get("lines"), drawer.get("name"), drawer.get("content", ""))


def _origin_line(drawer: Mapping[str, Any]) -> str:
    source = drawer.get("source") or {}
    origin = source.get("origin")
    place = f"{drawer['wing']}/{drawer['room']}"
    if origin:
        when = origin.get("occurred_at") or drawer.get("valid_from")
        chunk = "" if origin.get("lines") else f" · part {origin['chunk'] + 1}"
        return f"{place} · {origin['connector']}{chunk} · {_short(when)}"
    who = source.get("agent") or (drawer.get("provenance") or {}).get("requested_by", "")
    return f"{place} · {source.get('kind', 'manual')} · {who} · {_short(drawer.get('created_at'))}"


def drawer_panel(drawer: Mapping[str, Any], *, title_extra: str = "") -> Panel:
    from rich.markup import escape
    from rich.panel import Panel
    from rich.text import Text

    state = "current" if drawer.get("valid_to") is None else f"closed {_short(drawer['valid_to'])}"
    state += "".join(f" · {mark}" for mark in ("pinned", "hidden") if drawer.get(mark))
    title = f"[bold]{escape(title_of(drawer))}[/bold]"
    subtitle = f"{short_id(drawer['id'])} · {state}"
    body = Text()
    body.append(_origin_line(drawer) + "\n", style="dim")
    if drawer.get("tags"):
        body.append("tags: " + ", ".join(drawer["tags"]) + "\n", style="dim")
    if title_extra:
        body.append(title_extra + "\n", style="cyan")
    body.append(drawer["content"])
    return Panel(body, title=title, subtitle=subtitle, title_align="left", subtitle_align="right")


def show_drawer(drawer: Mapping[str, Any]) -> None:
    _console().print(drawer_panel(drawer))


def show_hits(result: Mapping[str, Any], *, full: bool = False) -> None:
    """Search hits on a terminal, styled with click: the most frequent command loads no rich (and reads no user data
    as markup). Each hit shows its snippet with the matched terms in bold, or with `full` its whole drawer."""
    import shutil

    import click

    for warning in result.get("warnings", []):
        click.echo(f"{click.style('warning:', fg='yellow')} {warning}", err=True)
    hits = result.get("hits", [])
    pinned = result.get("pinned") or []
    if not hits:
        click.echo(click.style("no matching drawers", dim=True))
    for drawer in pinned:
        first = (drawer["content"].splitlines() or [""])[0][:100]
        click.echo(
            click.style(f"pinned: {drawer['wing']}/{drawer['room']} {short_id(drawer['id'])} ", dim=True) + first
        )
    if not hits:
        return
    click.echo(click.style(f"{len(hits)} hit(s), ranking {result.get('ranking')}", dim=True))
    width = min(shutil.get_terminal_size((100, 24)).columns, 120)
    for rank, hit in enumerate(hits, start=1):
        drawer = hit["drawer"]
        title = f"#{rank}  {title_of(drawer)}"
        state = "current" if drawer.get("valid_to") is None else f"closed {_short(drawer['valid_to'])}"
        state += "".join(f" · {mark}" for mark in ("pinned", "hidden") if drawer.get(mark))
        right = f"{short_id(drawer['id'])} · {state}"
        rule = "─" * max(3, width - len(title) - len(right) - 6)
        click.echo()
        head = click.style("── " + title, bold=True)
        click.echo(f"{head} {click.style(rule, dim=True)} {click.style(right, dim=True)}")
        click.echo(click.style(_origin_line(drawer), dim=True))
        if drawer.get("tags"):
            click.echo(click.style("tags: " + ", ".join(drawer["tags"]), dim=True))
        click.echo(click.style(explain_signals(hit), fg="cyan"))
        shown = hit.get("snippet")
        if full or not shown:
            click.echo(drawer["content"])
            continue
        click.echo(_marked(shown))
        content = drawer["content"]
        if content[: shown["start"]].strip() or content[shown["end"] :].strip():
            part = f"lines {shown['lines'][0]}-{shown['lines'][1]} shown" if shown.get("lines") else "a part shown"
            more = f"{part} · {len(content):,} characters in all · memcastle drawer show {short_id(drawer['id'])}"
            click.echo(click.style(f"[{more}]", dim=True))


def _marked(shown: Mapping[str, Any]) -> str:
    """A snippet's text with its matched terms in bold."""
    import click

    text, out, at = shown["text"], [], 0
    for start, end in shown.get("matches", []):
        out.append(text[at:start])
        out.append(click.style(text[start:end], bold=True, underline=True))
        at = end
    out.append(text[at:])
    return "".join(out)


_SIGNAL_NAMES = {
    "lexical": "words (BM25)",
    "semantic": "meaning (cosine)",
    "fusion": "fused (0-1)",
    "graph": "graph",
    "relevance": "relevance (0-1 in this search)",
}


def explain_signals(hit: Mapping[str, Any]) -> str:
    signals = hit.get("signals", {})
    # The score is the ranking's own signal (BM25 is unbounded) unless a policy or freshness adjusts it: then it is
    # relevance (0-1 within this search) plus the adjustment. Each figure is named with its scale, as on the web page.
    adjusted = signals.get("preference") or signals.get("freshness")
    parts = [f"score {hit['score']:.3f}" + (" (relevance + adjustment)" if adjusted else "")]
    for key, name in _SIGNAL_NAMES.items():
        if key in signals and signals[key] is not None:
            parts.append(f"{name} {signals[key]:.3f}")
    if signals.get("neighbours") is not None:  # none of the query's words, found by the drawers beside it (ADR 0056)
        parts.append(f"beside the words: neighbours {signals['neighbours']:.3f}")
    stage = signals.get("rerank")
    if stage and "skipped" in stage:
        parts.append(f"re-rank off ({stage['skipped']})")
    elif stage:
        parts.append(
            f"re-rank +{stage['added']:.3f} (words {stage['coverage']:g}, near {stage['proximity']:g}; "
            f"fused {signals['fused']:.3f})"
        )
    preference = signals.get("preference")
    if preference:
        criterion = preference.get("criterion")
        why = f" ({criterion['path']}={criterion['equals']!r})" if criterion else ""
        parts.append(f"preference {preference['level']}{why} {preference['adjustment']:+.2f}")
    fresh = signals.get("freshness")
    if fresh:
        parts.append(f"freshness {fresh['adjustment']:+.3f} ({fresh['age_days']:g} days old)")
    contested = standing_line(signals.get("standing"))
    if contested:
        parts.append(contested)
    if hit["drawer"].get("pinned"):
        parts.append("pinned")
    if hit.get("via"):
        parts.append("via " + ", ".join(hit["via"]))
    return " · ".join(parts)


# Ids in tables and panels are shown by their first 8 characters, which every command accepts in their place (the
# daemon resolves a unique prefix that long: memcastle.services.ids.MIN_PREFIX); `--json` gives them whole.
SHORT_ID = 8


def short_id(value: str | None) -> str:
    return (value or "")[:SHORT_ID]


_UUID = re.compile(r"\b([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def clip(text: str, most: int) -> str:
    """`text` in at most `most` characters, ids shortened to their first eight, cut at a word with "…" when longer."""
    text = _UUID.sub(r"\1", text)
    if len(text) <= most:
        return text
    cut = text.rfind(" ", 0, most)
    return text[: cut if cut > most // 2 else most - 1].rstrip() + "…"


def table(title: str, columns: Iterable[str], rows: Iterable[Iterable[Any]]) -> None:
    from rich.table import Table

    grid = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        grid.add_column(column)
    for row in rows:
        grid.add_row(*("" if v is None else str(v) for v in row))
    _console().print(grid)


def show_jobs(jobs: list[Mapping[str, Any]]) -> None:
    table(
        "jobs",
        ["id", "kind", "status", "priority", "progress", "created", "error / waiting for"],
        [
            (
                short_id(j["id"]),
                j["kind"],
                j["status"],
                j["priority"],
                progress_text(j),
                _short(j["created_at"]),
                clip(j.get("error") or j.get("waiting") or "", 80),
            )
            for j in jobs
        ],
    )


def progress_text(job: Mapping[str, Any]) -> str:
    progress = job.get("progress") or {}
    total = progress.get("total")
    current = progress.get("current", 0)
    return f"{current:,}/{total:,}" if total else f"{current:,}"


def backlog_text(backlog: Mapping[str, Any]) -> str:
    """` · 1,200 passages done, ~3,400 to go at 41/s, ETA 2 min` from an embed sweep's figures (status or job)."""
    pending, done = backlog.get("passages_pending"), backlog.get("passages_done", backlog.get("passages"))
    if not pending:
        return ""
    parts = [f"{done:,} passages done" if done is not None else "", f"~{pending:,} to go"]
    rate = backlog.get("passages_per_second")
    if rate:
        parts[-1] += f" at {rate:.0f}/s"
    eta = backlog.get("eta_seconds")
    if eta is not None:
        parts.append(eta_text(eta))
    return " · " + ", ".join(p for p in parts if p)


def index_text(index: Mapping[str, Any]) -> str:
    """`100,000 in memory · HNSW graph holds 98,000 (the rest scanned exactly)`, or why the scan is exact."""
    vectors, in_graph = index["vectors"], index["in_graph"]
    if index["search"] == "pgvector":
        return f"{vectors:,} in PostgreSQL · pgvector HNSW index"
    if index.get("loading"):
        return f"{vectors:,} in memory so far · loading the stored vectors (searches by meaning cover those read)"
    if index["search"] == "graph":
        rest = vectors - in_graph
        return f"{vectors:,} in memory · HNSW graph holds {in_graph:,}" + (
            f" ({rest:,} scanned exactly beside it)" if rest > 0 else ""
        )
    if in_graph:
        return f"{vectors:,} in memory · exact scan while the graph is built ({in_graph:,} so far)"
    return f"{vectors:,} in memory · exact scan (a graph from {index['graph_from']:,})"


def show_job(job: Mapping[str, Any]) -> None:
    from rich.panel import Panel

    message = (job.get("progress") or {}).get("message") or ""
    backlog = "" if job.get("finished_at") else backlog_text(job.get("checkpoint") or {})
    if backlog:  # a running embed sweep: its line says the figures below; only the stage it is at stays here
        message = "passages" + (message[message.rfind(" (") :] if message.endswith(")") else "")
    lines = [
        f"[bold]{job['kind']}[/bold] job {job['id']}",
        f"status: {job['status']}  priority: {job['priority']}",
        f"progress: {progress_text(job)} {message}",
        f"created {_short(job['created_at'])} · started {_short(job.get('started_at'))} · finished "
        f"{_short(job.get('finished_at'))}",
        f"attempt {job['attempt']} · recoveries {job['recovery_attempts']}",
    ]
    if job.get("error"):
        lines.append(f"[red]error:[/red] {job['error']}")
    if job.get("waiting"):
        lines.append(f"waiting: {job['waiting']}")
    if backlog:
        lines.append("embedding: " + backlog.removeprefix(" · "))
    if job.get("result"):
        lines.append("result: " + json.dumps(job["result"], ensure_ascii=False))
    _console().print(Panel("\n".join(lines), title_align="left"))


def show_policy(policy: Mapping[str, Any]) -> None:
    default = policy["default"]
    _console().print(
        f"default level [bold]{default['value']}[/bold] [dim](from {default['layer']})[/dim]"
        + ("  [dim]— neutral: search scores are untouched[/dim]" if policy.get("neutral") else "")
    )
    rows = []
    for name, source in policy.get("sources", {}).items():
        level = source["level"]
        rows.append((name, "", level["value"] or "(default)", level["layer"] or ""))
        for criterion in source["criteria"]["value"]:
            rows.append(
                (
                    "",
                    f"{criterion['path']} = {criterion['equals']!r}",
                    criterion["level"],
                    source["criteria"]["layer"] or "",
                )
            )
    if rows:
        table("sources", ["connector", "criterion", "level", "from"], rows)


def show_trace(trace: Mapping[str, Any]) -> None:
    result = trace["result"]
    _console().print(
        f"drawer {trace['drawer_id']}: [bold]{result['level']}[/bold] (adjustment {result['adjustment']:+.2f})"
    )
    for step in trace.get("steps", []):
        _console().print(f"  • {step}")
    criteria = trace.get("criteria") or []
    if criteria:
        table(
            "criteria tried, in declaration order",
            ["path", "equals", "level", "found", "matched", "won"],
            [
                (
                    c["path"],
                    repr(c["equals"]),
                    c["level"],
                    repr(c["found"]) if c["present"] else "(absent)",
                    "yes" if c["matched"] else "no",
                    "yes" if c["won"] else "",
                )
                for c in criteria
            ],
        )


def show_facts(facts: list[Mapping[str, Any]], *, links: bool = False) -> None:
    if not facts:
        _console().print("[dim]no facts[/dim]")
        return
    rows = []
    for fact in facts:
        life = fact["lifecycle"]
        state = life["state"]
        if state == "conflicting":
            state += " (preferred)" if life.get("preferred") else " (not preferred)"
        rows.append(
            (
                short_id(fact["id"]),
                fact.get("subject_name"),
                fact["predicate"],
                fact.get("object_name"),
                f"{fact['confidence']:.2f}",
                _short(fact["valid_from"]),
                state,
                "explicit" if fact["explicit"] else short_id(fact["provenance"]["drawer"]),
            )
        )
    table("facts", ["id", "subject", "predicate", "object", "conf", "valid from", "state", "evidence"], rows)
    for fact in facts:
        life = fact["lifecycle"]
        if life.get("basis"):
            _console().print(f"[dim]{short_id(fact['id'])}: {life['basis']}[/dim]")
        if links:
            for link in life["links"]:
                _console().print(
                    f"[dim]  {short_id(link['from'])} {link['kind']} {short_id(link['to'])} "
                    f"({link['origin']}: {link['reason']})[/dim]"
                )
