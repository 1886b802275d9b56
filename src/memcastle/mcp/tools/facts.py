"""The knowledge graph: facts with their lifecycle, and correcting them (supersede, invalidate, link)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from memcastle.mcp.tools.base import ADDS, READS, REQUESTER, WRITES, Env, FactId, Limit, Reason, tool
from memcastle.model.requests import FactCorrection, request_of
from memcastle.model.vocabulary import ExplicitLink, FactState, Predicate
from memcastle.services.views import fact_view

FACT_ALIASES = {"id": "fact_id", "relationship_id": "fact_id"}
Name = Annotated[str | None, Field()]


AsOfFact = Annotated[str | None, Field(description="what held then (RFC 3339)")]


@tool("memcastle_fact_list", "List facts", "read", READS)
def fact_list(
    env: Env,
    subject: Name = None,
    predicate: Predicate | None = None,
    object: Name = None,
    state: FactState | None = None,
    as_of: AsOfFact = None,
    limit: Limit = 20,
) -> dict[str, Any]:
    """Facts (subject predicate object): state, evidence, links; in a conflict, the preferred one and why."""
    facts = env.services.facts.list_facts(
        subject=subject, predicate=predicate, object=object, state=state, as_of=as_of, limit=limit
    )
    return {"facts": [fact_view(f) for f in facts]}


@tool("memcastle_fact_get", "Get a fact", "read", READS, aliases=FACT_ALIASES)
def fact_get(env: Env, fact_id: FactId) -> dict[str, Any]:
    """A fact whole: entity ids, validity, provenance, links with reasons."""
    return env.services.facts.get_fact(fact_id).to_json()


@tool("memcastle_fact_history", "Fact history", "read", READS, aliases=FACT_ALIASES)
def fact_history(env: Env, fact_id: FactId, as_of: AsOfFact = None) -> dict[str, Any]:
    """A fact and the facts linked to it, oldest first: how it changed, and why."""
    return {"facts": [fact_view(f) for f in env.services.facts.fact_history(fact_id, as_of=as_of)]}


@tool("memcastle_fact_supersede", "Correct a fact", "write", ADDS,
      aliases=FACT_ALIASES)  # fmt: skip
def fact_supersede(
    env: Env,
    fact_id: FactId,
    subject: Name = None,
    predicate: Predicate | None = None,
    object: Name = None,
    confidence: Annotated[float | None, Field(ge=0, le=1)] = None,
    evidence_drawer: Annotated[str | None, Field(description="drawer showing the correction")] = None,
    reason: Reason = None,
) -> dict[str, Any]:
    """Correct a fact: it closes, its replacement (with what you give changed) opens."""
    done = env.services.facts.supersede(fact_id, request_of(FactCorrection, locals()), requested_by=REQUESTER)
    return {"fact": fact_view(done.fact), "superseded": fact_view(done.superseded)}


@tool("memcastle_fact_invalidate", "Invalidate a fact", "write", WRITES, aliases=FACT_ALIASES)
def fact_invalidate(env: Env, fact_id: FactId, reason: Annotated[str, Field(min_length=1)]) -> dict[str, Any]:
    """Close a wrong fact that nothing replaces."""
    return {"fact": fact_view(env.services.facts.invalidate(fact_id, reason))}


@tool("memcastle_fact_link", "Link two facts", "write", ADDS, aliases=FACT_ALIASES)
def fact_link(
    env: Env,
    fact_id: FactId,
    to: Annotated[str, Field(min_length=1, description="the other fact")],
    kind: ExplicitLink,
    reason: Annotated[str, Field(min_length=1)],
) -> dict[str, Any]:
    """Record that a fact confirms, contradicts (both then conflict) or refines another."""
    done = env.services.facts.link(fact_id, to, kind, reason)
    return {"link": done.link.to_json(), "from": fact_view(done.source), "to": fact_view(done.target)}
