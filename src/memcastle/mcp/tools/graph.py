"""Entities and the graph around them, compactly: an entity's page (what it is, its facts, where it is mentioned)
and the neighbourhood of an entity or a drawer as sentences rather than nodes and edges."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from memcastle.mcp.tools.base import READS, Env, Limit, tool
from memcastle.services.views import entity_page, graph_view

EntityName = Annotated[str, Field(min_length=1, description="name, alias or id")]


@tool("memcastle_entity", "An entity's page", "read", READS, aliases={"id": "entity", "name": "entity",
      "entity_id": "entity"})  # fmt: skip
def entity(env: Env, entity: EntityName, limit: Limit = 20) -> dict[str, Any]:
    """An entity: kind, aliases, its facts (state, evidence), drawers mentioning it, possible duplicates."""
    facts = env.services.facts
    found, others = facts.find_entity(entity)
    known = found.entity
    relationships = facts.relationships(known.id, limit=limit)
    return entity_page(found, others, relationships)


@tool("memcastle_graph", "Graph around an entity", "read", READS)
def graph(
    env: Env,
    entity: Annotated[str | None, Field(description="name, alias or id; or give drawer")] = None,
    drawer: Annotated[str | None, Field(description="the entities it mentions")] = None,
    depth: Annotated[int, Field(ge=1, le=2)] = 1,
    limit: Limit = 30,
) -> dict[str, Any]:
    """Facts around an entity (or a drawer's entities), depth 1 or 2, one line each; links between them."""
    found = env.services.facts.graph(entity=entity, drawer=drawer, depth=depth, limit=limit)
    return graph_view(found)
