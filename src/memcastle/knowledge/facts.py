"""Fact lifecycle (SPEC §6) and conflict presentation (SPEC §5): states computed at read time from immutable links.

    state_of(fact, links, facts, at)       historical | invalidated | superseded | conflicting | current
    infer_links(new, existing, ...)        confirms / contradicts / supersedes, never over an explicit decision
    present(facts, links, policy, at)      each fact with its state, links and, in a conflict, preferred + basis

Nothing here decides truth: contradicting facts both stay open; `preferred` only orders their presentation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta

from memcastle.clock import to_datetime
from memcastle.model import (
    SINGLE_VALUED_PREDICATES,
    Assertion,
    Entity,
    FactLink,
    Origin,
)
from memcastle.model.answers import ConflictChoice, FactView
from memcastle.model.vocabulary import FactState
from memcastle.preferences import Policy, PreferenceMatch, resolve

FRESHNESS_MAX = 0.12
FRESHNESS_DAYS = 30.0


SYMMETRIC = frozenset({"confirms", "contradicts"})
# How many stored facts of the same claim (and, for a single-valued predicate, of a rival value) a newly extracted
# fact is compared with: the newest ones. Agreement among many copies stays connected through them.
LINK_FANOUT = 8


def link_id(from_id: str, to_id: str, kind: str, origin: str) -> str:
    """Deterministic: retrying an operation lands on the same link (either direction, for symmetric kinds)."""
    if kind in SYMMETRIC:
        from_id, to_id = sorted((from_id, to_id))
    return hashlib.sha256(f"{from_id}|{to_id}|{kind}|{origin}".encode()).hexdigest()[:32]


def make_link(
    from_id: str, to_id: str, kind: str, origin: str, reason: str, at: str, evidence: str | None = None
) -> FactLink:
    return FactLink(
        id=link_id(from_id, to_id, kind, origin),
        from_id=from_id,
        to_id=to_id,
        kind=kind,
        origin=origin,
        reason=reason,
        at=at,
        evidence_drawer=evidence,
    )


def is_open(fact: Assertion, at: str) -> bool:
    return fact.valid_from <= at and (fact.valid_to is None or fact.valid_to > at)


def _overlaps(a: Assertion, b: Assertion) -> bool:
    return (b.valid_to is None or a.valid_from < b.valid_to) and (a.valid_to is None or b.valid_from < a.valid_to)


def effective_at(link: FactLink, facts: Mapping[str, Assertion]) -> str:
    """When a link counts: an explicit decision from when it was recorded; an inferred link from when both of its
    facts hold (it describes the evidence, not a later decision)."""
    if link.origin == "explicit":
        return link.at
    ends = [facts[i].valid_from for i in (link.from_id, link.to_id) if i in facts]
    return max(ends) if ends else link.at


def state_of(fact: Assertion, links: Sequence[FactLink], facts: Mapping[str, Assertion], at: str) -> FactState:
    """The fact's state at instant `at`; decisions recorded after `at` are ignored."""
    known = [link for link in links if effective_at(link, facts) <= at]
    if fact.valid_from > at:
        return "historical"
    if any(link.kind == "invalidates" and link.to_id == fact.id for link in known):
        return "invalidated"
    if any(link.kind == "supersedes" and link.to_id == fact.id for link in known):
        return "superseded"
    if fact.valid_to is not None and fact.valid_to <= at:
        return "historical"
    if rivals(fact, known, facts, at):
        return "conflicting"
    return "current"


def rivals(fact: Assertion, links: Sequence[FactLink], facts: Mapping[str, Assertion], at: str) -> list[Assertion]:
    """Open facts that contradict `fact` at `at` and have not been superseded or invalidated by then."""
    known = [link for link in links if effective_at(link, facts) <= at]
    decided = {
        frozenset((lk.from_id, lk.to_id)) for lk in known if lk.origin == "explicit" and lk.kind != "contradicts"
    }
    found = []
    for link in known:
        if link.kind != "contradicts" or fact.id not in (link.from_id, link.to_id):
            continue
        if link.origin == "inferred" and frozenset((link.from_id, link.to_id)) in decided:
            continue  # a person's decision about the pair (confirms, refines, …) stands over the inference
        other = facts.get(link.to_id if link.from_id == fact.id else link.from_id)
        if other is None or not is_open(other, at):
            continue
        closed = any(lk.kind in ("supersedes", "invalidates") and lk.to_id == other.id for lk in known)
        if not closed:
            found.append(other)
    return found


def infer_links(
    new: Assertion,
    existing: Iterable[Assertion],
    *,
    predecessor_drawer: str | None,
    explicit_pairs: set[frozenset[str]],
    at: str,
) -> list[FactLink]:
    """Links a newly extracted fact earns against what the palace already holds (SPEC §6)."""
    links = []
    superseded: set[str] = set()
    for old in existing:
        if old.id == new.id or old.subject != new.subject or old.predicate != new.predicate:
            continue
        if frozenset((old.id, new.id)) in explicit_pairs:
            continue  # an explicit decision about this pair stands; inference never overrides it
        if predecessor_drawer is not None and old.drawer_id == predecessor_drawer:
            links.append(
                make_link(
                    new.id,
                    old.id,
                    "supersedes",
                    "inferred",
                    "its evidence drawer superseded the earlier one",
                    at,
                    new.drawer_id,
                )
            )
            superseded.add(old.id)
            continue
        if (old.drawer_id is not None and old.drawer_id == new.drawer_id) or not _overlaps(old, new):
            continue  # one drawer saying a thing twice is no confirmation; two statements without a drawer are two
        if old.object == new.object:
            links.append(
                make_link(
                    new.id,
                    old.id,
                    "confirms",
                    "inferred",
                    "same subject, predicate and object from different evidence",
                    at,
                    new.drawer_id,
                )
            )
        elif new.predicate in SINGLE_VALUED_PREDICATES and old.valid_to is None:
            links.append(
                make_link(
                    new.id,
                    old.id,
                    "contradicts",
                    "inferred",
                    f"{new.predicate} holds one value at a time",
                    at,
                    new.drawer_id,
                )
            )
    return links


