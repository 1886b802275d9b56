"""The judged data: the corpus, its supersession steps, the queries and the preference cases."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcastle.model import Drawer

ROOT = Path(__file__).resolve().parents[2] / "eval" / "judged"
RANKINGS = ("lexical", "semantic", "hybrid")
CATEGORIES = ("lexical", "paraphrase", "scoped", "temporal", "graph-ready")
METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr", "recall+graph")
LIMIT = 10
TOLERANCE = 0.02
PARITY = 0.03  # another store backend answers the judged set within this of the SQLite baseline, both ways
START = "start"  # the instant before anything was mined
EPSILON = 1e-9


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
    steps = tuple(
        Step(number=int(s["step"]), description=s["description"], files=tuple(s["files"]))
        for s in data.get("steps", [])
    )
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


FILTER_KEYS = {
    "wing",
    "room",
    "tags",
    "source_kind",
    "connector",
    "as_of_step",
    "from_step",
    "until_step",
    "include_historical",
}


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
        queries.append(
            Query(
                id=item["id"],
                category=item["category"],
                text=item["query"],
                relevant=relevant,
                gains=graded,
                filters=filters,
                ranking=item.get("ranking"),
                expand=bool(item.get("expand", False)),
                distractor=DocRef.parse(item["distractor"], corpus) if item.get("distractor") else None,
                entity=tuple(item.get("entity", ())),
            )
        )
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
        expect = tuple((DocRef.parse(e["doc"], corpus), e["level"], e.get("criterion")) for e in item.get("expect", []))
        cases.append(
            PreferenceCase(
                id=item["id"],
                kind=kind,
                text=item["query"],
                filters=dict(item.get("filters", {})),
                rankings=tuple(item.get("rankings", default_rankings)),
                first=first,
                over=over,
                expect=expect,
                note=item.get("note", ""),
                known_failures=dict(item.get("known_failures", {})),
            )
        )
        unknown = set(cases[-1].known_failures) - set(cases[-1].rankings)
        if unknown:
            raise ValueError(f"{item['id']}: known_failures names rankings it does not run: {sorted(unknown)}")
    return PreferenceSet(policy_toml=toml, cases=tuple(cases))
