"""The project's own judged retrieval set (SPEC §9): recall@k, nDCG@10 and MRR per category, plus the ADR 048
preference set, measured through MemCastle's real path.

The data lives in `eval/judged/` (original text about a fictional team, written for this purpose):

    corpus.json        the sources to mine (notes, project files, Claude Code and Codex transcripts), readable aliases
                       for transcript documents, and the supersession steps applied between mines
    notes/ project/ claude/ codex/     the sources as first mined (step 0)
    steps/<n>/         files written over the sources before mine n (edits and new documents)
    queries.json       judged queries: lexical, paraphrase, scoped, temporal, graph-ready
    preferences.json   the judged preference set; its policy is `preferences.toml`
    baseline.json      the figures the regression test compares against (written by --write-baseline)

The run: settings → `app.build` → `start` in a temporary palace; every source mined with `Services.submit_mine`;
then each supersession step is written over a copy of the sources and everything is mined again; the background
`embed` and `extract` sweeps are awaited after every mine; queries go through `Services.search(SearchRequest(...))`
with limit 10. The preference set restarts the same palace with the policy in `<palace>/preferences.toml` (the
policy is read at start-up; the drawers and their frozen metadata snapshots stay as mined).

A relevant document is named by its path under `eval/judged/` (a transcript also by an alias from corpus.json),
optionally `#text` that the drawer content must contain: that selects one revision of a document that changed
between mines. Drawer ids never appear in the data.

Metrics (means per category): recall@5, recall@10, nDCG@10 (graded), MRR over the direct hits, and `recall+graph`
over the whole response (direct hits, then graph-expanded ones). Exact ties count as ties: the engine orders them by
drawer id, which is random per palace, so each metric is its expectation over the tied orders (for hybrid, the tie
groups below the cut come from the two legs, fetched through the service at the hybrid's leg depth and fused again
with the engine's own `fuse_ranks`; the response must agree with that). Without this, two palaces mined from the
same files disagree on up to a sixth of the hybrid queries.

    python bench/judged.py                       # all three rankings and the preference set; prints the tables
    python bench/judged.py --write-baseline      # ... and writes eval/judged/baseline.json
    python bench/judged.py --rankings lexical --verbose
    python bench/judged.py --store postgresql://…    # the same on PostgreSQL, compared with the SQLite baseline
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcastle.app import Palace, build
from memcastle.clock import utc_now
from memcastle.config import Settings, load_settings
from memcastle.model import Drawer, Hit, JobStatus, ScoredDrawer, SearchResult
from memcastle.preferences import BOUND
from memcastle.search.engine import MIN_LEG
from memcastle.search.fusion import FusionWeights, fuse_ranks
from memcastle.search.lexical import query_terms
from memcastle.services import SearchRequest

ROOT = Path(__file__).resolve().parents[1] / "eval" / "judged"
RANKINGS = ("lexical", "semantic", "hybrid")
CATEGORIES = ("lexical", "paraphrase", "scoped", "temporal", "graph-ready")
METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr", "recall+graph")
LIMIT = 10
TOLERANCE = 0.02
PARITY = 0.03  # another store backend answers the judged set within this of the SQLite baseline, both ways
START = "start"  # the instant before anything was mined
EPSILON = 1e-9


# ------------------------------------------------------------------------------------------------------------ the data


@dataclass(frozen=True)
class Mine:
    """One source of the corpus: a folder under the corpus root mined by one connector."""

    connector: str
    path: str
    wing: str | None = None


@dataclass(frozen=True)
class Step:
    """A supersession step: files written over the sources before the next mine."""

    number: int
    description: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class Corpus:
    root: Path
    mines: tuple[Mine, ...]
    aliases: Mapping[str, str]
    steps: tuple[Step, ...]

    def resolve(self, name: str) -> str:
        """A document path under the corpus root, expanding an `@alias`."""
        if name.startswith("@"):
            if name not in self.aliases:
                raise ValueError(f"unknown document alias {name!r}")
            return self.aliases[name]
        return name

    def mine_of(self, doc: str) -> Mine:
        for mine in self.mines:
            if doc.startswith(mine.path.rstrip("/") + "/"):
                return mine
        raise ValueError(f"{doc!r} is under none of the mined folders")


def load_corpus(root: Path = ROOT) -> Corpus:
    data = json.loads((root / "corpus.json").read_text(encoding="utf-8"))
    mines = tuple(Mine(connector=m["connector"], path=m["path"], wing=m.get("wing")) for m in data["mines"])
    steps = tuple(Step(number=int(s["step"]), description=s["description"], files=tuple(s["files"]))
                  for s in data.get("steps", []))
    for expected, step in enumerate(steps, start=1):
        if step.number != expected:
            raise ValueError(f"steps must be numbered 1, 2, …; found {step.number} at position {expected}")
        for name in step.files:
            if not (root / "steps" / str(step.number) / name).is_file():
                raise ValueError(f"step {step.number} lists {name!r}, missing under steps/{step.number}/")
    corpus = Corpus(root=root, mines=mines, aliases=dict(data.get("aliases", {})), steps=steps)
    for alias, doc in corpus.aliases.items():
        corpus.mine_of(doc)
        if not alias.startswith("@"):
            raise ValueError(f"alias {alias!r} must start with @")
    return corpus


@dataclass(frozen=True)
class DocRef:
    """A judged document: its path under the corpus root, optionally a text its drawer must contain (to pick one
    revision), optionally metadata its snapshot must hold (`"review.state": "approved"`)."""

    doc: str
    contains: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    @classmethod
    def parse(cls, value: str | Mapping[str, Any], corpus: Corpus) -> DocRef:
        if isinstance(value, str):
            name, _, marker = value.partition("#")
            doc = corpus.resolve(name)
            corpus.mine_of(doc)
            return cls(doc=doc, contains=marker or None, label=value)
        doc = corpus.resolve(value["doc"])
        corpus.mine_of(doc)
        label = value.get("label") or json.dumps(value, sort_keys=True)
        return cls(doc=doc, contains=value.get("contains"), metadata=dict(value.get("metadata", {})), label=label)

    def matches(self, key: str | None, drawer: Drawer) -> bool:
        if key != self.doc:
            return False
        if self.contains is not None and self.contains not in drawer.content:
            return False
        origin = drawer.source.origin
        for path, expected in self.metadata.items():
            node: Any = origin.metadata if origin else {}
            for segment in path.split("."):
                node = node.get(segment) if isinstance(node, Mapping) else None
            if node != expected:
                return False
        return True


@dataclass(frozen=True)
class Query:
    """One judged query."""

    id: str
    category: str
    text: str
    relevant: tuple[DocRef, ...]
    gains: Mapping[str, float]  # DocRef label → grade (default 1)
    filters: Mapping[str, Any]
    ranking: str | None = None  # when set, the query is judged under that ranking only
    expand: bool = False
    distractor: DocRef | None = None  # scoped: outside the filter, and ranked first without it
    entity: tuple[str, ...] = ()  # graph-ready: every current drawer mentioning one of these is relevant

    def gain(self, ref: DocRef) -> float:
        return float(self.gains.get(ref.label, 1.0))


FILTER_KEYS = {"wing", "room", "tags", "source_kind", "connector", "as_of_step", "from_step", "until_step",
               "include_historical"}


def load_queries(corpus: Corpus, path: Path | None = None) -> list[Query]:
    data = json.loads((path or corpus.root / "queries.json").read_text(encoding="utf-8"))
    queries: list[Query] = []
    seen: set[str] = set()
    for item in data["queries"]:
        if item["id"] in seen:
            raise ValueError(f"duplicate query id {item['id']!r}")
        seen.add(item["id"])
        if item["category"] not in CATEGORIES:
            raise ValueError(f"{item['id']}: unknown category {item['category']!r}")
        filters = dict(item.get("filters", {}))
        unknown = set(filters) - FILTER_KEYS
        if unknown:
            raise ValueError(f"{item['id']}: unknown filters {sorted(unknown)}")
        relevant = tuple(DocRef.parse(r, corpus) for r in item["relevant"])
        labels = {r.label for r in relevant}
        graded = dict(item.get("graded", {}))
        if not set(graded) <= labels:
            raise ValueError(f"{item['id']}: graded names documents that are not relevant: {set(graded) - labels}")
        queries.append(Query(
            id=item["id"], category=item["category"], text=item["query"], relevant=relevant, gains=graded,
            filters=filters, ranking=item.get("ranking"), expand=bool(item.get("expand", False)),
            distractor=DocRef.parse(item["distractor"], corpus) if item.get("distractor") else None,
            entity=tuple(item.get("entity", ())),
        ))
    return queries


@dataclass(frozen=True)
class PreferenceCase:
    """A judged preference query (ADR 048)."""

    id: str
    kind: str  # near_tie | low_stays_first
    text: str
    filters: Mapping[str, Any]
    rankings: tuple[str, ...]
    first: DocRef  # the hit that must rank first: the preferred one in a near tie, the low one otherwise
    over: DocRef | None  # near tie: the other, less preferred source saying nearly the same thing
    expect: tuple[tuple[DocRef, str, str | None], ...]  # (document, level, criterion path or None)
    note: str = ""
    known_failures: Mapping[str, str] = field(default_factory=dict)  # ranking → why the engine fails the rule


@dataclass(frozen=True)
class PreferenceSet:
    policy_toml: str
    cases: tuple[PreferenceCase, ...]


def load_preferences(corpus: Corpus, path: Path | None = None) -> PreferenceSet:
    data = json.loads((path or corpus.root / "preferences.json").read_text(encoding="utf-8"))
    policy = data["policy"]
    toml = (corpus.root / policy["file"]).read_text(encoding="utf-8")
    if policy.get("toml") is not None and policy["toml"] != toml:
        raise ValueError(f"preferences.json embeds a policy that differs from {policy['file']}")
    default_rankings = tuple(data.get("rankings", ("lexical", "hybrid")))
    cases = []
    for item in data["queries"]:
        kind = item["kind"]
        if kind not in ("near_tie", "low_stays_first"):
            raise ValueError(f"{item['id']}: unknown kind {kind!r}")
        first = DocRef.parse(item["preferred"] if kind == "near_tie" else item["first"], corpus)
        over = DocRef.parse(item["over"], corpus) if kind == "near_tie" else None
        expect = tuple((DocRef.parse(e["doc"], corpus), e["level"], e.get("criterion"))
                       for e in item.get("expect", []))
        cases.append(PreferenceCase(
            id=item["id"], kind=kind, text=item["query"], filters=dict(item.get("filters", {})),
            rankings=tuple(item.get("rankings", default_rankings)), first=first, over=over, expect=expect,
            note=item.get("note", ""), known_failures=dict(item.get("known_failures", {})),
        ))
        unknown = set(cases[-1].known_failures) - set(cases[-1].rankings)
        if unknown:
            raise ValueError(f"{item['id']}: known_failures names rankings it does not run: {sorted(unknown)}")
    return PreferenceSet(policy_toml=toml, cases=tuple(cases))


# ---------------------------------------------------------------------------------------------------------- the palace


def open_settings(workdir: Path, store_url: str = "") -> Settings:
    """Settings for a palace under `workdir`: builtin embeddings on 2 threads, no user config file; kept in SQLite
    in the palace directory, or in the PostgreSQL database `store_url` names."""
    config = workdir / "config.toml"
    if not config.exists():
        config.write_text("", encoding="utf-8")
    return load_settings(
        flags={"palace": str(workdir / "palace"), "embeddings.provider": "builtin", "embeddings.threads": 2,
               "store.url": store_url},
        env={}, config_file=config,
    )


@dataclass
class MinedPalace:
    """A started palace holding the judged corpus after every supersession step."""

    palace: Palace
    corpus: Corpus
    workdir: Path
    instants: dict[str, str]  # "start", "0", "1", … → the instant after that step's mine
    sources: dict[str, str]  # source id → mined folder (its path under the corpus root)
    timings: dict[str, float] = field(default_factory=dict)
    store_url: str = ""  # empty: SQLite in the palace directory

    @property
    def services(self) -> Any:
        return self.palace.services

    def doc_key(self, drawer: Drawer) -> str | None:
        """The document's path under the corpus root, or None for a drawer that was not mined from the corpus."""
        origin = drawer.source.origin
        if origin is None or origin.source_id not in self.sources:
            return None
        return f"{self.sources[origin.source_id]}/{origin.document}"

    def request(self, text: str, filters: Mapping[str, Any], ranking: str, *, limit: int = LIMIT,
                expand: bool = False, preferences: str = "on") -> SearchRequest:
        """A service request from judged filters; steps become the instants recorded while mining."""
        def instant(step: Any) -> str:
            return self.instants[str(step)]

        return SearchRequest(
            query=text, limit=limit, wing=filters.get("wing"), room=filters.get("room"),
            tags=tuple(filters.get("tags", ())), source_kind=filters.get("source_kind"),
            connector=filters.get("connector"), ranking=ranking,
            as_of=instant(filters["as_of_step"]) if "as_of_step" in filters else None,
            from_=instant(filters["from_step"]) if "from_step" in filters else None,
            until=instant(filters["until_step"]) if "until_step" in filters else None,
            include_historical=bool(filters.get("include_historical", False)), expand=expand,
            preferences=preferences,
        )

    def in_scope(self, drawer: Drawer, filters: Mapping[str, Any]) -> bool:
        """Whether the drawer passes the judged scope filters (wing, room, tags, source kind, connector)."""
        origin = drawer.source.origin
        return (filters.get("wing", drawer.wing) == drawer.wing
                and filters.get("room", drawer.room) == drawer.room
                and set(filters.get("tags", ())) <= set(drawer.tags)
                and filters.get("source_kind", drawer.source.kind) == drawer.source.kind
                and ("connector" not in filters or (origin is not None and origin.connector == filters["connector"])))

    def is_eligible(self, drawer: Drawer, filters: Mapping[str, Any]) -> bool:
        """Whether the drawer passes the judged filters: scope, then the SPEC §3 temporal rule."""
        if not self.in_scope(drawer, filters):
            return False
        if filters.get("include_historical"):
            return True
        if "as_of_step" in filters:
            start = end = self.instants[str(filters["as_of_step"])]
            return drawer.valid_from <= start and (drawer.valid_to is None or drawer.valid_to > end)
        if "from_step" in filters:
            start, end = self.instants[str(filters["from_step"])], self.instants[str(filters["until_step"])]
            return drawer.valid_from < end and (drawer.valid_to is None or drawer.valid_to > start)
        return drawer.valid_to is None

    def search(self, request: SearchRequest) -> SearchResult:
        result: SearchResult = self.services.search(request)
        return result

    def all_drawers(self) -> list[Drawer]:
        """Every drawer of the corpus, current and superseded."""
        seen: dict[str, Drawer] = {}
        wings = [w.name for w in self.services.list_wings()]
        for wing in wings:
            after = None
            while True:
                page = self.services.list_drawers(wing, None, 200, after)
                for drawer in page.items:
                    for version in self.services.drawer_history(drawer.id):
                        seen[version.id] = version
                if page.next_after is None:
                    break
                after = page.next_after
        return [d for d in seen.values() if self.doc_key(d) is not None]

    def stop(self) -> None:
        self.palace.stop()