# --- presentation ---------------------------------------------------------------------------------


def freshness(fact: Assertion, at: str) -> float:
    """Bounded: 0.12 / (1 + age_days / 30), age from the evidence's occurred_at or the fact's valid_from."""
    start = (fact.origin or {}).get("occurred_at") or fact.valid_from
    age = to_datetime(at) - to_datetime(start)
    days = max(0.0, age / timedelta(days=1))
    return FRESHNESS_MAX / (1 + days / FRESHNESS_DAYS)


def preference_of(fact: Assertion, policy: Policy) -> PreferenceMatch:
    """The preference of a fact's evidence: its level, and the connector and criterion that decided it."""
    origin = Origin.from_json(fact.origin) if fact.origin and fact.origin.get("connector") else None
    return resolve(policy, origin)


def adjustment_of(fact: Assertion, policy: Policy) -> tuple[float, str]:
    match = preference_of(fact, policy)
    return match.adjustment, match.level


def quality(fact: Assertion, policy: Policy, at: str) -> float:
    adjustment, _ = adjustment_of(fact, policy)
    return fact.confidence + freshness(fact, at) + 0.5 * adjustment


def choose_preferred(group: Sequence[Assertion], policy: Policy, at: str) -> tuple[Assertion, str]:
    """Presentation only: explicit first; then a fact with evidence before one whose evidence was forgotten (kept
    for a confirmation, it says nothing of its own); then quality; then later valid_from; then id. Returns (fact,
    basis)."""

    ordered = sorted(
        group,
        key=lambda f: (
            0 if f.explicit else 1,
            0 if f.explicit or f.drawer_id else 1,
            -round(quality(f, policy, at), 6),
            _descending(f.valid_from),
            f.id,
        ),
    )
    first, second = ordered[0], ordered[1]
    adj_first, level_first = adjustment_of(first, policy)
    adj_second, level_second = adjustment_of(second, policy)
    q1, q2 = quality(first, policy, at), quality(second, policy, at)
    if first.explicit != second.explicit:
        basis = "explicit assertion comes first"
    elif bool(first.drawer_id) != bool(second.drawer_id):
        basis = "a fact with evidence comes before one whose evidence was forgotten"
    elif round(q1, 6) != round(q2, 6):
        parts = (
            f"confidence {first.confidence:.2f} vs {second.confidence:.2f}, freshness "
            f"{freshness(first, at):.3f} vs {freshness(second, at):.3f}, half the source adjustment "
            f"{0.5 * adj_first:+.2f} ({level_first}) vs {0.5 * adj_second:+.2f} ({level_second})"
        )
        basis = f"higher quality {q1:.3f} vs {q2:.3f}: {parts}"
    elif first.valid_from != second.valid_from:
        basis = f"equal quality; later valid_from ({first.valid_from})"
    else:
        basis = "equal quality and valid_from; smaller id"
    return first, basis


def _descending(stamp: str) -> str:
    """Sort key that orders timestamps newest first inside an ascending sort."""
    return "".join(chr(0x10FFFF - ord(c)) for c in stamp)


def present(
    facts: Sequence[Assertion],
    links: Sequence[FactLink],
    everything: Mapping[str, Assertion],
    entities: Mapping[str, Entity],
    policy: Policy,
    at: str,
) -> list[FactView]:
    """Facts as they are read: the assertion, entity names, state, links, and preferred/basis in a conflict."""
    out = []
    chosen_in: dict[str, tuple[Assertion, str]] = {}  # a conflict group's preferred fact, for each of its members
    for fact in facts:
        state = state_of(fact, links, everything, at)
        conflict = None
        if state == "conflicting":
            if fact.id not in chosen_in:
                group = conflict_group(fact, links, everything, at)
                decision = choose_preferred(group, policy, at)
                chosen_in.update(dict.fromkeys((f.id for f in group), decision))
            chosen, basis = chosen_in[fact.id]
            conflict = ConflictChoice(chosen.id, basis)
        match = preference_of(fact, policy)  # of its evidence, always
        out.append(
            FactView(
                fact=fact,
                subject_name=entities[fact.subject].name if fact.subject in entities else None,
                object_name=entities[fact.object].name if fact.object in entities else None,
                state=state,
                links=tuple(link for link in links if fact.id in (link.from_id, link.to_id)),
                level=match.level,
                adjustment=match.adjustment,
                conflict=conflict,
                resolved=match.to_json(),
            )
        )
    return out


def conflict_group(
    fact: Assertion, links: Sequence[FactLink], facts: Mapping[str, Assertion], at: str
) -> list[Assertion]:
    """The fact and every fact that conflicts with it, directly or through another: one group, one preferred fact
    that every member names (Lisbon–Porto and Madrid–Lisbon are one conflict, not two)."""
    group = {fact.id: fact}
    frontier = [fact]
    while frontier:
        current = frontier.pop()
        for other in rivals(current, links, facts, at):
            if other.id not in group:
                group[other.id] = other
                frontier.append(other)
    return sorted(group.values(), key=lambda f: f.id)
