"""Fact extraction (SPEC §4, ADR 048): drawer texts with their context in, entities and relations out.

    ExtractionProvider     the protocol the extract job depends on: one Extraction per input, in order
    ├── HeuristicProvider  capitalised names, @handles, `code` and a fixed phrase table; offline, deterministic
    ├── CommandProvider    argv without a shell: stdin {"texts", ...} -> stdout {"results"}
    ├── HttpProvider       an OpenAI-compatible POST /chat/completions endpoint answering JSON
    └── NoneProvider       extraction disabled

Every answer, the heuristic's included, passes through `normalize_extraction`: vocabularies, deduplication, caps
and the confidence floor. Providers see each text's provenance and effective source preference, but the confidence
they give is kept as given and the floor applies whatever the preference: a trusted source does not make a claim
true, and a distrusted one does not make it false. Every failure of a provider is a `ProviderError` raised before
any result is returned, so a batch is all or nothing; every bad setting is a `ConfigError` naming its key.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import httpx

from memcastle.errors import ConfigError, ProviderError
from memcastle.providers.command import ask_command, tail

ENTITY_KINDS = ("person", "organization", "project", "tool", "place", "concept", "other")
PREDICATES = ("works_on", "member_of", "depends_on", "uses", "owns", "part_of", "located_in", "related_to")

DEFAULT_MIN_CONFIDENCE = 0.3
HEURISTIC_CONFIDENCE = 0.6
MISSING_CONFIDENCE = 0.5
MAX_ENTITIES = 50
MAX_RELATIONS = 50
# A "name" longer than this is a provider pasting a passage into a field, not naming something.
MAX_NAME_CHARS = 200
# Chat models reading a batch of drawers are far slower than an embedding call.
DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class ExtractionInput:
    """One text to read, with the context ADR 048 passes to providers."""

    id: str
    text: str
    provenance: Mapping[str, Any]  # {connector, document, uri, occurred_at}; values may be None
    preference: Mapping[str, Any]  # {level, connector, criterion}: the effective source preference


@dataclass(frozen=True)
class ExtractedEntity:
    """An entity as named in one text."""

    name: str
    kind: str


@dataclass(frozen=True)
class ExtractedRelation:
    """A claimed fact between two entities of the same text, named as in its entities."""

    subject: str
    predicate: str
    object: str
    confidence: float


@dataclass(frozen=True)
class Extraction:
    """What one text yielded, already normalized."""

    entities: tuple[ExtractedEntity, ...]
    relations: tuple[ExtractedRelation, ...]

    def to_json(self) -> dict[str, Any]:
        """The wire shape providers answer in; `normalize_extraction` of it gives this value back."""
        return {
            "entities": [{"name": e.name, "kind": e.kind} for e in self.entities],
            "relations": [
                {"subject": r.subject, "predicate": r.predicate, "object": r.object, "confidence": r.confidence}
                for r in self.relations
            ],
        }


EMPTY = Extraction(entities=(), relations=())


@runtime_checkable
class ExtractionProvider(Protocol):
    """Reads texts into entities and relations: exactly one normalized Extraction per input, in order."""

    name: str  # heuristic, command, http or none
    model: str  # "" for heuristic and none
    is_enabled: bool

    def extract(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        """One Extraction per input, in input order, or a ProviderError for the whole batch."""
        ...


# -------------------------------------------------------------------------------------------- normalization


def normalize_extraction(
    raw: Any, *, min_confidence: float, max_entities: int = MAX_ENTITIES, max_relations: int = MAX_RELATIONS
) -> Extraction:
    """One provider result brought into the vocabularies, deduplicated, capped and cut at the confidence floor.

    The floor is applied to the provider's confidence as given, never to a value weighted by source preference.
    Idempotent: normalizing a normalized result with the same arguments returns it unchanged.
    """
    if isinstance(min_confidence, bool) or not isinstance(min_confidence, (int, float)) \
            or not 0.0 <= min_confidence <= 1.0:
        raise ValueError(f"min_confidence must be a number in [0, 1], got {min_confidence!r}")
    if max_entities < 0 or max_relations < 0:
        raise ValueError(f"caps must not be negative, got {max_entities} and {max_relations}")
    if isinstance(raw, Extraction):
        raw = raw.to_json()
    if not isinstance(raw, Mapping):
        raise ProviderError(f"an extraction result must be a JSON object, not {_json_kind(raw)}")

    named: dict[str, ExtractedEntity] = {}  # entity key -> entity, in the provider's order
    for item in _list_field(raw, "entities"):
        if not isinstance(item, Mapping):
            continue
        name = _clean_name(item.get("name"))
        if name is None:
            continue
        kind = _clean_kind(item.get("kind"))
        key = _key(name)
        seen = named.get(key)
        if seen is None:
            named[key] = ExtractedEntity(name, kind)
        elif seen.kind == "other" and kind != "other":
            named[key] = ExtractedEntity(seen.name, kind)

    spelled: dict[str, str] = {key: entity.name for key, entity in named.items()}
    claims: dict[tuple[str, str, str], ExtractedRelation] = {}
    for item in _list_field(raw, "relations"):
        if not isinstance(item, Mapping):
            continue
        subject, obj = _clean_name(item.get("subject")), _clean_name(item.get("object"))
        if subject is None or obj is None:
            continue
        subject_key, object_key = _key(subject), _key(obj)
        if subject_key == object_key:
            continue
        confidence = _clean_confidence(item)
        if confidence is None or confidence < min_confidence:
            continue
        # An endpoint keeps the spelling its entity (or its first mention) gave it, so relations name entities.
        subject = spelled.setdefault(subject_key, subject)
        obj = spelled.setdefault(object_key, obj)
        predicate = _clean_predicate(item.get("predicate"))
        claim = (subject_key, predicate, object_key)
        prior = claims.get(claim)
        if prior is None or confidence > prior.confidence:
            claims[claim] = ExtractedRelation(subject, predicate, obj, confidence)

    # Relations are admitted in order while their endpoints fit the entity cap; the endpoints are then kept
    # first and other entities fill the slots left, so every relation names an entity of the result.
    relations: list[ExtractedRelation] = []
    endpoints: set[str] = set()
    for (subject_key, _, object_key), relation in claims.items():
        if len(relations) >= max_relations:
            break
        new = {subject_key, object_key} - endpoints
        if len(endpoints) + len(new) > max_entities:
            continue
        endpoints |= new
        relations.append(relation)

    order = list(named) + [key for key in spelled if key not in named and key in endpoints]
    spare = max_entities - len(endpoints)
    entities: list[ExtractedEntity] = []
    for key in order:
        if key in endpoints:
            entities.append(named.get(key) or ExtractedEntity(spelled[key], "other"))
        elif spare > 0:
            entities.append(named[key])
            spare -= 1
    return Extraction(entities=tuple(entities), relations=tuple(relations))


def _key(name: str) -> str:
    return name.casefold()


def _clean_name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    name = " ".join(value.split())
    return name if name and len(name) <= MAX_NAME_CHARS else None


def _clean_kind(value: Any) -> str:
    kind = value.strip().lower() if isinstance(value, str) else ""
    return kind if kind in ENTITY_KINDS else "other"


def _clean_predicate(value: Any) -> str:
    # "works on", "Works-On" and "works_on" are one predicate; anything outside the vocabulary is related_to.
    predicate = re.sub(r"[\s-]+", "_", value.strip().lower()) if isinstance(value, str) else ""
    return predicate if predicate in PREDICATES else "related_to"


def _clean_confidence(item: Mapping[str, Any]) -> float | None:
    """The confidence clamped to [0, 1]; MISSING_CONFIDENCE when absent; None (drop it) when not a finite number."""
    value = item.get("confidence")
    if value is None:
        return MISSING_CONFIDENCE
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):  # JSON integers may be too large for float()
        return 1.0 if value >= 1 else 0.0
    if not math.isfinite(value):
        return None
    return min(1.0, max(0.0, float(value)))


def _list_field(raw: Mapping[str, Any], field: str) -> list[Any]:
    value = raw.get(field)
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ProviderError(f'an extraction result\'s "{field}" must be a list, not {_json_kind(value)}')
    return list(value)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


# ------------------------------------------------------------------------------------------------ heuristic

_FENCED_CODE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_SENTENCE_BREAK = re.compile(
    r"(?<=[.!?])[\"'’”)\]]*\s+(?=[^\sa-z])"  # terminal punctuation, then space and no lower-case continuation
    r"|\n[ \t]*\n\s*"  # a blank line
    r"|\n(?=[ \t]*(?:[-*+>#|]|\d+[.)])\s)"  # a new list item, heading, quote or table row
)
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A code span names a tool when it is a name or a short command, not a whole expression.
_TOOL_NAME = re.compile(r"[\w@/.:+#-]+(?: [\w@/.:+#-]+){0,2}")
# Not inside an e-mail address, and not a decorator such as @dataclass(frozen=True).
_HANDLE = re.compile(r"(?<![\w@.])@[A-Za-z0-9_](?:[\w.-]*\w)?(?![\w(])")
_WORD = re.compile(r"[^\W_](?:[\w’'-]|\.(?=\w))*")
_MASK = "\x00"  # stands in for a code span or handle, so no name run can continue across one
_POSSESSIVE = re.compile(r"['’]s$|['’]$")

# Capitalised words that are not names: dropped from the start of a sentence, and a run made only of them is no
# name anywhere.
_NON_NAMES = frozenset("""
    a an the this that these those there here it its he she they we you i me us him her them my our your his their
    and but or nor so yet if then than when while where whereas after before because since although though unless
    until once also however therefore thus hence meanwhile moreover besides still just only even maybe perhaps
    yes no not ok okay hi hello hey thanks thank please sorry well oh
    today yesterday tomorrow tonight now later soon recently currently finally first next last again
    what why how who whom whose which whichever whatever
    is are was were be been being do does did has have had can could will would shall should may might must
    let lets let's as at in on for to from of by with about into over under per via all some any each every both
    either neither none one two three many most more much few several such other another same
    note notes todo fixme xxx hack update updated add added fix fixed remove removed refactor merge merged bump
    revert reverted move moved rename renamed use using make create implement support improve change changed clean
    initial release set get run see ask call check send try keep write read ping mail email tell look need want
    think remember consider start stop finish test deploy ship build review
    user assistant system human mr mrs ms dr prof true false null
    monday tuesday wednesday thursday friday saturday sunday january february march april june july august
    september october november december