def _wait_job(palace: Palace, job_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = palace.services.get_job(job_id)
        if job.is_finished:
            if job.status is not JobStatus.COMPLETED:
                raise RuntimeError(f"{job.kind} job {job.id} ended {job.status.value}: {job.error}")
            return dict(job.result or {})
        if time.monotonic() > deadline:
            raise RuntimeError(f"{job.kind} job {job.id} still {job.status.value} after {timeout:.0f}s")
        time.sleep(0.02)


def wait_for_background(palace: Palace, timeout: float) -> None:
    """Until the background sweeps are done: every drawer embedded and read for facts, no embed or extract job
    queued or running."""
    deadline = time.monotonic() + timeout
    services = palace.services
    while True:
        jobs = [*services.list_jobs(None, "embed"), *services.list_jobs(None, "extract")]
        failed = [j for j in jobs if j.status is JobStatus.FAILED]
        if failed:
            raise RuntimeError(f"{failed[0].kind} job {failed[0].id} failed: {failed[0].error}")
        if (not any(not j.is_finished for j in jobs) and services.embedding_status()["pending"] == 0
                and services.extraction_status()["pending"] == 0):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"embedding or extraction still pending after {timeout:.0f}s")
        time.sleep(0.05)


def _mine_all(palace: Palace, corpus: Corpus, sources_root: Path, timeout: float) -> dict[str, str]:
    submitted = []
    for mine in corpus.mines:
        job, _ = palace.services.submit_mine(mine.connector, str(sources_root / mine.path), {}, wing=mine.wing,
                                             requested_by="cli")
        submitted.append((mine, job.id))
    sources: dict[str, str] = {}
    for mine, job_id in submitted:
        result = _wait_job(palace, job_id, timeout)
        if result.get("skipped") or result.get("errors"):
            raise RuntimeError(f"mining {mine.path} skipped or failed documents: "
                               f"{result.get('skipped_documents')} {result.get('warnings')}")
        sources[str(result["source_id"])] = mine.path.rstrip("/")
    return sources


