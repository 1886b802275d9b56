"""Compact views for a small context: what an agent needs to judge a hit, a job, a fact or a miner, once each, with
no hashes — and a budget (`fit`) no answer exceeds. MCP answers with them by default; REST gives them on request
(`full: false`), keeping its complete shape by default (docs/adr/0026-compact-answers-for-agents.md).

A compact hit carries its evidence: the snippet (the best passage's text, its lines and the query's words it holds),
where it came from (connector, document, lines, event time), the ranking signals and the preference in one line, and
how long the whole drawer is (`chars`), read with `full` or the one-drawer read."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memcastle.model import Drawer, Entity, FactLink, Hit, Job, SearchResult
from memcastle.model.answers import EntityView, FactView, MinerView, standing_line
from memcastle.services.ids import MIN_PREFIX

SIGNALS = ("lexical", "neighbours", "semantic", "fusion", "graph", "relevance", "coverage")
MIN_BUDGET = 200  # the smallest max_chars: room for an empty answer that says what it left out


def _rounded(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


def _present(data: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None and value != [] and value != {}}


def preference_line(preference: Mapping[str, Any] | None) -> str | None:
    """`high +0.050 (notes: team = a)`: the level, the adjustment it made and what decided it."""
    if not preference:
        return None
    criterion = preference.get("criterion")
    because = preference.get("connector") or "default"
    if criterion:
        because += f": {criterion['path']} = {criterion['equals']}"
    return f"{preference.get('level')} {float(preference.get('adjustment') or 0.0):+.3f} ({because})"


def origin_view(drawer: Drawer) -> dict[str, Any]:
    """Where a drawer came from: a mined one's connector, document, lines and event time; a written one's kind,
    writer and time."""
    origin = drawer.source.origin
    if origin is None:
        source = drawer.source
        return _present({"kind": source.kind, "agent": source.agent, "uri": source.uri, "at": drawer.valid_from})
    return _present(
        {
            "connector": origin.connector,
            "document": origin.document,
            "lines": list(origin.lines) if origin.lines else None,
            "at": origin.occurred_at,
        }
    )


def drawer_view(drawer: Drawer, *, content: bool) -> dict[str, Any]:
    """A drawer's place, name, origin and state; its text when `content`."""
    out = _present(
        {
            "id": drawer.id,
            "wing": drawer.wing,
            "room": drawer.room,
            "name": drawer.name,
            "tags": list(drawer.tags),
            "origin": origin_view(drawer),
            "closed": drawer.valid_to,
            "superseded_by": drawer.superseded_by,
            "supersedes": drawer.supersedes,
            "pinned": drawer.pinned or None,
            "hidden": drawer.hidden or None,
            "chars": len(drawer.content),
        }
    )
    if content:
        out["content"] = drawer.content
    return out


def hit_view(hit: Hit, *, full: bool = False) -> dict[str, Any]:
    out = drawer_view(hit.drawer, content=full)
    snippet = hit.snippet
    if snippet is not None and not full:
        words = sorted({snippet.text[start:end].lower() for start, end in snippet.matches})
        out["snippet"] = _present(
            {"text": snippet.text, "lines": list(snippet.lines) if snippet.lines else None, "terms": words}
        )
    out["score"] = _rounded(hit.score)
    out["signals"] = {key: _rounded(hit.signals[key]) for key in SIGNALS if hit.signals.get(key) is not None}
    stage = hit.signals.get("rerank")
    if stage and "skipped" in stage:  # `auto` left this pool in the fusion's order, and says why
        out["signals"]["rerank"] = f"off ({stage['skipped']})"
    elif stage:  # the second stage: what it added to the fused relevance, and what it read (docs/adr/0047)
        out["signals"]["rerank"] = f"+{stage['added']:.3f} (words {stage['coverage']:g}, near {stage['proximity']:g})"
    line = preference_line(hit.signals.get("preference"))
    if line is not None:
        out["preference"] = line
    fresh = hit.signals.get("freshness")
    if fresh:
        out["freshness"] = f"{float(fresh['adjustment']):+.3f} ({fresh['age_days']:g} days old)"
    contested = standing_line(hit.signals.get("standing"))
    if contested is not None:
        out["contested"] = contested
    if hit.via is not None:
        out["via"] = list(hit.via)
    return out


