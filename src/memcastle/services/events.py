"""What the services tell the live event stream (`memcastle.events`), and in what shape.

Events never carry a drawer's text: they name drawers by id, wing, room and kind, so that what the stream keeps in
memory for reconnecting clients holds nothing a forget must erase beyond those ids (which a forget purges).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memcastle.model import Drawer
from memcastle.model.visibility import Visibility

Publish = Callable[[str, Mapping[str, Any]], object]


def ignore_event(kind: str, data: Mapping[str, Any]) -> None:
    """The publisher of a palace nobody follows (tests, one-off commands)."""


# What a client limited to some wings may follow: drawers it can read. Jobs, triggers and forgets cover the palace.
SCOPED_KINDS = frozenset({"drawers", "reset"})


def scoped_event(kind: str, data: Mapping[str, Any], seen: Visibility) -> Mapping[str, Any] | None:
    """The event as a client of this visibility may see it: the drawers it can read (and nothing else of the
    palace, not the job that filed them), or None when nothing is left."""
    if seen.reads_everything:
        return data
    if kind not in SCOPED_KINDS:
        return None
    if kind == "reset":
        return data
    refs = [ref for ref in data.get("drawers", ()) if seen.can_read(ref["wing"], ref["room"])]
    if not refs:
        return None
    return {key: value for key, value in {**data, "drawers": refs}.items() if key != "job_id"}


def drawer_ref(drawer: Drawer) -> dict[str, Any]:
    return {"id": drawer.id, "wing": drawer.wing, "room": drawer.room, "kind": drawer.source.kind}


def filed_event(
    drawers: Sequence[Drawer], *, supersedes: str | None = None, job_id: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"action": "filed", "drawers": [drawer_ref(d) for d in drawers]}
    if supersedes is not None:
        out["supersedes"] = supersedes
    if job_id is not None:
        out["job_id"] = job_id
    return out