def _tick() -> str:
    """An instant strictly between the writes before and after it."""
    time.sleep(0.005)
    now = utc_now()
    time.sleep(0.005)
    return now


def build_palace(workdir: Path, corpus: Corpus | None = None, *, timeout: float = 300.0,
                 store_url: str = "") -> MinedPalace:
    """Copy the sources, build and start a palace, mine step 0, then every supersession step, embedding as it goes."""
    corpus = corpus or load_corpus()
    sources_root = workdir / "sources"
    for mine in corpus.mines:
        shutil.copytree(corpus.root / mine.path, sources_root / mine.path, dirs_exist_ok=True)
    started = time.monotonic()
    palace = build(open_settings(workdir, store_url))
    palace.start()
    timings: dict[str, float] = {"start": time.monotonic() - started}
    try:
        instants = {START: _tick()}
        sources = _mine_all(palace, corpus, sources_root, timeout)
        wait_for_background(palace, timeout)
        instants["0"] = _tick()
        for step in corpus.steps:
            for name in step.files:
                target = sources_root / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(corpus.root / "steps" / str(step.number) / name, target)
            sources.update(_mine_all(palace, corpus, sources_root, timeout))
            wait_for_background(palace, timeout)
            instants[str(step.number)] = _tick()
    except BaseException:
        palace.stop()
        raise
    timings["mine_and_embed"] = time.monotonic() - started
    return MinedPalace(palace=palace, corpus=corpus, workdir=workdir, instants=instants, sources=sources,
                       timings=timings, store_url=store_url)