def search_view(result: SearchResult, *, full: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"hits": [hit_view(hit, full=full) for hit in result.hits], "ranking": result.ranking}
    if result.pinned:
        out["pinned"] = [drawer_view(drawer, content=full) for drawer in result.pinned]
    if result.warnings:
        out["warnings"] = list(result.warnings)
    return out


def job_view(job: Job | Mapping[str, Any]) -> dict[str, Any]:
    """A job in a line's worth: what it works on, where it is, how it ended."""
    data = job.to_json() if isinstance(job, Job) else dict(job)
    params = data.get("params") or {}
    progress = data.get("progress") or {}
    done = progress.get("current")
    total = progress.get("total")
    error = (data.get("error") or "").splitlines()
    return _present(
        {
            "id": data["id"],
            "kind": data["kind"],
            "status": data["status"],
            "source": " ".join(str(params[k]) for k in ("connector", "locator") if params.get(k)) or None,
            "progress": f"{done}/{total}" if total else (str(done) if done else None),
            "note": progress.get("message") or None,
            "created_at": data.get("created_at"),
            "finished_at": data.get("finished_at"),
            "error": error[0][:200] if error else None,
            "waiting": data.get("waiting"),
        }
    )


JOB_NOTE_CHARS = 40  # a listed job's progress message, cut to a glance


def job_list_view(jobs: Sequence[Job]) -> dict[str, Any]:
    """Jobs as a list an agent reads at a glance (`memcastle_job_list`): each by its 8-character id, one instant
    (`at`: when it finished, else when it was asked for, to the second), its source with the folder every listed
    source shares said once (`under`), its progress unless it completed all of it, a short note; `memcastle_job_get`
    has the whole job."""
    views = [job_view(job) for job in jobs]
    folders = [v["source"].split(" ", 1)[1] for v in views if " /" in v.get("source", "")]
    under = os.path.commonpath(folders) if len(folders) > 1 else ""
    under = under if len(under) > 1 else ""
    listed = []
    for view in views:
        at = view.pop("finished_at", None) or view.pop("created_at", None)
        view.pop("created_at", None)
        source = view.get("source")
        if under and source and " /" in source:
            connector, folder = source.split(" ", 1)
            view["source"] = f"{connector} {os.path.relpath(folder, under)}"
        progress = view.get("progress", "")
        if view["status"] == "completed" and "/" in progress and len(set(progress.split("/"))) == 1:
            view.pop("progress")  # all of it: said by `completed`
        if view.get("note") and len(view["note"]) > JOB_NOTE_CHARS:
            view["note"] = view["note"][: JOB_NOTE_CHARS - 1] + "…"
        listed.append({**view, "id": short(view["id"]), "at": at[:19] + "Z" if at else None})
    out: dict[str, Any] = {"under": under} if under else {}
    return {**out, "jobs": [_present(v) for v in listed]}


def fact_view(view: FactView) -> dict[str, Any]:
    """A fact as a sentence with its state, evidence and links, other facts named by the 8 characters that stand for
    their ids (memcastle_fact_get has the whole record). In a conflict the preferred fact carries `preferred: true`
    and the basis of the choice; the others name it (`outranked_by`)."""
    fact, conflict = view.fact, view.conflict
    links = [_link_text(link, fact.id) for link in view.links]
    preferred = conflict.preferred_id == fact.id if conflict else None
    subject = view.subject_name if view.subject_name is not None else fact.subject
    object_ = view.object_name if view.object_name is not None else fact.object
    return _present(
        {
            "id": fact.id,
            "fact": f"{subject} {fact.predicate} {object_}",
            "state": view.state,
            "preferred": True if preferred else None,
            "basis": conflict.basis if conflict and preferred else None,
            "outranked_by": short(conflict.preferred_id) if conflict and not preferred else None,
            "confidence": _rounded(fact.confidence) if fact.confidence != 1.0 else None,
            "valid_from": fact.valid_from,
            "valid_to": fact.valid_to,
            # A stated fact without a drawer says so rather than leaving the reader to guess.
            "evidence": fact.drawer_id or ("none given" if fact.explicit else None),
            "explicit": fact.explicit or None,
            "preference": preference_line(view.preference),
            "links": links,
        }
    )


# How a link reads from the fact it points at: the new fact `supersedes` the old one, which is `superseded by` it.
_PASSIVE = {
    "supersedes": "superseded by",
    "confirms": "confirmed by",
    "contradicts": "contradicted by",
    "refines": "refined by",
}


