"""A hit's standing: whether its drawer is the evidence of a contested fact, and which claim stands
(docs/adr/0043-truth-shows-in-search.md).

A fact is contested when it is `conflicting` (another open fact contradicts it), `superseded` or `invalidated`. For
each such fact the claim that stands is computed as facts are read (`memcastle.knowledge.facts`): a conflict group's
preferred fact, the open fact that superseded it, or — for an invalidated one — the preferred of the open facts it
contradicted. Evidence of the standing claim (any fact making that claim: the same subject, predicate and object)
and evidence of the claims it outranks are the two sides of one *question*.

Search marks every hit that evidences a contested fact. When its pool holds both sides of a question — the query is
about that fact — the standing claim's evidence takes the best places the question's evidence held (`stand_first`):
only those drawers trade places, each hit's standing says by how much its score moved, nothing is hidden, and a
pool without such a pair is ranked exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from memcastle.knowledge.facts import choose_preferred, conflict_group, rivals, state_of
from memcastle.model import Assertion, Entity, FactLink, Hit
from memcastle.preferences import Policy
from memcastle.store import KnowledgeStore

FACTS_PER_POOL = 400  # the most facts read for one pool's drawers


Claim = tuple[str, str, str]  # subject, predicate, object


def claim_of(fact: Assertion) -> Claim:
    return (fact.subject, fact.predicate, fact.object)


@dataclass(frozen=True)
class Standing:
    """What a hit's drawer evidences about a contested fact: the fact, its state, the claim that stands and why, and
    how far it moved the hit's score (`stand_first`; 0 when the pool held one side of the question only)."""

    fact_id: str
    fact: str
    state: str
    stands: bool  # the drawer evidences the claim that stands
    standing_id: str
    standing: str
    basis: str
    adjustment: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "fact_id": self.fact_id,
            "fact": self.fact,
            "state": self.state,
            "stands": self.stands,
            "standing_id": self.standing_id,
            "standing": self.standing,
            "basis": self.basis,
            "adjustment": self.adjustment,
        }


@dataclass(frozen=True)
class _Question:
    loser: Assertion
    state: str
    winner: Assertion
    basis: str


def standings(
    store: KnowledgeStore,
    drawer_ids: Sequence[str],
    policy: Policy,
    at: str,
    *,
    readable: Callable[[Sequence[Assertion]], Collection[str]] | None = None,
) -> dict[str, Standing]:
    """Each of `drawer_ids` that evidences a contested fact → its standing, adjustments applied where both sides
    of a question are among the drawers. `readable(facts)` (the ids of those the client may see), when given,
    leaves out facts the client may not read: for it a conflict with such a fact does not exist."""
    facts = store.facts.find_assertions(drawer_ids=drawer_ids, limit=FACTS_PER_POOL)
    if not facts:
        return {}
    everything = {f.id: f for f in facts}
    links = store.facts.links_of(list(everything))
    if not links:
        return {}
    # Two hops: a rival's own decisions (an invalidation, a supersession) decide whether it still contradicts.
    everything.update(store.facts.get_assertions([i for link in links for i in (link.from_id, link.to_id)]))
    links = store.facts.links_of(list(everything))
    everything.update(store.facts.get_assertions([i for link in links for i in (link.from_id, link.to_id)]))
    if readable is not None:
        seen = set(readable(list(everything.values())))
        everything = {i: f for i, f in everything.items() if i in seen}
        links = [link for link in links if link.from_id in everything and link.to_id in everything]
    questions = [q for fact in facts if fact.id in everything for q in _question(fact, links, everything, policy, at)]
    if not questions:
        return {}
    named = [i for q in questions for f in (q.loser, q.winner) for i in (f.subject, f.object)]
    entities = store.entities.get_entities(named)
    return _per_drawer(facts, questions, entities)


def _question(
    fact: Assertion, links: Sequence[FactLink], facts: Mapping[str, Assertion], policy: Policy, at: str
) -> list[_Question]:
    """The question a contested fact belongs to, with the fact that stands in it (none for an uncontested fact, or
    an invalidated one that contradicted nothing still open)."""
    state = state_of(fact, links, facts, at)
    if state == "conflicting":
        winner, basis = choose_preferred(conflict_group(fact, links, facts, at), policy, at)
        return [_Question(fact, state, winner, basis)]
    if state == "superseded":
        successor = _successor(fact, links, facts, at)
        if successor is None:
            return []
        return [_Question(fact, state, successor, f"{short(successor.id)} superseded {short(fact.id)}")]
    if state == "invalidated":
        reason = next((lk.reason for lk in links if lk.kind == "invalidates" and lk.to_id == fact.id), "")
        open_rivals = _former_rivals(fact, links, facts, at)
        if not open_rivals:
            return []
        winner, _ = choose_preferred(open_rivals, policy, at) if len(open_rivals) > 1 else (open_rivals[0], "")
        because = f": {reason}" if reason else ""
        return [_Question(fact, state, winner, f"{short(fact.id)} was invalidated{because}")]
    return []