def reopen_with_policy(mined: MinedPalace, policy_toml: str | None, *, timeout: float = 60.0) -> MinedPalace:
    """Start the (stopped) palace again with `<palace>/preferences.toml` written (or removed): the policy is read
    at start-up, the drawers and their frozen snapshots stay as mined."""
    policy_file = mined.workdir / "palace" / "preferences.toml"
    if policy_toml is None:
        policy_file.unlink(missing_ok=True)
    else:
        policy_file.write_text(policy_toml, encoding="utf-8")
    palace = build(open_settings(mined.workdir, mined.store_url))
    palace.start()
    try:
        wait_for_background(palace, timeout)
    except BaseException:
        palace.stop()
        raise
    return MinedPalace(palace=palace, corpus=mined.corpus, workdir=mined.workdir, instants=mined.instants,
                       sources=mined.sources, timings=mined.timings, store_url=mined.store_url)


# ------------------------------------------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Entry:
    """One ranked drawer with the score that ranked it."""

    key: str | None
    drawer: Drawer
    score: float


@dataclass(frozen=True)
class Outcome:
    """One query under one ranking: what came back and how it scored."""

    query: Query
    ranking: str
    used: str  # the ranking the engine reports
    hits: tuple[tuple[str | None, str], ...]  # (document key, first 60 characters) per hit, as returned
    found: tuple[int | None, ...]  # per relevant document: its 1-based rank in the response, or None
    metrics: Mapping[str, float]  # expected over the orders of exactly tied hits
    ties: int  # hits in the top LIMIT that tie exactly with another candidate
    warnings: tuple[str, ...] = ()


def observed_ranks(query: Query, entries: Sequence[Entry]) -> list[int | None]:
    """Per relevant document, the rank of the first hit that matches it (each hit credits one document)."""
    ranks: list[int | None] = [None] * len(query.relevant)
    for rank, entry in enumerate(entries, start=1):
        for index, ref in enumerate(query.relevant):
            if ranks[index] is None and ref.matches(entry.key, entry.drawer):
                ranks[index] = rank
                break
    return ranks


def tie_groups(entries: Sequence[Entry]) -> list[tuple[int, int]]:
    """Runs of exactly equal scores as (first, last) 0-based positions; `entries` is sorted by score."""
    groups: list[tuple[int, int]] = []
    start = 0
    for index in range(1, len(entries) + 1):
        if index == len(entries) or not math.isclose(entries[index].score, entries[start].score, rel_tol=1e-12,
                                                     abs_tol=0.0):
            groups.append((start, index - 1))
            start = index
    return groups


def expected_metrics(query: Query, entries: Sequence[Entry], limit: int = LIMIT) -> tuple[dict[str, float],
                                                                                       list[float]]:
    """recall@5, recall@10, nDCG@10 (graded gains; ideal = the relevant documents in grade order) and MRR at
    `limit`, as expectations over every order of exactly tied entries (McSherry & Najork, ECIR 2008); and per
    relevant document the probability that it is in the top `limit`.

    The engine breaks exact ties by drawer id, and drawer ids are random per palace, so the observed order of a tie
    is luck: two palaces mined from the same files disagree on it. The expectation is the same for both."""
    owner: dict[int, int] = {}  # entry position -> index of the relevant document it stands for
    for index, ref in enumerate(query.relevant):
        for position, entry in enumerate(entries):
            if position not in owner and ref.matches(entry.key, entry.drawer):
                owner[position] = index
                break
    within: dict[int, list[float]] = {5: [0.0] * len(query.relevant), limit: [0.0] * len(query.relevant)}
    dcg = 0.0
    reciprocal = 0.0
    first_found = False
    for first, last in tie_groups(entries):
        size = last - first + 1
        members = [owner[p] for p in range(first, last + 1) if p in owner]
        if not members:
            continue
        for k, chances in within.items():
            for index in members:
                chances[index] = max(0, min(k, last + 1) - first) / size
        discount = sum(1 / math.log2(p + 1) for p in range(first + 1, min(last + 1, limit) + 1)) / size
        dcg += sum(query.gain(query.relevant[i]) for i in members) * discount
        if not first_found:
            first_found = True
            count = len(members)
            total = math.comb(size, count)
            for x in range(1, size - count + 2):  # x = the position of the first relevant one inside the group
                rank = first + x
                if rank <= limit:
                    reciprocal += math.comb(size - x, count - 1) / total / rank
    ideal = sorted((query.gain(r) for r in query.relevant), reverse=True)[:limit]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    total_relevant = len(query.relevant)
    metrics = {"recall@5": sum(within[5]) / total_relevant, "recall@10": sum(within[limit]) / total_relevant,
               "ndcg@10": dcg / idcg if idcg else 0.0, "mrr": reciprocal}
    return metrics, within[limit]


