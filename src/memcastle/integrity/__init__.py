"""The `verify` job: re-hash every current drawer in batches and report any whose stored hashes disagree."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from memcastle.jobs.context import JobContext
from memcastle.model import content_hash, fingerprint
from memcastle.model.jobs import JobKind
from memcastle.store import DrawerStore

KIND = JobKind.VERIFY.value


def verify_palace(store: DrawerStore, ctx: JobContext) -> Mapping[str, Any]:
    """Resumable: the checkpoint holds the last drawer checked and the mismatches found so far."""
    batch = int(ctx.params.get("batch", 200))
    pace = float(ctx.params.get("pace_ms", 0)) / 1000.0
    state = dict(ctx.state)
    after: str | None = state.get("after")
    checked = int(state.get("checked", 0))
    mismatches: list[str] = list(state.get("mismatches", []))
    total = store.count_drawers(current_only=True)
    while True:
        page = store.list_drawers(None, None, batch, after)
        for drawer in page.items:
            if drawer.content_hash != content_hash(drawer.content) or drawer.fingerprint != fingerprint(drawer.content):
                mismatches.append(drawer.id)
        checked += len(page.items)
        if page.items:
            after = page.items[-1].id
        if page.next_after is None:
            ctx.checkpoint(
                {"after": after, "checked": checked, "mismatches": mismatches},
                current=checked,
                total=checked,
                message=f"checked {checked} drawers",
            )
            break
        ctx.checkpoint(
            {"after": after, "checked": checked, "mismatches": mismatches},
            current=checked,
            total=total,
            message=f"checked {checked} drawers",
        )
        if pace:
            time.sleep(pace)
    return {"checked": checked, "mismatches": mismatches, "ok": not mismatches}