def _successor(fact: Assertion, links: Sequence[FactLink], facts: Mapping[str, Assertion], at: str) -> Assertion | None:
    """The open end of the chain of facts that superseded `fact`."""
    seen = {fact.id}
    current = fact
    while True:
        nexts = [lk.from_id for lk in links if lk.kind == "supersedes" and lk.to_id == current.id and lk.at <= at]
        following = next((facts[i] for i in nexts if i in facts and i not in seen), None)
        if following is None:
            return current if current.id != fact.id else None
        seen.add(following.id)
        current = following


def _former_rivals(
    fact: Assertion, links: Sequence[FactLink], facts: Mapping[str, Assertion], at: str
) -> list[Assertion]:
    """The facts that contradicted `fact` and still stand (open, not closed by a decision)."""
    found = []
    for link in links:
        if link.kind != "contradicts" or fact.id not in (link.from_id, link.to_id):
            continue
        other = facts.get(link.to_id if link.from_id == fact.id else link.from_id)
        if other is not None and state_of(other, links, facts, at) in ("current", "conflicting"):
            found.append(other)
    # Of several, those still in conflict among themselves are one group: its preferred one stands.
    grouped = {f.id: f for f in found}
    for other in found:
        grouped.update((r.id, r) for r in rivals(other, links, facts, at))
    return sorted(grouped.values(), key=lambda f: f.id)


def _per_drawer(
    facts: Sequence[Assertion], questions: Sequence[_Question], entities: Mapping[str, Entity]
) -> dict[str, Standing]:
    """Each drawer's standing: outranked in some question counts over standing in another; of several, the first."""

    def sentence(f: Assertion) -> str:
        subject = entities[f.subject].name if f.subject in entities else f.subject
        object_ = entities[f.object].name if f.object in entities else f.object
        return f"{subject} {f.predicate} {object_}"

    by_claim: dict[Claim, list[Assertion]] = {}
    for fact in facts:
        if fact.drawer_id:
            by_claim.setdefault(claim_of(fact), []).append(fact)
    found: dict[str, Standing] = {}
    for q in questions:
        if claim_of(q.loser) != claim_of(q.winner) and q.loser.drawer_id:
            found[q.loser.drawer_id] = Standing(
                q.loser.id, sentence(q.loser), q.state, False, q.winner.id, sentence(q.winner), q.basis
            )
    for q in questions:  # the standing side, where no question outranks the drawer
        state = "conflicting" if q.state == "conflicting" else "current"
        for fact in by_claim.get(claim_of(q.winner), []):
            if fact.drawer_id and fact.drawer_id not in found:
                found[fact.drawer_id] = Standing(
                    fact.id, sentence(fact), state, True, q.winner.id, sentence(q.winner), q.basis
                )
    return found


T = TypeVar("T")


def stand_first(
    ranked: Sequence[T],
    found: Mapping[str, Standing],
    *,
    drawer_of: Callable[[T], str],
    score_of: Callable[[T], float],
    rescored: Callable[[T, float, Standing], T],
) -> list[T]:
    """`ranked` (best first) with, for each question both of whose sides it holds, the standing claim's evidence in
    the places the question's evidence held — first the standing side, then the outranked one, each in its own
    order — and nothing else moved. A moved item takes the score of its new place (`rescored`), the difference said
    in its standing's `adjustment`; every other item keeps its place and score."""
    order = list(ranked)
    questions: dict[str, list[int]] = {}
    for place, item in enumerate(order):
        stand = found.get(drawer_of(item))
        if stand is not None:
            questions.setdefault(stand.standing_id, []).append(place)
    for places in questions.values():
        items = [order[p] for p in places]
        sides = [found[drawer_of(i)].stands for i in items]
        if all(sides) or not any(sides):
            continue  # one side only: the query is not about this question
        moved = [i for i in items if found[drawer_of(i)].stands] + [i for i in items if not found[drawer_of(i)].stands]
        scores = [score_of(order[p]) for p in places]
        for place, item, score in zip(places, moved, scores, strict=True):
            stand = found[drawer_of(item)]
            adjustment = round(score - score_of(item), 6)
            order[place] = rescored(item, score, replace(stand, adjustment=adjustment))
    return order


def short(fact_id: str) -> str:
    return fact_id[:8]


def marked_signals(drawer_id: str, signals: Mapping[str, Any], found: Mapping[str, Standing]) -> dict[str, Any]:
    """The signals, with the drawer's standing where it evidences a contested fact (`stand_first` may move it)."""
    stand = found.get(drawer_id)
    return {**signals, "standing": stand.to_json()} if stand is not None else dict(signals)


def marked(hit: Hit, found: Mapping[str, Standing]) -> Hit:
    """The hit with its standing among its signals (`marked_signals`)."""
    return replace(hit, signals=marked_signals(hit.drawer.id, hit.signals, found))
