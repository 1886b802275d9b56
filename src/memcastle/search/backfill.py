"""The `embed` job: fill missing drawer embeddings in batches, in the background, resumable at any batch."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memcastle.clock import eta_text
from memcastle.errors import ConfigError
from memcastle.jobs.context import JobContext
from memcastle.model import Drawer
from memcastle.model.jobs import JobKind
from memcastle.search.embeddings import EmbeddingProvider
from memcastle.search.passages import DEFAULT_PASSAGES, PassageShape, drawer_passages
from memcastle.store import EmbeddingStore, Subset

KIND = JobKind.EMBED.value
# What the sweep says it does first, while it does (SPEC §3: what a user searches first is findable first).
STAGE_NOTES = {
    "prose": "notes and documents first",
    "head": "first passages first",
    "rest": "tests last",
}
# The walks over the current drawers, in order: (how the batch is embedded, which drawers) for each stage.
STAGE_WALKS: dict[str, tuple[str, Subset]] = {
    "prose": ("head", "prose"),
    "head": ("head", "all"),
    "rest": ("rest", "untested"),
    "tests": ("rest", "tests"),
}
STAGE_ORDER = tuple(STAGE_WALKS)
LATER_STAGES = ("rest", "tests")
COALESCE_KEY = "embed"
# Passages embedded per unit of work: ~2–3 s of the builtin model on 2 cores, however long the drawers are.
MAX_BATCH_PASSAGES = 64


def model_key(provider: EmbeddingProvider) -> str:
    """Vectors are stored per provider and model (and the prefixes a provider puts before texts, when it has any), so
    a change of either re-embeds instead of mixing spaces."""
    prefixes = getattr(provider, "prefixes", None)
    return f"{provider.name}:{provider.model}{prefixes.identity if prefixes is not None else ''}"


# The rate an ETA divides by: passages per second over about this much of the latest work (the machine's load
# changes as mines start and end; the rate since the sweep's start would lag behind it).
RATE_WINDOW_SECONDS = 60.0
# How often the sweep counts again the drawers still waiting (drawers mined meanwhile included): a pass over the
# palace, ~80 ms at a million drawers.
RECOUNT_SECONDS = 30.0
# A resumed sweep's ETA moves from the rate its last run measured to its own over this much of its work.
PRIOR_SECONDS = 30.0
# The passages still to embed are counted exactly (each waiting drawer's text split as the sweep will split it: ~15 µs
# a drawer) up to this many waiting drawers at once; past it, estimated from the passages per drawer seen.
EXACT_COUNT_DRAWERS = 200_000
COUNT_BATCH = 2000


@dataclass
class SweepPace:
    """How far the sweep is and how long the rest should take, from the rate of this run over its latest minute.
    A resumed sweep (after a restart, a pause, a yield) starts from the rate and the passages per drawer its last run
    measured, and moves to its own over its first `PRIOR_SECONDS`: the ETA does not start over. Passages still owed
    by drawers whose first passage is in are known exactly; for drawers not reached yet they are estimated from the
    passages per drawer seen so far, since counting them would mean splitting every waiting drawer."""

    started: float
    embedded: int = 0  # passages embedded in this run
    drawers_seen: int = 0  # since the sweep began, over its runs
    passages_seen: int = 0  # all passages of the drawers seen, embedded or not
    marks: deque[tuple[float, int]] = field(default_factory=deque)  # (when, embedded by then), the latest minute
    prior_rate: float | None = None  # passages per second the sweep's last run measured

    def note(self, passages: int, now: float) -> None:
        """`passages` more embedded at `now`."""
        self.embedded += passages
        self.marks.append((now, self.embedded))
        while len(self.marks) > 2 and now - self.marks[1][0] >= RATE_WINDOW_SECONDS:
            self.marks.popleft()

    def rate(self, now: float) -> float:
        span = self.marks[-1][0] - self.marks[0][0] if len(self.marks) >= 2 else 0.0
        if span >= 1.0:
            (first, before), (last, after) = self.marks[0], self.marks[-1]
            measured = (after - before) / (last - first)
        else:
            measured = self.embedded / max(now - self.started, 1e-6)
        if self.prior_rate is None:
            return measured
        weight = min(1.0, span / PRIOR_SECONDS) if self.embedded else 0.0
        return weight * measured + (1 - weight) * self.prior_rate

    def estimate(self, owed: int, unreached: int, now: float) -> dict[str, Any]:
        if not (self.embedded or self.prior_rate) or not self.drawers_seen:
            return {"passages_pending": None, "passages_per_second": None, "eta_seconds": None}
        pending = owed + round(unreached * self.passages_seen / self.drawers_seen)
        rate = max(self.rate(now), 1e-6)
        return {
            "passages_pending": pending,
            "passages_per_second": round(rate, 1),
            "eta_seconds": round(pending / rate),
        }


@dataclass
class Walk:
    """Where the sweep is, kept in its checkpoint: its phase (current drawers, then closed ones), its stage among the
    current drawers (prose's first passages, every first passage, the later passages), the cursor it walks down
    from, and the tops above which drawers filed since count as fresh (for prose, for every first passage, for
    the later passages)."""

    top: int
    cursor: int
    rest_top: int
    prose_top: int
    phase: str = "current"
    stage: str = "prose"

    @classmethod
    def from_state(cls, state: Mapping[str, Any], last_seq: int) -> Walk:
        top = int(state["top"]) if "top" in state else last_seq
        return cls(
            top=top,
            cursor=int(state.get("cursor", top + 1)),
            rest_top=int(state.get("rest_top", top)),
            prose_top=int(state.get("prose_top", top)),
            phase=str(state.get("phase", "current")),
            stage=str(state.get("stage", "prose")),
        )

    def to_state(self) -> dict[str, Any]:
        return {"stage": self.stage, "top": self.top, "rest_top": self.rest_top, "prose_top": self.prose_top,
                "cursor": self.cursor, "phase": self.phase}  # fmt: skip

    def next(self, store: EmbeddingStore, model: str, size: int) -> tuple[list[tuple[int, Drawer]], str, str] | None:
        """The next batch, the way it is embedded (`head`, `rest` or `all`) and the cursor it moves; None at the
        end. Drawers filed while the sweep runs come first, their first passages before anything else: a fresh mine
        is findable by meaning before any drawer's later passages, whatever stage the sweep is in. What people write
        comes before code and data files: fresh prose, then (while the sweep walks the older prose) that, then the
        fresh rest. The later passages of the files that test code come last."""
        current = self.phase == "current"
        while True:
            ceiling = store.last_drawer_seq()
            batch = store.next_to_embed(model, size, after=self.prose_top, stage="head", subset="prose")
            if batch:
                return batch, "head", "prose_top"
            self.prose_top = max(self.prose_top, ceiling)  # no prose waits below it; the rest is the walk from `top`'s
            if self.stage != "prose" or not current:
                batch = store.next_to_embed(model, size, after=self.top, stage="head")
                if batch:
                    return batch, "head", "top"
            if not current or self.stage in LATER_STAGES:
                # The later passages of those filed after the walk of later passages began (it walks down from
                # where it began and would never reach them).
                batch = store.next_to_embed(model, size, after=self.rest_top, stage="rest")
                if batch:
                    return batch, "rest", "none"
            mode, subset = STAGE_WALKS[self.stage] if current else ("all", "all")
            batch = store.next_to_embed(model, size, before=self.cursor, current=current, stage=mode, subset=subset)
            if batch:
                return batch, mode, "cursor"
            if not current:
                return None
            self._advance()
            current = self.phase == "current"

    def _advance(self) -> None:
        """On to the next stage's walk, down from the top again (the closed drawers after the current ones)."""
        following = STAGE_ORDER[STAGE_ORDER.index(self.stage) + 1 :] if self.stage in STAGE_ORDER else ()
        self.cursor = self.top + 1
        if not following:
            self.phase = "historical"
            return
        self.stage = following[0]
        if self.stage == "rest":
            self.rest_top = self.top

    def moved(self, move: str, batch: list[tuple[int, Drawer]]) -> None:
        """Past the batch just taken: fresh drawers' tops move up, the walk's cursor down."""
        if move == "prose_top":
            self.prose_top = max(seq for seq, _ in batch)
        elif move == "top":
            self.top = max(seq for seq, _ in batch)
        elif move == "cursor":
            self.cursor = min(seq for seq, _ in batch)


def _tallied(mode: str, pieces: list[list[str]], done: int, owed: int, headed: int) -> tuple[int, int, int]:
    """The drawers complete, the later passages owed and the drawers with only their first passage in, after a batch
    of `pieces` (each drawer's passages) embedded in `mode`."""
    later = sum(max(0, len(p) - 1) for p in pieces)
    if mode == "head":
        partial = sum(1 for p in pieces if len(p) > 1)
        return done + len(pieces) - partial, owed + later, headed + partial
    if mode == "rest":
        return done + len(pieces), max(0, owed - later), max(0, headed - len(pieces))
    return done + len(pieces), owed, headed


class EmbeddingBackfill:
    """Embeds drawers that have no vectors for the active model; drops other models' vectors when done."""

    def __init__(
        self,
        store: EmbeddingStore,
        provider: EmbeddingProvider,
        *,
        batch_size: int,
        passages: PassageShape = DEFAULT_PASSAGES,
        max_passages: int = MAX_BATCH_PASSAGES,
        monotonic: Callable[[], float] = time.monotonic,
        finish: Callable[[str], int] | None = None,
    ) -> None:
        if not 0 <= passages.overlap < passages.window:
            raise ConfigError(
                f"must be smaller than embeddings.passage_chars ({passages.window}), got {passages.overlap}",
                key="embeddings.passage_overlap",
            )
        self._store = store
        self._provider = provider
        # What the job's end does with other models' vectors (returns how many went): dropped at once, or — while
        # searches still rank by an older model — once they have switched (`search.transition`).
        self._finish = finish or store.drop_other_embeddings
        self._batch_size = batch_size
        self._max_passages = max_passages
        self._passages = passages
        self._monotonic = monotonic

    def run(self, ctx: JobContext) -> Mapping[str, Any]:
        """Embed the batches `Walk` gives (first passages before later ones, prose first, fresh drawers first; then
        closed drawers, whole), reporting the passages left and an ETA at each; the pending count is taken now and
        then, so no batch costs a pass over the palace."""
        model = model_key(self._provider)
        state = dict(ctx.state)
        done = int(state.get("embedded", 0))
        passages_done = int(state.get("passages", 0))
        walk = Walk.from_state(state, self._store.last_drawer_seq())
        owed, headed = int(state.get("owed", 0)), int(state.get("headed", 0))
        pending = self._store.count_missing_embeddings(model)
        started = done
        # What is left, exactly: the passages of the waiting drawers up to `counted_to`, less those stored; drawers
        # filed later are added at each recount (their embedded passages are subtracted only once counted).
        left_exact: int | None = state.get("passages_left") if "passages_left" in state else None
        counted_to = int(state.get("counted_to", 0))
        if "passages_left" not in state:
            left_exact, counted_to = self._count_waiting(model, 0, self._store.last_drawer_seq())
        prior = state.get("passages_per_second")
        backlog = SweepPace(
            started=self._monotonic(),
            drawers_seen=int(state.get("drawers_seen", 0)),
            passages_seen=int(state.get("passages_seen", 0)),
            prior_rate=float(prior) if isinstance(prior, int | float) and prior > 0 else None,
        )
        counted = backlog.started
        while (found := walk.next(self._store, model, self._batch_size)) is not None:
            batch, mode, move = found
            first = 1 if mode == "rest" else 0
            batch, pieces, chosen = self._bounded(batch, mode, first)
            walk.moved(move, batch)
            drawers = [drawer for _, drawer in batch]
            embedded = self._embed(model, drawers, chosen, pieces if mode != "all" else None, first)
            done, owed, headed = _tallied(mode, pieces, done, owed, headed)
            if mode != "rest":
                backlog.drawers_seen += len(drawers)
                backlog.passages_seen += sum(len(p) for p in pieces)
            now = self._monotonic()
            backlog.note(embedded, now)
            passages_done += embedded
            if left_exact is not None:
                left_exact -= sum(len(c) for (seq, _), c in zip(batch, chosen, strict=True) if seq <= counted_to)
            if now - counted >= RECOUNT_SECONDS:
                # Drawers mined since the sweep began wait too: counted again now and then, not only at its start.
                pending, started, counted = self._store.count_missing_embeddings(model), done, now
                if left_exact is not None:
                    more, counted_to = self._count_waiting(model, counted_to, self._store.last_drawer_seq())
                    left_exact = None if more is None else left_exact + more
            left = max(0, pending - (done - started))
            estimate = backlog.estimate(owed, max(0, left - headed), now)
            if left_exact is not None and estimate["passages_per_second"] is not None:
                exact = max(0, left_exact) if left else 0
                estimate = {**estimate, "passages_pending": exact,
                            "eta_seconds": round(exact / max(estimate["passages_per_second"], 1e-6))}  # fmt: skip
            passages_left = estimate["passages_pending"] if left else 0
            about = "" if left_exact is not None else "~"  # counted, or estimated past EXACT_COUNT_DRAWERS
            to_go = (
                f", {about}{estimate['passages_pending']:,} to go, {eta_text(estimate['eta_seconds'])}" if left else ""
            )
            ctx.checkpoint(
                {
                    "embedded": done,
                    "passages": passages_done,
                    **estimate,
                    "drawers_seen": backlog.drawers_seen,
                    "passages_seen": backlog.passages_seen,
                    **({"passages_left": left_exact, "counted_to": counted_to} if left_exact is not None else {}),
                    "owed": owed,
                    "headed": headed,
                    **walk.to_state(),
                },
                # The bar counts passages, the unit the backlog and its ETA are in, once it knows them; drawers before.
                current=done if passages_left is None else passages_done,
                total=done + left if passages_left is None else passages_done + passages_left,
                message=f"{passages_done:,} passages{to_go}"
                + (f" ({STAGE_NOTES[walk.stage]})" if walk.stage in STAGE_NOTES and left else ""),
            )
        removed = self._finish(model)
        return {"embedded": done, "passages": passages_done, "model": model, "dropped_vectors": removed}

    def _embed(
        self, model: str, drawers: list[Drawer], chosen: list[list[str]], pieces: list[list[str]] | None, first: int
    ) -> int:
        """Embed each drawer's chosen passages and store them from passage `first` on (a drawer is complete once all
        its `pieces` are in; all of them at once when None); the passages embedded."""
        flat = [p for passages in chosen for p in passages]
        vectors = self._provider.embed(flat) if flat else np.zeros((0, 0), dtype=np.float32)
        rows, start = [], 0
        for drawer, passages in zip(drawers, chosen, strict=True):
            rows.append((drawer.id, vectors[start : start + len(passages)]))
            start += len(passages)
        totals = {d.id: len(p) for d, p in zip(drawers, pieces, strict=True)} if pieces is not None else None
        self._store.put_embeddings(model, rows, first_passage=first, totals=totals)
        return len(flat)

    def _count_waiting(self, model: str, after: int, upto: int) -> tuple[int | None, int]:
        """The passages the drawers waiting with `after` < seq ≤ `upto` have still to embed, split as the sweep
        splits them, and `upto`; None past `EXACT_COUNT_DRAWERS` drawers (the estimate stands in)."""
        total, drawers, cursor = 0, 0, after
        while rows := self._store.waiting_texts(model, cursor, upto, COUNT_BATCH):
            drawers += len(rows)
            if drawers > EXACT_COUNT_DRAWERS:
                return None, upto
            total += sum(len(drawer_passages(text, *self._passages)) for _, text in rows)
            cursor = rows[-1][0]
        return total - self._store.count_stored_of_waiting(model, after, upto), upto

    def _bounded(
        self, batch: list[tuple[int, Drawer]], mode: str, first: int
    ) -> tuple[list[tuple[int, Drawer]], list[list[str]], list[list[str]]]:
        """The walk's next drawers up to `max_passages` passages to embed (at least one drawer), so a unit of work —
        where a pause, a yield to waiting work or a shutdown takes effect — stays short however long the drawers
        are. The drawers left out come first in the next batch. Returns them with all their passages and the ones
        to embed now."""
        kept: list[tuple[int, Drawer]] = []
        pieces: list[list[str]] = []
        chosen: list[list[str]] = []
        count = 0
        for seq, drawer in batch:
            passages = drawer_passages(drawer.content, *self._passages)
            now = passages[:1] if mode == "head" else passages[first:]
            if kept and count + len(now) > self._max_passages:
                break
            kept.append((seq, drawer))
            pieces.append(passages)
            chosen.append(now)
            count += len(now)
        return kept, pieces, chosen
