"""The `audit` and `repair` jobs: a palace checked for what breaks the rules the code relies on, and fixed.

The checks are the store's (`IntegrityStore`: orphaned rows, dangling links, drawers the full-text index lacks)
plus those the composition root adds for what lives outside it (`Check`: drawers waiting for vectors, the vector
index's file). `audit` reports each finding with a count, examples and what repair would do — a dry run; `repair`
fixes them a batch per transaction, checkpointing after each batch, so a crash resumes where it stopped and a batch
repaired twice finds nothing left. Both are durable jobs: started from the CLI, the API or the web page, followed
like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memcastle.jobs.context import JobContext
from memcastle.model.integrity import AuditReport, Finding
from memcastle.model.jobs import JobKind
from memcastle.store import IntegrityStore

AUDIT = JobKind.AUDIT.value
REPAIR = JobKind.REPAIR.value
BATCH = 500


@dataclass(frozen=True)
class Check:
    """A check of something the store does not hold: `find` reports, `fix` repairs all of it at once (it may
    queue work — the embed sweep — rather than do it) and says how many it handled."""

    name: str
    find: Callable[[], Finding]
    fix: Callable[[], int] | None = None


class PalaceAudit:
    """The job handlers of `audit` and `repair` over one store and the extra checks."""

    def __init__(self, store: IntegrityStore, extra: Sequence[Check] = ()) -> None:
        self._store = store
        self._extra = {check.name: check for check in extra}

    def names(self) -> list[str]:
        return [*self._store.check_names(), *self._extra]

    def find(self, name: str) -> Finding:
        extra = self._extra.get(name)
        return extra.find() if extra is not None else self._store.find(name)

    def audit(self, ctx: JobContext) -> Mapping[str, Any]:
        """Run every check, a checkpoint after each (a resumed audit starts at the first not yet run)."""
        names = self.names()
        found: list[dict[str, Any]] = list(ctx.state.get("findings", []))
        for name in names[len(found) :]:
            found.append(self.find(name).to_json())
            ctx.checkpoint({"findings": found}, current=len(found), total=len(names), message=f"checked {name}")
        return AuditReport(tuple(Finding.from_json(f) for f in found)).to_json()

    def repair(self, ctx: JobContext) -> Mapping[str, Any]:
        """Fix what each check finds, `batch` rows per transaction with a checkpoint after each; then check again
        and report what is left (a finding without a repair stays for a person to decide)."""
        batch = int(ctx.params.get("batch", BATCH))
        names = [n for n in ctx.params.get("checks") or self.names() if n in self.names()]
        repaired: dict[str, int] = dict(ctx.state.get("repaired", {}))
        at = int(ctx.state.get("at", 0))
        for index in range(at, len(names)):
            name = names[index]
            extra = self._extra.get(name)
            if extra is not None:
                if extra.fix is not None and not self.find(name).ok:
                    repaired[name] = repaired.get(name, 0) + extra.fix()
            else:
                while fixed := self._store.fix(name, batch):
                    repaired[name] = repaired.get(name, 0) + fixed
                    ctx.checkpoint(
                        {"at": index, "repaired": repaired},
                        current=index,
                        total=len(names),
                        message=f"repaired {repaired[name]} ({name})",
                    )
            ctx.checkpoint({"at": index + 1, "repaired": repaired}, current=index + 1, total=len(names))
        after = AuditReport(tuple(self.find(name) for name in names))
        return {"repaired": repaired, "after": after.to_json()}
