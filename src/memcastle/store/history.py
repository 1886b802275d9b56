"""Walking a drawer's supersession chain: the same for every backend, built on `get_drawer`."""

from __future__ import annotations

from memcastle.model import Drawer


class SupersessionHistory:
    """Mixed into each store: `drawer_history` follows `supersedes` back and `superseded_by` forward."""

    def get_drawer(self, drawer_id: str) -> Drawer:  # provided by the store
        raise NotImplementedError

    def drawer_history(self, drawer_id: str) -> list[Drawer]:
        """Every version of the drawer, oldest first."""
        start = self.get_drawer(drawer_id)
        chain = [start]
        seen = {start.id}
        node = start
        while node.supersedes and node.supersedes not in seen:
            node = self.get_drawer(node.supersedes)
            seen.add(node.id)
            chain.insert(0, node)
        node = start
        while node.superseded_by and node.superseded_by not in seen:
            node = self.get_drawer(node.superseded_by)
            seen.add(node.id)
            chain.append(node)
        return chain
