"""Reads and writes only tests need, over the store's own contract: every entity, the drawers still to embed or to
read, links written as the link sweep writes them. The store offers what the daemon uses; these are built on it."""

from __future__ import annotations

from collections.abc import Sequence

from memcastle.model import Drawer, DrawerLink, Entity
from memcastle.store import Store

EVERY = 1_000_000


def all_entities(store: Store) -> list[Entity]:
    """Every entity, oldest first."""
    return sorted(store.entities.list_entities(None, None, EVERY), key=lambda e: (e.created_at, e.id))


def drawers_to_extract(store: Store, extractor: str, limit: int) -> list[Drawer]:
    """The first current drawers `extractor` has not read, in filing order."""
    return store.graph.next_to_extract(extractor, limit, after_seq=0)[0]


def drawers_missing_embeddings(store: Store, model: str, limit: int) -> list[Drawer]:
    """Drawers without vectors for `model`: current ones first, each group in filing order."""
    current = store.embeddings.next_to_embed(model, limit, after=0, current=True)
    closed = store.embeddings.next_to_embed(model, limit - len(current), after=0, current=False)
    return [d for _, d in current + (closed if len(current) < limit else [])]


def add_drawer_links(store: Store, links: Sequence[DrawerLink]) -> None:
    """Links between drawers, as the link sweep records them."""
    store.near.settle([], links)