def applies(query: Query, ranking: str) -> bool:
    wanted = {"auto": "hybrid"}.get(query.ranking or "", query.ranking)
    return wanted is None or wanted == {"auto": "hybrid"}.get(ranking, ranking)


def entries_of(mined: MinedPalace, result: SearchResult) -> list[Entry]:
    return [Entry(mined.doc_key(h.drawer), h.drawer, h.score) for h in result.hits]


def fused_entries(mined: MinedPalace, query: Query, limit: int = LIMIT) -> list[Entry]:
    """The whole fused pool of a hybrid search with `limit`: both legs fetched through the service at the depth
    the hybrid search uses, fused with the palace's own RRF. Unlike the response, it shows which candidates below
    the cut tie with the last hits."""
    depth = max(2 * limit, MIN_LEG)
    legs = [mined.search(mined.request(query.text, query.filters, ranking, limit=depth))
            for ranking in ("lexical", "semantic")]
    settings = mined.palace.settings
    weights = FusionWeights(k=settings["search.rrf_k"], lexical=settings["search.lexical_weight"],
                            semantic=settings["search.semantic_weight"])
    fused = fuse_ranks(*([ScoredDrawer(h.drawer.id, h.score) for h in leg.hits] for leg in legs), weights)
    drawers = {h.drawer.id: h.drawer for leg in legs for h in leg.hits}
    return [Entry(mined.doc_key(drawers[r.drawer_id]), drawers[r.drawer_id], r.base) for r in fused]


def run_query(mined: MinedPalace, query: Query, ranking: str) -> Outcome:
    """Search as a client would (limit 10); score the direct hits with exact ties counted as ties, and the whole
    response (direct hits, then graph-expanded ones) for `recall+graph`."""
    result = mined.search(mined.request(query.text, query.filters, ranking, expand=query.expand))
    direct = [Entry(mined.doc_key(h.drawer), h.drawer, h.score) for h in result.hits if h.via is None]
    related = [Entry(mined.doc_key(h.drawer), h.drawer, h.score) for h in result.hits if h.via is not None]
    entries = direct
    if result.ranking == "hybrid":
        entries = fused_entries(mined, query)
        got = [e.score for e in direct]
        want = [e.score for e in entries[: len(direct)]]
        if len(got) != len(want) or not all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(got, want)):
            raise RuntimeError(f"{query.id}: the hybrid response {got} disagrees with its legs fused again {want}")
    metrics, chances = expected_metrics(query, entries)
    # Expansion keeps the `limit` best related drawers, ties by (random) drawer id: when it is full, the drawers
    # tied with the last one are luck, so only those scoring above it count.
    certain = related
    if len(related) >= LIMIT:
        floor = min(e.score for e in related)
        certain = [e for e in related if e.score > floor]
    by_graph = [any(ref.matches(e.key, e.drawer) for e in certain) for ref in query.relevant]
    metrics["recall+graph"] = sum(max(c, float(g)) for c, g in zip(chances, by_graph)) / len(query.relevant)
    tied = {p for first, last in tie_groups(entries) if last > first for p in range(first, last + 1)}
    returned = direct + related
    return Outcome(query=query, ranking=ranking, used=result.ranking,
                   hits=tuple((e.key if e in direct else f"{e.key} (via graph)",
                               e.drawer.content[:60].replace("\n", " ")) for e in returned),
                   found=tuple(observed_ranks(query, returned)), metrics=metrics,
                   ties=sum(1 for p in tied if p < LIMIT), warnings=tuple(result.warnings))


def run_judged(mined: MinedPalace, queries: Sequence[Query], ranking: str) -> list[Outcome]:
    """Every query that applies to `ranking` (`auto` counts as hybrid)."""
    return [run_query(mined, q, ranking) for q in queries if applies(q, ranking)]


def summarize(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float]]:
    """Mean of each metric per category and over all queries, with the query count as `n`."""
    groups: dict[str, list[Outcome]] = {"all": list(outcomes)}
    for outcome in outcomes:
        groups.setdefault(outcome.query.category, []).append(outcome)
    table: dict[str, dict[str, float]] = {}
    for name in ("all", *CATEGORIES):
        members = groups.get(name, [])
        if not members:
            continue
        table[name] = {"n": float(len(members))}
        for metric in METRICS:
            table[name][metric] = round(sum(o.metrics[metric] for o in members) / len(members), 4)
    return table


@dataclass(frozen=True)
class Gap:
    """One metric of one category measured on another backend, against the SQLite baseline."""

    ranking: str
    category: str
    metric: str
    measured: float
    baseline: float

    @property
    def difference(self) -> float:
        return self.measured - self.baseline

    def __str__(self) -> str:
        return (f"{self.ranking}/{self.category} {self.metric}: {self.measured:.4f} vs {self.baseline:.4f} "
                f"({self.difference:+.4f})")


def parity_gaps(current: Mapping[str, Mapping[str, float]], baseline: Mapping[str, Mapping[str, float]],
                ranking: str) -> list[Gap]:
    """Every metric of every category, measured against its baseline."""
    return [Gap(ranking, category, metric, current[category][metric], expected[metric])
            for category, expected in baseline.items() if category in current for metric in METRICS]