""".split())
# Particles that join capitalised words into one name: "Bank of America", "Ludwig van Beethoven".
_PARTICLES = frozenset({"of", "de", "del", "der", "den", "van", "von", "da", "di", "du", "la", "le", "&"})
# "I" and its contractions end a name run: "Ana I think" is Ana.
_FIRST_PERSON = frozenset({"i", "i'm", "i’m", "i've", "i’ve", "i'll", "i’ll", "i'd", "i’d"})
_ORGANIZATION_SUFFIXES = frozenset(
    {"inc", "corp", "ltd", "gmbh", "llc", "labs", "corporation", "limited", "plc"}
)


@dataclass(frozen=True)
class _Phrase:
    predicate: str
    subject_kind: str | None
    object_kind: str | None


# The fixed phrase table (SPEC §4), with the plural and progressive forms of the same present-tense claims.
_PHRASES: Mapping[str, _Phrase] = {
    **dict.fromkeys(("works on", "work on", "is working on", "are working on"),
                    _Phrase("works_on", "person", "project")),
    **dict.fromkeys(("uses", "is using", "are using"), _Phrase("uses", None, "tool")),
    **dict.fromkeys(("lives in", "live in"), _Phrase("located_in", "person", "place")),
    **dict.fromkeys(("is based in", "are based in", "is located in", "are located in"),
                    _Phrase("located_in", None, "place")),
    **dict.fromkeys(("depends on", "depend on"), _Phrase("depends_on", None, "tool")),
    **dict.fromkeys(("is part of", "are part of"), _Phrase("part_of", None, None)),
    "owns": _Phrase("owns", None, None),
    **dict.fromkeys(("is a member of", "are members of", "joined"), _Phrase("member_of", "person", None)),
}
_PHRASE = re.compile(
    r"\b(?:" + "|".join(p.replace(" ", r"\s+") for p in sorted(_PHRASES, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
# A claim that is denied right before its phrase ("no longer works on", "never joined") is no claim.
_NEGATED = re.compile(r"(?:\bnot|\bnever|\bno\s+longer|n['’]t)\s+(?:\w+\s+)?$", re.IGNORECASE)
_NEGATION_REACH = 40  # characters before a phrase that may hold its negation
# Where two roles suggest different kinds, the earlier one here wins.
_ROLE_ORDER = ("place", "person", "project", "tool")


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    name: str
    kind: str | None  # fixed by the mention's form (@handle, `code`), else decided by roles


class HeuristicProvider:
    """Built-in, offline and deterministic: capitalised name runs, @handles, `code` as tools, a phrase table."""

    name = "heuristic"
    model = ""
    is_enabled = True

    def __init__(self, *, min_confidence: float = DEFAULT_MIN_CONFIDENCE, max_entities: int = MAX_ENTITIES,
                 max_relations: int = MAX_RELATIONS) -> None:
        self._min_confidence = min_confidence
        self._max_entities = max_entities
        self._max_relations = max_relations

    def extract(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        """Read each text on its own; provenance and preference do not change what the phrase table finds."""
        return [
            normalize_extraction(_read_heuristically(item.text), min_confidence=self._min_confidence,
                                 max_entities=self._max_entities, max_relations=self._max_relations)
            for item in inputs
        ]


def _read_heuristically(text: str) -> dict[str, Any]:
    """The heuristic's raw answer for one text, in the providers' wire shape (not yet normalized)."""
    spellings: dict[str, str] = {}  # key -> first spelling, in order of first mention
    fixed: dict[str, str] = {}
    roles: dict[str, set[str]] = {}
    relations: list[dict[str, Any]] = []
    for sentence in _sentences(_FENCED_CODE.sub("\n\n", text)):
        masked, mentions = _mentions(sentence)
        for mention in mentions:
            key = _key(mention.name)
            spellings.setdefault(key, mention.name)
            if mention.kind is not None:
                fixed.setdefault(key, mention.kind)
        starts = [m.start for m in mentions]
        ends = [m.end for m in mentions]  # mentions never overlap, so their ends are in order too
        for match in _PHRASE.finditer(masked):
            if _NEGATED.search(masked[max(0, match.start() - _NEGATION_REACH): match.start()]):
                continue
            phrase = _PHRASES[" ".join(match.group().lower().split())]
            if phrase.predicate == "member_of" and re.match(r"\s+by\b", masked[match.end():]):
                continue  # "was joined by" names the joiner after the phrase
            before = bisect.bisect_right(ends, match.start())
            after = bisect.bisect_left(starts, match.end())
            if before == 0 or after == len(mentions):
                continue
            subject, obj = mentions[before - 1], mentions[after]
            for mention, kind in ((subject, phrase.subject_kind), (obj, phrase.object_kind)):
                if kind is not None:
                    roles.setdefault(_key(mention.name), set()).add(kind)
            relations.append({"subject": subject.name, "predicate": phrase.predicate, "object": obj.name,
                              "confidence": HEURISTIC_CONFIDENCE})
    entities = [{"name": name, "kind": _heuristic_kind(key, name, fixed, roles)} for key, name in spellings.items()]
    return {"entities": entities, "relations": relations}


def _heuristic_kind(key: str, name: str, fixed: Mapping[str, str], roles: Mapping[str, set[str]]) -> str:
    if key in fixed:
        return fixed[key]
    if name.split()[-1].rstrip(".").casefold() in _ORGANIZATION_SUFFIXES:
        return "organization"
    found = roles.get(key, set())
    return next((kind for kind in _ROLE_ORDER if kind in found), "other")


def _sentences(text: str) -> list[str]:
    return [part for part in _SENTENCE_BREAK.split(text) if part.strip()]


def _mentions(sentence: str) -> tuple[str, list[_Mention]]:
    """The sentence with code spans and handles masked out, and every mention in it in order of position."""
    mentions: list[_Mention] = []
    chars = list(sentence)

    def mask(start: int, end: int) -> None:
        chars[start:end] = _MASK * (end - start)

    for match in _CODE_SPAN.finditer(sentence):
        inner = match.group(1).strip()
        if _TOOL_NAME.fullmatch(inner) and len(inner) <= 60:
            mentions.append(_Mention(match.start(), match.end(), inner, "tool"))
        mask(match.start(), match.end())
    for match in _HANDLE.finditer("".join(chars)):
        mentions.append(_Mention(match.start(), match.end(), match.group(), "person"))
        mask(match.start(), match.end())
    masked = "".join(chars)
    mentions.extend(_name_runs(masked))
    return masked, sorted(mentions, key=lambda m: m.start)


def _name_runs(masked: str) -> list[_Mention]:
    """Runs of capitalised words (with joining particles) that read as names."""
    runs: list[list[tuple[int, int, str]]] = []
    current: list[tuple[int, int, str]] = []
    pending: list[tuple[int, int, str]] = []  # a particle waiting for a capitalised word to join the run

    def flush() -> None:
        nonlocal current, pending
        if current:
            runs.append(current)
        current, pending = [], []

    previous_end = -1
    for match in _WORD.finditer(masked):
        word, start = match.group(), match.start()
        possessive = _POSSESSIVE.search(word)
        if possessive:
            word = word[: possessive.start()]
        end = start + len(word)
        adjacent = previous_end >= 0 and _is_joining_gap(masked[previous_end:start])
        previous_end = end
        if not word:
            flush()
        elif word[0].isupper() and word.casefold() not in _FIRST_PERSON:
            if current and adjacent:
                current.extend(pending)
                pending = []
            else:
                flush()
            current.append((start, end, word))
            if possessive:  # "Ana's Atlas" is two names
                flush()
        elif word.casefold() in _PARTICLES and current and adjacent and not pending:
            pending = [(start, end, word)]
        else:
            flush()
    flush()

    first_word = _WORD.search(masked)
    sentence_start = first_word.start() if first_word else -1
    mentions = []
    for run in runs:
        if run[0][0] == sentence_start:
            while run and run[0][2].casefold() in _NON_NAMES | _PARTICLES:
                run = run[1:]
        if not run or all(word.casefold() in _NON_NAMES for _, _, word in run):
            continue
        name = masked[run[0][0]: run[-1][1]]
        if len(name) < 2:
            continue
        mentions.append(_Mention(run[0][0], run[-1][1], " ".join(name.split()), None))
    return mentions


def _is_joining_gap(gap: str) -> bool:
    """Words join a name only across plain spaces: punctuation, a line break or a masked span ends the run."""
    return bool(gap) and not gap.strip(" \t") and "\n" not in gap


# ---------------------------------------------------------------------------------------- command and http


def _request_texts(inputs: Sequence[ExtractionInput]) -> list[dict[str, Any]]:
    """The texts as command and http providers receive them: id, text, provenance and preference context."""
    return [
        {"id": item.id, "text": item.text, "provenance": _jsonable(item.provenance),
         "preference": _jsonable(item.preference)}
        for item in inputs
    ]


def _jsonable(context: Mapping[str, Any]) -> Any:
    # Timestamps and other values without a JSON form reach the provider as their text.
    return json.loads(json.dumps(dict(context), default=str))


def _read_results(answer: Any, inputs: Sequence[ExtractionInput], *, who: str, min_confidence: float,
                 max_entities: int = MAX_ENTITIES, max_relations: int = MAX_RELATIONS) -> list[Extraction]:
    """Check a provider's {"results": [...]} answer against the inputs and normalize each result."""
    if not isinstance(answer, Mapping) or not isinstance(answer.get("results"), list):
        raise ProviderError(f'{who} answered without a "results" list: {tail(json.dumps(answer, default=str))}')
    results: list[Any] = answer["results"]
    if len(results) != len(inputs):
        raise ProviderError(f"{who} answered {len(results)} results for {len(inputs)} texts")
    extractions = []
    for position, (result, item) in enumerate(zip(results, inputs)):
        # An echoed id is optional, but a wrong one means the answers are misaligned with the drawers.
        if isinstance(result, Mapping) and result.get("id") is not None and result.get("id") != item.id:
            raise ProviderError(
                f"{who} answered result {position} for id {result.get('id')!r}, but text {position} is {item.id!r}"
            )
        try:
            extractions.append(normalize_extraction(result, min_confidence=min_confidence,
                                                    max_entities=max_entities, max_relations=max_relations))
        except ProviderError as exc:
            raise ProviderError(f"{who} answered badly for text {position} ({item.id}): {exc.message}") from None
    return extractions