def _link_text(link: FactLink, fact_id: str) -> str:
    """One link as read from this fact, on its own: which way it points, the other fact, and why a fact ended."""
    if link.from_id == link.to_id:  # an invalidation is recorded as a link of the fact to itself
        return f"invalidated: {link.reason}" if link.kind == "invalidates" else f"{link.kind}: {link.reason}"
    if link.from_id == fact_id:
        return f"{link.kind} {short(link.to_id)}"
    return f"{_PASSIVE.get(link.kind, link.kind + ' (from)')} {short(link.from_id)}"


def short(value: str | None) -> str | None:
    """An id by the 8 characters that stand for it wherever an id is taken (`memcastle.services.ids`)."""
    return value[:MIN_PREFIX] if value else None


ENTITY_MENTIONS = 10  # drawers named on an entity's page; `mentioned` counts them all


def entity_page(found: EntityView, others: Sequence[Entity], relationships: Sequence[FactView]) -> dict[str, Any]:
    """An entity as an agent reads it: what it is, its facts as `fact_view`s, the first drawers mentioning it (by
    the 8 characters of their ids) and how many there are, possible duplicates, other entities of the same name."""
    known = found.entity
    hints = [
        f"{h.kind} {short(h.other_id if h.entity_id == known.id else h.entity_id)}: {h.reason}" for h in found.hints
    ]
    return _present(
        {
            "id": known.id,
            "name": known.name,
            "kind": known.kind,
            "aliases": list(known.aliases),
            "facts": [fact_view(f) for f in relationships],
            "mentioned": len(found.mentions),
            "mentions": [short(m.drawer_id) for m in found.mentions[:ENTITY_MENTIONS]],
            "possibly_same": hints,
            "same_name": [f"{o.name} ({o.kind}) {short(o.id)}" for o in others],
        }
    )


def graph_view(found: dict[str, Any]) -> dict[str, Any]:
    """The service's nodes and edges as an agent reads them: each fact `subject predicate object` with its state
    and short id, the links between facts, the entities the walk started from and reached."""
    nodes = {node["id"]: node for node in found["nodes"]}
    ends: dict[str, dict[str, str]] = {}
    links: list[str] = []
    for edge in found["edges"]:
        if edge["kind"] in ("subject", "object"):
            fact = edge["to"] if edge["kind"] == "subject" else edge["from"]
            other = edge["from"] if edge["kind"] == "subject" else edge["to"]
            ends.setdefault(fact, {})[edge["kind"]] = nodes.get(other, {}).get("label", short(other) or "")
        elif edge["kind"] != "mentions":
            links.append(f"{short(edge['from'])} {edge['kind']} {short(edge['to'])}")
    facts = []
    for node in found["nodes"]:
        if node["kind"] != "fact":
            continue
        end = ends.get(node["id"], {})
        facts.append(
            f"{end.get('subject', '?')} {node['label'].replace(' ', '_')} {end.get('object', '?')}"
            f" [{node['state']}] {short(node['id'])}"
        )
    entities = [node for node in found["nodes"] if node["kind"] == "entity"]
    return _present(
        {
            "from": [f"{n['label']} ({n['type']}) {short(n['id'])}" for n in entities if n.get("seed")],
            "reached": len(entities),
            "facts": facts,
            "links": links,
            "truncated": found["truncated"] or None,
        }
    )


def miner_view(miner: MinerView) -> dict[str, Any]:
    spec, last = miner.spec, miner.last_run
    return _present(
        {
            "name": spec.name,
            "source": f"{spec.connector} {spec.locator}".strip(),
            "wing": spec.wing,
            "triggers": miner.triggers,
            "state": "enabled" if miner.enabled else "disabled",
            "last_run": f"{last.status} at {last.at} ({last.job_id})" if last else None,
            "next_run": miner.next_run,
        }
    )


# --- the budget ----------------------------------------------------------------------------------------------------