def parity_problems(current: Mapping[str, Mapping[str, float]], baseline: Mapping[str, Mapping[str, float]],
                    ranking: str, parity: float = PARITY) -> list[str]:
    """Where another backend is not at parity with the SQLite baseline: any metric over all queries more than
    `parity` away in either direction, or any metric of a category more than `parity` below it.

    A category holds 10 to 14 queries, so one query answered differently moves its metrics by 0.07 to 0.14: a
    category may come out better on another backend (the stemmers differ), never worse."""
    problems = []
    for gap in parity_gaps(current, baseline, ranking):
        if abs(gap.difference) > parity + EPSILON and (gap.category == "all" or gap.difference < 0):
            problems.append(str(gap))
    return problems


def regressions(current: Mapping[str, Mapping[str, float]], baseline: Mapping[str, Mapping[str, float]],
                tolerance: float = TOLERANCE) -> list[str]:
    """Each metric more than `tolerance` below its baseline, as a readable line."""
    problems = []
    for category, metrics in baseline.items():
        for metric, expected in metrics.items():
            if metric == "n":
                continue
            got = current.get(category, {}).get(metric)
            if got is None:
                problems.append(f"{category} {metric}: missing (baseline {expected:.3f})")
            elif got < expected - tolerance - EPSILON:
                problems.append(f"{category} {metric}: {got:.3f} < baseline {expected:.3f} - {tolerance}")
    return problems


# -------------------------------------------------------------------------------------------------- checks of the data


def _fts_shares_terms(text: str, terms: Iterable[str]) -> list[str]:
    """The query terms that the full-text index (same tokenizer as the palace) finds in `text`."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize = 'porter unicode61 remove_diacritics 2')")
        db.execute("INSERT INTO t(content) VALUES (?)", (text,))
        shared = []
        for term in terms:
            if db.execute("SELECT 1 FROM t WHERE t MATCH ?", ('"' + term.replace('"', '""') + '"',)).fetchone():
                shared.append(term)
        return shared
    finally:
        db.close()


def validate(mined: MinedPalace, queries: Sequence[Query], preferences: PreferenceSet | None = None) -> list[str]:
    """Problems with the judged data itself: names that match no drawer, markers that do not single out one
    revision, paraphrases that share a content word with their answer, scoped queries whose distractor does not
    outrank the answer when the filter is dropped, graph-ready sets that miss a mention."""
    drawers = mined.all_drawers()
    keyed = [(mined.doc_key(d), d) for d in drawers]
    problems: list[str] = []

    def check_ref(owner: str, ref: DocRef) -> list[Drawer]:
        found = [d for k, d in keyed if ref.matches(k, d)]
        if not found:
            problems.append(f"{owner}: {ref.label} matches no drawer")
        elif ref.contains is not None and len(found) > 1:
            problems.append(f"{owner}: {ref.label} matches {len(found)} drawers; the marker must pick one revision")
        return found

    for query in queries:
        matched = [d for ref in query.relevant for d in check_ref(query.id, ref)]
        for ref in query.relevant:
            if not any(mined.is_eligible(d, query.filters) for k, d in keyed if ref.matches(k, d)):
                problems.append(f"{query.id}: no revision of {ref.label} is in the query's scope and time")
        if query.distractor is not None:
            outside = [d for d in check_ref(query.id, query.distractor) if not mined.in_scope(d, query.filters)]
            if not outside:
                problems.append(f"{query.id}: the distractor {query.distractor.label} is inside the filter")
        if query.category == "paraphrase":
            terms = query_terms(query.text)
            for drawer in matched:
                shared = _fts_shares_terms(drawer.content, terms)
                if shared:
                    problems.append(f"{query.id}: shares {shared} with {mined.doc_key(drawer)}")
        if query.category == "scoped":
            if query.distractor is None:
                problems.append(f"{query.id}: a scoped query names its distractor")
            else:
                unscoped = {k: v for k, v in query.filters.items()
                            if k in ("as_of_step", "from_step", "until_step", "include_historical")}
                hits = mined.search(mined.request(query.text, unscoped, "lexical")).hits
                ranked = [(mined.doc_key(h.drawer), h.drawer) for h in hits]
                top = next((i for i, (k, d) in enumerate(ranked) if query.distractor.matches(k, d)), None)
                best = min((i for i, (k, d) in enumerate(ranked) for r in query.relevant if r.matches(k, d)),
                           default=None)
                if top is None or (best is not None and best < top):
                    problems.append(f"{query.id}: without the filter the distractor does not outrank the answer "
                                    f"(lexical ranks: distractor {top}, best answer {best})")
                for ref in query.relevant:
                    if query.distractor.doc == ref.doc:
                        problems.append(f"{query.id}: the distractor is a relevant document")
        if query.entity:
            current = {k for k, d in keyed if d.valid_to is None
                       and any(e.lower() in d.content.lower() for e in query.entity)}
            judged = {r.doc for r in query.relevant}
            if current != judged:
                problems.append(f"{query.id}: documents mentioning {list(query.entity)}: missing from relevant "
                                f"{sorted(current - judged)}, judged but not mentioning {sorted(judged - current)}")
    if preferences is not None:
        for case in preferences.cases:
            for ref in (case.first, case.over, *(e[0] for e in case.expect)):
                if ref is not None:
                    check_ref(case.id, ref)
    return problems


# --------------------------------------------------------------------------------------------------------- preferences


@dataclass(frozen=True)
class PreferenceOutcome:
    case: PreferenceCase
    ranking: str
    problems: tuple[str, ...]  # every rule broken, the bound included
    bound: tuple[str, ...]  # hits breaking |score - relevance| <= 0.08 or lacking the signals
    top: str  # the first hit, as document key (+ level)
    neutral_top: str  # the first hit with preferences off
    neutral_tie: bool  # with preferences off, the first two hits tie or have the same text (drawer ids decide)
    hits: int

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def known_failure(self) -> str | None:
        """Why the engine is known to fail this case under this ranking, if it is."""
        return self.case.known_failures.get(self.ranking)

    @property
    def flipped(self) -> bool:
        """True when the preference changed which document ranks first (a tie without it counts as changed)."""
        return self.neutral_tie or self.top.split(" ")[0] != self.neutral_top.split(" ")[0]


def _describe(mined: MinedPalace, hit: Hit | None) -> str:
    if hit is None:
        return "(no hits)"
    preference = hit.signals.get("preference") or {}
    level = preference.get("level", "-") if isinstance(preference, Mapping) else "-"
    return f"{mined.doc_key(hit.drawer)} [{level}]"


def run_preference_case(mined: MinedPalace, case: PreferenceCase, ranking: str) -> PreferenceOutcome:
    """Check a case's rules exactly: who ranks first, the bound on every hit, the expected resolutions."""
    result = mined.search(mined.request(case.text, case.filters, ranking))
    neutral = mined.search(mined.request(case.text, case.filters, ranking, preferences="off"))
    hits = list(result.hits)
    problems: list[str] = []
    if ranking in ("hybrid", "auto") and result.ranking != "hybrid":
        problems.append(f"ranked {result.ranking}, not hybrid: {list(result.warnings)}")

    def position(ref: DocRef) -> int | None:
        return next((i for i, h in enumerate(hits) if ref.matches(mined.doc_key(h.drawer), h.drawer)), None)

    bound: list[str] = []
    for index, hit in enumerate(hits):
        relevance = hit.signals.get("relevance")
        if not isinstance(relevance, (int, float)) or "preference" not in hit.signals:
            bound.append(f"hit {index + 1} lacks relevance or preference signals")
        elif abs(hit.score - relevance) > BOUND + EPSILON:
            bound.append(f"hit {index + 1}: |score - relevance| = {abs(hit.score - relevance):.4f} > {BOUND}")
    problems.extend(bound)
    first = position(case.first)
    if first != 0:
        problems.append(f"{case.first.label} ranks {'absent' if first is None else first + 1}, not first; "
                        f"first is {_describe(mined, hits[0] if hits else None)}")
    if case.over is not None:
        other = position(case.over)
        if other is None:
            problems.append(f"{case.over.label} is not among the hits: not a near tie")
        elif first is not None and other < first:
            problems.append(f"{case.over.label} ranks above {case.first.label}")
    if case.kind == "low_stays_first" and first is not None:
        level = hits[first].signals["preference"]["level"]
        if level != "low":
            problems.append(f"{case.first.label} resolves to {level!r}, but the case is about a low drawer")
    for ref, level, criterion in case.expect:
        at = position(ref)
        if at is None:
            problems.append(f"expected {ref.label} among the hits")
            continue
        found = hits[at].signals["preference"]
        path = (found.get("criterion") or {}).get("path")
        if found["level"] != level or path != criterion:
            problems.append(f"{ref.label} resolves to {found['level']!r} via {path!r}; expected {level!r} via "
                            f"{criterion!r}")
    return PreferenceOutcome(case=case, ranking=ranking, problems=tuple(problems), bound=tuple(bound),
                             top=_describe(mined, hits[0] if hits else None),
                             neutral_top=_describe(mined, neutral.hits[0] if neutral.hits else None),
                             neutral_tie=len(neutral.hits) > 1 and (
                                 neutral.hits[0].score == neutral.hits[1].score
                                 or neutral.hits[0].drawer.content_hash == neutral.hits[1].drawer.content_hash),
                             hits=len(hits))