class CommandProvider:
    """Runs argv (no shell), writes {"model", "texts", "entity_kinds", "predicates"} JSON to stdin, reads
    {"results"} from stdout."""

    name = "command"
    is_enabled = True

    def __init__(self, argv: list[str], model: str, timeout: float = DEFAULT_TIMEOUT, *,
                 min_confidence: float = DEFAULT_MIN_CONFIDENCE, max_entities: int = MAX_ENTITIES,
                 max_relations: int = MAX_RELATIONS) -> None:
        if not argv or not all(isinstance(part, str) and part for part in argv):
            raise ConfigError("must be a non-empty list of non-empty strings", key="extraction.command")
        self._argv = list(argv)
        self.model = model
        self._timeout = timeout
        self._min_confidence = min_confidence
        self._max_entities = max_entities
        self._max_relations = max_relations

    def extract(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        """Run the command once for the whole batch."""
        if not inputs:
            return []
        who = f"extraction command {self._argv[0]!r}"
        request = {
            "model": self.model,
            "texts": _request_texts(inputs),
            "entity_kinds": list(ENTITY_KINDS),
            "predicates": list(PREDICATES),
        }
        answer = ask_command(self._argv, request, timeout=self._timeout, who=who)
        return _read_results(answer, inputs, who=who, min_confidence=self._min_confidence,
                            max_entities=self._max_entities, max_relations=self._max_relations)


SYSTEM_PROMPT = f"""\
You extract a small knowledge graph from texts kept by a memory server.
Answer with one JSON object and nothing else, of exactly this shape:
{{"results": [{{"id": "<the text's id>", "entities": [{{"name": "...", "kind": "..."}}], "relations": \
[{{"subject": "...", "predicate": "...", "object": "...", "confidence": 0.0}}]}}]}}
Give exactly one result per text, in the order the texts are given, echoing each text's id; a text with nothing \
to extract gets empty lists.
Entity kinds: {", ".join(ENTITY_KINDS)}.
Predicates: {", ".join(PREDICATES)}. Use related_to when no other predicate fits.
Spell names as the text does. The subject and object of a relation are names of entities in the same result.
Confidence is a number from 0 to 1: how clearly the text itself states the relation.
Each text comes with its provenance (connector, document, uri, occurred_at) and the user's source preference for \
it (level low, normal or high, and the connector and criterion that decided it). This context is information, \
not a verdict: use it to read the text (who "I" or "we" is, when "yesterday" was), but do not raise or lower a \
confidence because of the preference level, and do not state facts that only the context says. A trusted source \
does not make a claim true; a distrusted one does not make it false.
"""


class HttpProvider:
    """An OpenAI-compatible chat completions endpoint (OpenAI, Ollama, llama.cpp, vLLM …) answering JSON."""

    name = "http"
    is_enabled = True

    def __init__(self, url: str, model: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT, *,
                 min_confidence: float = DEFAULT_MIN_CONFIDENCE, max_entities: int = MAX_ENTITIES,
                 max_relations: int = MAX_RELATIONS) -> None:
        base = url.strip().rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise ConfigError(f"must be an http:// or https:// URL, got {url!r}", key="extraction.url")
        self.endpoint = base if base.endswith("/chat/completions") else base + "/chat/completions"
        self.model = model
        self._api_key = api_key or None
        self._timeout = timeout
        self._min_confidence = min_confidence
        self._max_entities = max_entities
        self._max_relations = max_relations

    def _request_body(self, inputs: Sequence[ExtractionInput]) -> dict[str, Any]:
        """The one chat completion request that asks for the whole batch."""
        texts = _request_texts(inputs)
        user = (
            f"Extract entities and relations from each of these {len(texts)} texts and answer "
            f'{{"results": [...]}} with exactly {len(texts)} results in this order.\n'
            + json.dumps({"texts": texts}, ensure_ascii=False)
        )
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}],
            "response_format": {"type": "json_object"},
        }

    def extract(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        """One request for the whole batch; the reply's message content is the {"results"} JSON."""
        if not inputs:
            return []
        who = f"extraction endpoint {self.endpoint}"
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            response = httpx.post(self.endpoint, json=self._request_body(inputs), headers=headers,
                                  timeout=self._timeout)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise ProviderError(f"{who} failed: {type(exc).__name__}: {exc}") from exc
        if not response.is_success:
            raise ProviderError(f"{who} answered HTTP {response.status_code}: {tail(response.text)}")
        try:
            completion = response.json()
        except ValueError:
            raise ProviderError(f"{who} did not answer JSON: {tail(response.text)}") from None
        choice = _first_choice(completion)
        message = choice.get("message") if isinstance(choice, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, str):
            raise ProviderError(f"{who} answered without choices[0].message.content: {tail(response.text)}")
        try:
            answer = json.loads(_unfence(content))
        except ValueError:
            cut = " (the reply was cut off at the token limit)" if choice.get("finish_reason") == "length" else ""
            raise ProviderError(f"{who} answered content that is not JSON{cut}: {tail(content)}") from None
        return _read_results(answer, inputs, who=who, min_confidence=self._min_confidence,
                            max_entities=self._max_entities, max_relations=self._max_relations)


def _first_choice(completion: Any) -> Any:
    choices = completion.get("choices") if isinstance(completion, Mapping) else None
    return choices[0] if isinstance(choices, list) and choices else None


def _unfence(content: str) -> str:
    """The JSON inside a ```json fence, which some local models add even in JSON mode."""
    text = content.strip()
    if text.startswith("```") and text.endswith("```") and "\n" in text:
        return text[text.index("\n") + 1: -3]
    return text


# ------------------------------------------------------------------------------------------------------ none


class NoneProvider:
    """Extraction switched off: no facts are read from drawers."""

    name = "none"
    model = ""
    is_enabled = False

    def extract(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        """Always refuses: there is nothing to extract with."""
        raise ProviderError("extraction is disabled", help="set extraction.provider to heuristic, command or http")


# ----------------------------------------------------------------------------------------------- composition


def build_extraction_provider(config: Mapping[str, Any]) -> ExtractionProvider:
    """The provider the `extraction.*` settings ask for (keys without the `extraction.` prefix)."""
    kind = config.get("provider") or "heuristic"
    model = config.get("model") or ""
    if not isinstance(model, str):
        raise ConfigError(f"must be a string, got {model!r}", key="extraction.model")
    floor = _min_confidence(config.get("min_confidence"))
    if kind == "heuristic":
        if model:
            raise ConfigError(
                f"the heuristic provider runs no model, not {model!r}; use the command or http provider for a model",
                key="extraction.model",
            )
        return HeuristicProvider(min_confidence=floor)
    if kind == "none":
        return NoneProvider()
    if kind in ("command", "http") and not model:
        # The model names the extractor that read a drawer; without it a change of model could not be noticed.
        raise ConfigError(f"the {kind} provider needs a model name", key="extraction.model")
    timeout = _timeout(config.get("timeout"))
    if kind == "command":
        command = config.get("command")
        if not isinstance(command, (list, tuple)):
            raise ConfigError(f"must be a list of strings (argv, no shell), got {command!r}",
                              key="extraction.command")
        return CommandProvider(list(command), model, timeout, min_confidence=floor)
    if kind == "http":
        url = config.get("url") or ""
        if not isinstance(url, str) or not url:
            raise ConfigError("the http provider needs the endpoint's base URL", key="extraction.url")
        api_key = config.get("api_key") or None
        if api_key is not None and not isinstance(api_key, str):
            raise ConfigError("must be a string", key="extraction.api_key")
        return HttpProvider(url, model, api_key, timeout, min_confidence=floor)
    raise ConfigError(
        f"unknown extraction provider {kind!r}; choose heuristic, command, http or none", key="extraction.provider"
    )


def _timeout(value: object) -> float:
    if value is None:
        return DEFAULT_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ConfigError(f"must be a positive number of seconds, got {value!r}", key="extraction.timeout")
    return float(value)


def _min_confidence(value: object) -> float:
    if value is None:
        return DEFAULT_MIN_CONFIDENCE
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(f"must be a number from 0 to 1, got {value!r}", key="extraction.min_confidence")
    return float(value)
