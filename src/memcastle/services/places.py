"""Wings, rooms and sources at the service seam: list sources, rename and delete wings and rooms.

Deleting a wing or a room that still holds drawers is a forget of them (`force`), and neither a delete nor a rename
happens while a mine job that files into that wing is queued or running.
"""

from __future__ import annotations

from typing import Any

from memcastle.errors import Conflict, NotFound
from memcastle.model import ForgetReport, PlaceTotals, Scope
from memcastle.model.answers import Renamed
from memcastle.services.forgetting import ActiveMines, ForgetRequest, ForgetService
from memcastle.services.reader import palace_wide, visibility
from memcastle.services.validation import check_name
from memcastle.store import Store


class PlaceService:
    """The palace's places: sources, wings and rooms."""

    def __init__(self, store: Store, forgetting: ForgetService, active_mines: ActiveMines) -> None:
        self._store = store
        self._forgetting = forgetting
        self._active_mines = active_mines

    def list_sources(self) -> list[dict[str, Any]]:
        palace_wide("the list of sources")
        return [
            {
                "id": source.id,
                "connector": source.connector,
                "locator": source.locator,
                "options": dict(source.options),
                "updated_at": source.updated_at,
                "documents": documents,
                "drawers": drawers,
            }
            for source, documents, drawers in self._store.mining.list_sources()
        ]

    def create(self, wing: str, room: str | None = None) -> tuple[PlaceTotals, bool]:
        """Make an empty wing, or a room (its wing too when new): the place with its totals, and whether it is new."""
        wing = check_name(wing, "name" if room is None else "wing") or wing
        room = check_name(room, "name") if room is not None else None
        visibility().writable(wing, room)
        created = self._store.drawers.create_place(wing, room)
        return self._store.drawers.place_totals(wing, room), created

    def totals(self, wing: str, room: str | None = None) -> PlaceTotals:
        """A wing's (or room's) current drawers, every version, rooms, when it was made and last filed into."""
        seen = visibility()
        if not (seen.sees_wing(wing) if room is None else seen.can_read(wing, room)):
            raise NotFound(f"no wing {wing!r}" if room is None else f"no room {room!r} in wing {wing!r}")
        if room is None and not seen.can_read(wing, None):
            raise NotFound(f"no wing {wing!r}")  # a token reading some of its rooms sees no whole-wing total
        return self._store.drawers.place_totals(wing, room)

    def delete(
        self, wing: str, room: str | None = None, *, force: bool = False, dry_run: bool = False, requested_by: str
    ) -> ForgetReport:
        """Delete an empty wing or room; one with drawers only with `force`, as a forget of them all."""
        kind = "room" if room is not None else "wing"
        request = ForgetRequest(kind=kind, wing=wing, room=room)
        preview = self._forgetting.forget(request, dry_run=True, requested_by=requested_by)
        held = int(preview.counts["versions"])
        if held and not force and not dry_run:
            raise Conflict(
                f"{kind} {wing if room is None else f'{wing}/{room}'} holds {held} drawer versions",
                help="pass force to forget them with it (see the dry run first)",
            )
        if dry_run:
            return preview
        return self._forgetting.forget(request, dry_run=False, requested_by=requested_by)

    def rename(self, wing: str, new_name: str, *, room: str | None = None) -> Renamed:
        """Rename a wing, or a room of it. Mined drawers keep their place; a later mine files where it is told."""
        new_name = check_name(new_name, "name") or new_name
        seen = visibility()
        if not (seen.sees_wing(wing) or seen.can_write(wing, room)):
            raise NotFound(f"no wing {wing!r}")
        seen.writable(wing, room)
        # What is renamed stays inside the scope.
        seen.writable(*((new_name, None) if room is None else (wing, new_name)))
        self._refuse_while_mining(wing)
        if room is None:
            self._store.drawers.rename_wing(wing, new_name)
        else:
            self._store.drawers.rename_room(wing, room, new_name)
        target = new_name if room is None else wing
        placed = Scope(wing=target, room=new_name if room is not None else None, hidden=True)
        warnings = []
        if any(d.source.origin is not None for d in self._store.drawers.latest_drawers(placed, 50)):
            warnings.append(
                f"a mine files into the wing it is given (or its connector's default): pass --wing {target} "
                "when mining again a source whose drawers live here, or they are filed in the old place"
            )
        return Renamed(target, new_name if room is not None else None, tuple(warnings))

    def _refuse_while_mining(self, wing: str) -> None:
        for job, _source, target in self._active_mines():
            if target == wing:
                raise Conflict(
                    f"mine job {job.id} ({job.status.value}) files into wing {wing!r}",
                    help=f"wait for it to finish, or cancel it (memcastle job cancel {job.id}), then try again",
                )