def size(data: Any) -> int:
    """Characters of `data` as the interfaces answer it: compact JSON, Unicode kept."""
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def within(answer: Any, budget: int) -> Any:
    """Any answer within `budget` characters: its longest lists cut to whole items (`fit`) until it holds; an
    answer that still does not (one item longer than the budget) becomes its first characters, marked `cut`, with
    what to do about it."""
    if not isinstance(answer, dict) or size(answer) <= budget:
        return answer
    for key in sorted((k for k, v in answer.items() if isinstance(v, list) and v), key=lambda k: -size(answer[k])):
        answer = fit(answer, key, budget)
        if size(answer) <= budget:
            return answer
    text = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
    note = (
        f"this answer has {len(text):,} characters, more than the {budget:,} sent at once: ask for less (fewer items,"
        " a narrower scope, lines of a drawer) or set max_chars"
    )
    skeleton = {"cut": True, "chars": len(text), "note": note, "start": ""}
    low, high = 0, max(0, budget - size(skeleton))  # the longest start that fits once encoded (escapes grow it)
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if size({**skeleton, "start": text[:middle]}) <= budget else (low, middle - 1)
    return {**skeleton, "start": text[:low]}


def fit(
    answer: dict[str, Any],
    key: str,
    max_chars: int | None,
    *,
    shrink: Callable[[dict[str, Any], int], dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """`answer` with as many of its `key` items (in order) as fit in `max_chars` characters, whole items only; the
    ones left out are counted in `omitted` and `note` says how to get them. `shrink(item, room)` may offer a shorter
    form of the first item that does not fit whole (a hit cut to its snippet), so an answer is never empty for want
    of room when a shorter form fits."""
    items: Sequence[dict[str, Any]] = answer.get(key) or []
    if max_chars is None or size(answer) <= max_chars:
        return answer
    reserve = 160  # what `omitted` and `note` add
    used = size({**answer, key: []}) + reserve
    kept: list[dict[str, Any]] = []
    for item in items:
        cost = size(item) + (1 if kept else 0)  # its characters and the comma before it
        if used + cost <= max_chars:
            kept.append(item)
            used += cost
            continue
        if shrink is not None:
            smaller = shrink(item, max_chars - used - (1 if kept else 0))
            if smaller is not None and used + size(smaller) + (1 if kept else 0) <= max_chars:
                kept.append(smaller)
        break

    def left_out(shown: list[dict[str, Any]]) -> dict[str, Any]:
        omitted = len(items) - len(shown)
        note = f"{omitted} of {len(items)} {key} left out to stay within max_chars {max_chars}: raise it or ask fewer"
        return {**answer, key: shown, "omitted": omitted, "note": note}

    out = left_out(kept)
    while size(out) > max_chars and out[key]:  # a long warning: drop more rather than overflow
        out = left_out(out[key][:-1])
    if not out[key] and items and shrink is not None:
        # Not even one item whole: the first one at its shortest, with a shorter note, rather than nothing.
        more = len(items) - 1
        skeleton = {**answer, key: [], "omitted": more,
                    "note": f"the first of {key} cut to fit max_chars {max_chars}; {more} more left out"}  # fmt: skip
        smaller = shrink(items[0], max_chars - size(skeleton))
        if smaller is not None and size(skeleton) + size(smaller) <= max_chars:
            return {**skeleton, key: [smaller]}
    return out


def shorter_hit(hit: dict[str, Any], room: int) -> dict[str, Any] | None:
    """A hit cut down to fit `room` characters: its text (whole content or snippet) cut at a line, marked `cut`."""
    field = "content" if "content" in hit else "snippet"
    if field == "snippet" and "snippet" in hit:
        text = hit["snippet"]["text"]
    elif field == "content":
        text = hit["content"]
    else:
        return None
    for shape in (hit, _bare(hit, field)):  # the hit as it is, then only what names it and its text
        overhead = size(
            {**shape, field: "", "cut": True}
            if field == "content"
            else {**shape, "snippet": {**shape["snippet"], "text": ""}, "cut": True}
        )
        allowed = room - overhead
        if allowed < MIN_CUT:
            continue
        cut = text[:allowed]
        if "\n" in cut[MIN_CUT:]:
            cut = cut[: cut.rindex("\n")]
        cut = cut[: max(0, allowed - (size(cut) - len(cut)))]  # escapes take room too
        if field == "content":
            return {**shape, "content": cut, "cut": True}
        return {**shape, "snippet": {**shape["snippet"], "text": cut}, "cut": True}
    return None


MIN_CUT = 20  # the fewest characters of text a shortened hit keeps


def _bare(hit: dict[str, Any], field: str) -> dict[str, Any]:
    """A hit with only its id (the 8 characters that stand for it), its score and its text."""
    text = {"snippet": {"text": hit["snippet"]["text"]}} if field == "snippet" else {"content": hit.get("content")}
    return {"id": short(hit.get("id")), **({"score": hit["score"]} if "score" in hit else {}), **text}