def run_preferences(mined: MinedPalace, preferences: PreferenceSet) -> list[PreferenceOutcome]:
    return [run_preference_case(mined, case, ranking) for case in preferences.cases for ranking in case.rankings]


# ------------------------------------------------------------------------------------------------------------- reports


def format_table(tables: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    header = ["ranking", "category", "n", *METRICS]
    rows = [header]
    for ranking, table in tables.items():
        for category, metrics in table.items():
            rows.append([ranking, category, str(int(metrics["n"])), *(f"{metrics[m]:.3f}" for m in METRICS)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def format_misses(outcomes: Sequence[Outcome]) -> str:
    lines = []
    for o in outcomes:
        if o.metrics["recall@10"] < 1 or o.metrics["mrr"] < 1:
            lines.append(f"  {o.ranking:8} {o.query.id:14} R@10 {o.metrics['recall@10']:.2f} MRR {o.metrics['mrr']:.2f}"
                         f"  {o.query.text!r}")
            for ref, rank in zip(o.query.relevant, o.found, strict=True):
                lines.append(f"      want {ref.label}  rank {rank}")
            for i, (key, text) in enumerate(o.hits[:5], start=1):
                lines.append(f"      {i}. {key}  {text!r}")
    return "\n".join(lines)


def format_preferences(outcomes: Sequence[PreferenceOutcome]) -> str:
    lines = []
    for o in outcomes:
        state = ("ok  " if o.passed else "FAIL") + ("*" if o.known_failure else " ")
        flip = ("tied for first without the policy" if o.neutral_tie else
                "flipped by the policy" if o.flipped else "same first hit without the policy")
        lines.append(f"  {state} {o.case.id:10} {o.ranking:7} {o.case.kind:15} first {o.top}; {flip}")
        lines.extend(f"          - {p}" for p in o.problems)
        if o.known_failure:
            lines.append(f"          known failure: {o.known_failure}")
    return "\n".join(lines)


@dataclass
class Evaluation:
    """Everything one run measured."""

    outcomes: dict[str, list[Outcome]]  # ranking → one outcome per query
    tables: dict[str, dict[str, dict[str, float]]]  # ranking → category → metric → mean
    problems: list[str]  # problems with the judged data (see `validate`)
    preferences: list[PreferenceOutcome]
    corpus: dict[str, int]
    timings: dict[str, float]


def evaluate(workdir: Path, rankings: Sequence[str] = RANKINGS, corpus: Corpus | None = None, *,
             store_url: str = "") -> Evaluation:
    """The whole run in `workdir`: mine the corpus, check the data, run the judged set under each ranking, then
    restart the palace with the set's policy and run the preference set. `store_url` (a postgresql:// URL of an
    empty palace) keeps the palace in PostgreSQL instead of SQLite."""
    started = time.monotonic()
    corpus = corpus or load_corpus()
    queries = load_queries(corpus)
    preferences = load_preferences(corpus)
    mined = build_palace(workdir, corpus, store_url=store_url)
    try:
        drawers = mined.all_drawers()
        problems = validate(mined, queries, preferences)
        outcomes = {ranking: run_judged(mined, queries, ranking) for ranking in rankings}
    finally:
        mined.stop()
    timings = {**mined.timings, "judged": time.monotonic() - started}
    preferring = reopen_with_policy(mined, preferences.policy_toml)
    try:
        preference_outcomes = run_preferences(preferring, preferences)
    finally:
        preferring.stop()
    timings["total"] = time.monotonic() - started
    return Evaluation(
        outcomes=outcomes, tables={ranking: summarize(found) for ranking, found in outcomes.items()},
        problems=problems, preferences=preference_outcomes,
        corpus={"documents": len({mined.doc_key(d) for d in drawers}), "drawers": len(drawers),
                "current": sum(d.valid_to is None for d in drawers)},
        timings=timings,
    )


def measure(rankings: Sequence[str] = RANKINGS, *, verbose: bool = False, out: Any = sys.stdout,
            store_url: str = "") -> Evaluation:
    """`evaluate` in a temporary folder, with the tables printed."""
    with tempfile.TemporaryDirectory(prefix="memcastle-judged-") as folder:
        run = evaluate(Path(folder), rankings, store_url=store_url)
    print(f"corpus: {run.corpus['documents']} documents, {run.corpus['drawers']} drawers ({run.corpus['current']} "
          f"current); mined, embedded and extracted in {run.timings['mine_and_embed']:.1f} s", file=out)
    print(format_table(run.tables), file=out)
    if verbose:
        for ranking in rankings:
            print(format_misses(run.outcomes[ranking]), file=out)
    passed = sum(o.passed for o in run.preferences)
    known = sum(1 for o in run.preferences if o.known_failure)
    print(f"preference set: {passed}/{len(run.preferences)} checks pass ({known} known failures, marked *); "
          f"{sum(o.flipped for o in run.preferences if o.case.kind == 'near_tie')} near ties decided by the policy",
          file=out)
    print(format_preferences(run.preferences), file=out)
    if run.problems:
        print("problems with the judged data:", file=out)
        print("\n".join(f"  {p}" for p in run.problems), file=out)
    print(f"run time {run.timings['total']:.1f} s", file=out)
    return run


def write_baseline(run: Evaluation, path: Path | None = None) -> Path:
    path = path or ROOT / "baseline.json"
    baseline = {
        "command": "python bench/judged.py --write-baseline",
        "created": utc_now(),
        "tolerance": TOLERANCE,
        "limit": LIMIT,
        "note": "means per category; metrics are expectations over exactly tied hits (see expected_metrics)",
        "corpus": run.corpus,
        "metrics": run.tables,
        "preferences": {"checks": len(run.preferences), "passed": sum(o.passed for o in run.preferences),
                        "known_failures": sorted(f"{o.case.id} {o.ranking}" for o in run.preferences
                                                 if o.known_failure)},
    }
    path.write_text(json.dumps(baseline, indent=2) + "\n", encoding="utf-8")
    return path


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rankings", default=",".join(RANKINGS),
                        help="comma-separated subset of lexical, semantic, hybrid")
    parser.add_argument("--write-baseline", action="store_true", help="write eval/judged/baseline.json")
    parser.add_argument("--verbose", action="store_true", help="list every query that misses, with its top hits")
    parser.add_argument("--store", default="", metavar="URL",
                        help="keep the palace in this (empty) PostgreSQL database and compare every metric with "
                             f"the SQLite baseline (parity: within {PARITY})")
    args = parser.parse_args(argv)
    if args.store and args.write_baseline:
        parser.error("the baseline is measured on SQLite; drop --store")
    args.rankings = tuple(r.strip() for r in args.rankings.split(",") if r.strip())
    unknown = set(args.rankings) - set(RANKINGS)
    if unknown:
        parser.error(f"unknown rankings {sorted(unknown)}; choose from {', '.join(RANKINGS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = measure(args.rankings, verbose=args.verbose, store_url=args.store)
    if args.store:
        baseline = json.loads((ROOT / "baseline.json").read_text(encoding="utf-8"))
        print(f"against the SQLite baseline (parity: all queries within {PARITY}, no category more than {PARITY} "
              "below):")
        problems = []
        for ranking in args.rankings:
            expected = baseline["metrics"][ranking]
            for gap in parity_gaps(run.tables[ranking], expected, ranking):
                if gap.category == "all" or abs(gap.difference) > PARITY:
                    print(f"  {gap}")
            problems.extend(parity_problems(run.tables[ranking], expected, ranking))
        print("parity: " + ("ok" if not problems else "NOT met:\n  " + "\n  ".join(problems)))
        return 1 if problems else 0
    unexpected = [o for o in run.preferences if not o.passed and not o.known_failure]
    if args.write_baseline:
        if run.problems or unexpected:
            print("not writing a baseline: the judged data has problems or a preference rule broke unexpectedly",
                  file=sys.stderr)
            return 1
        if set(args.rankings) != set(RANKINGS):
            print("a baseline covers all three rankings; drop --rankings", file=sys.stderr)
            return 1
        print(f"wrote {write_baseline(run)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
