"""The built-in extractor (offline, deterministic): capitalised name runs, @handles, `code` as tools, a phrase table."""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memcastle.knowledge.extraction.contract import (
    DEFAULT_MIN_CONFIDENCE,
    HEURISTIC_CONFIDENCE,
    MAX_ENTITIES,
    MAX_RELATIONS,
    Extraction,
    ExtractionInput,
)
from memcastle.knowledge.extraction.normalize import _key, normalize_extraction

_FENCED_CODE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_SENTENCE_BREAK = re.compile(
    r"(?<=[.!?])[\"'’”)\]]*\s+(?=[^\sa-z])"  # terminal punctuation, then space and no lower-case continuation
    r"|\n[ \t]*\n\s*"  # a blank line
    r"|\n(?=[ \t]*(?:[-*+>#|]|\d+[.)])\s)"  # a new list item, heading, quote or table row
)
# A line break after a long line inside a sentence is the text's wrapping, not the end of a name.
_SOFT_WRAP = re.compile(r"(?<=[^\n]{50})[ \t]*\n[ \t]*(?=\S)(?![-*+>#|]\s|\d+[.)]\s)")
_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\s]*\)")  # a Markdown link: its words
_MARKUP_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")  # an HTML tag
_SPACES = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A code span names a tool when it is a name or a short command (`git rebase`), not a whole expression, a flag
# (`--verbose`, `--bar --foo`), punctuation (`--`) or a sentence fragment (`echo uses Windows`).
_TOOL_NAME = re.compile(r"[\w@/.:+#][\w@/.:+#-]*|[a-z][\w./+-]*(?: [a-z][\w./+-]*){1,2}")
_HAS_LETTER = re.compile(r"[^\W\d_]")
# Not inside an e-mail address, and not a decorator such as @dataclass(frozen=True).
_HANDLE = re.compile(r"(?<![\w@.])@[A-Za-z0-9_](?:[\w.-]*\w)?(?![\w(])")
_WORD = re.compile(r"[^\W_](?:[\w’'-]|\.(?=\w))*")
_MASK = "\x00"  # stands in for a code span or handle, so no name run can continue across one
_POSSESSIVE = re.compile(r"['’]s$|['’]$")

# Capitalised words that are not names: dropped from the start of a sentence, and a run made only of them is no
# name anywhere.
_NON_NAMES = frozenset(
    """
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
    almost whether otherwise further among despite unlike including instead alternatively additionally similarly
    likewise generally typically usually example examples
""".split()
)
# Particles that join capitalised words into one name: "Bank of America", "Ludwig van Beethoven".
_PARTICLES = frozenset({"of", "de", "del", "der", "den", "van", "von", "da", "di", "du", "la", "le", "&"})
# "I" and its contractions end a name run: "Ana I think" is Ana.
_FIRST_PERSON = frozenset({"i", "i'm", "i’m", "i've", "i’ve", "i'll", "i’ll", "i'd", "i’d"})
_ORGANIZATION_SUFFIXES = frozenset({"inc", "corp", "ltd", "gmbh", "llc", "labs", "corporation", "limited", "plc"})


@dataclass(frozen=True)
class _Phrase:
    predicate: str
    subject_kind: str | None
    object_kind: str | None


# The fixed phrase table (SPEC §4), with the plural and progressive forms of the same present-tense claims.
_PHRASES: Mapping[str, _Phrase] = {
    **dict.fromkeys(
        ("works on", "work on", "is working on", "are working on"), _Phrase("works_on", "person", "project")
    ),
    **dict.fromkeys(("uses", "is using", "are using"), _Phrase("uses", None, "tool")),
    **dict.fromkeys(("lives in", "live in"), _Phrase("located_in", "person", "place")),
    **dict.fromkeys(
        ("is based in", "are based in", "is located in", "are located in"), _Phrase("located_in", None, "place")
    ),
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

    def __init__(
        self,
        *,
        min_confidence: float = DEFAULT_MIN_CONFIDENCE,
        max_entities: int = MAX_ENTITIES,
        max_relations: int = MAX_RELATIONS,
    ) -> None:
        self._min_confidence = min_confidence
        self._max_entities = max_entities
        self._max_relations = max_relations

    def extract(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        """Read each text on its own; provenance and preference do not change what the phrase table finds."""
        return [
            normalize_extraction(
                _read_heuristically(item.text),
                min_confidence=self._min_confidence,
                max_entities=self._max_entities,
                max_relations=self._max_relations,
            )
            for item in inputs
        ]


def _read_heuristically(text: str) -> dict[str, Any]:
    """The heuristic's raw answer for one text, in the providers' wire shape (not yet normalized)."""
    spellings: dict[str, str] = {}  # key -> first spelling, in order of first mention
    fixed: dict[str, str] = {}
    roles: dict[str, set[str]] = {}
    relations: list[dict[str, Any]] = []
    for sentence in _sentences(_readable(text)):
        masked, mentions = _mentions(sentence)
        for mention in mentions:
            key = _key(mention.name)
            spellings.setdefault(key, mention.name)
            if mention.kind is not None:
                fixed.setdefault(key, mention.kind)
        starts = [m.start for m in mentions]
        ends = [m.end for m in mentions]  # mentions never overlap, so their ends are in order too
        for match in _PHRASE.finditer(masked):
            if _NEGATED.search(masked[max(0, match.start() - _NEGATION_REACH) : match.start()]):
                continue
            phrase = _PHRASES[" ".join(match.group().lower().split())]
            if phrase.predicate == "member_of" and re.match(r"\s+by\b", masked[match.end() :]):
                continue  # "was joined by" names the joiner after the phrase
            before = bisect.bisect_right(ends, match.start())
            after = bisect.bisect_left(starts, match.end())
            if before == 0 or after == len(mentions):
                continue
            subject = _clause_subject(mentions[before - 1], masked, match.start(), phrase, text)
            obj = _clause_object(mentions[after], masked, match.end(), phrase.predicate)
            if subject is None or obj is None:
                continue  # not a shape this reader parses: no fact rather than a guess
            if subject.name != mentions[before - 1].name:
                spellings.setdefault(_key(subject.name), subject.name)
            for mention, kind in ((subject, phrase.subject_kind), (obj, phrase.object_kind)):
                if kind is not None:
                    roles.setdefault(_key(mention.name), set()).add(kind)
            relations.append(
                {
                    "subject": subject.name,
                    "predicate": phrase.predicate,
                    "object": obj.name,
                    "confidence": HEURISTIC_CONFIDENCE,
                }
            )
    entities = [{"name": name, "kind": _heuristic_kind(key, name, fixed, roles)} for key, name in spellings.items()]
    return {"entities": entities, "relations": relations}


# Words that end a name's noun tail: "Harbor from the team uses …" is Harbor, "the Harbor build server is located
# in …" is the Harbor build server.
_FUNCTION_WORDS = frozenset(
    """
    a an the this that these those of in on at to for from with by via and or but nor not no never also now still
    just only then often always usually sometimes mostly mainly currently already again soon even too very
    is are was were be been being has have had will would can could should may might must do does did
    who whom which whose what it its he she they we you i me us him her them my our your his their there here
    everybody everyone anybody anyone nobody someone somebody something anything nothing everything
""".split()
)


# What may stand between a subject and its phrase ("Ana also works on"), and before an object ("uses the Kafka").
_ADVERBS = frozenset(
    "also now still currently already mainly mostly primarily actually actively only often usually always then too"
    " has have".split()
)
_DETERMINERS = frozenset("the a an its their his her our my your this that these those".split())
# What may open a clause before its subject ("Last year Dmitri joined …", "… and Ben owns …"); a preposition, a verb
# or another name there means the name is not the clause's subject ("V8 in Node.js depends on …").
_OPENERS = (
    _DETERMINERS
    | _ADVERBS
    | frozenset(
        """
    and but or so yet while whereas because since although though when once after before if unless until as
    that which who where meanwhile moreover besides however therefore thus hence also today yesterday tomorrow
    tonight recently lately finally later earlier last next this year years month months week weeks day days ago
    spring summer autumn fall winter morning afternoon evening night
""".split()
    )
)
_BOUNDARY = re.compile(r"[,;:(\[—–]|\s-\s")
_PLAIN_GAP = re.compile(r" (?:[a-z][a-z-]* )*")


def _clause_subject(mention: _Mention, masked: str, phrase_start: int, phrase: _Phrase, text: str) -> _Mention | None:
    """The phrase's subject when the words before it parse as one: a name (with a noun tail for phrases whose
    subject may be a thing), at most an adverb before the phrase, and only an opener between the start of its
    clause and the name. None otherwise."""
    gap = masked[mention.end : phrase_start]
    if not _PLAIN_GAP.fullmatch(gap):
        return None  # punctuation, a line break or a masked span between them: another clause
    words = gap.split()
    if words and words[-1] in _ADVERBS:
        words = words[:-1]
    subject: _Mention | None = mention
    if words and phrase.subject_kind == "person":
        if not _is_postmodifier(words):
            return None
    elif words:
        subject = _with_noun_tail(mention, words)
    start = mention.start
    opener = masked[:start].rstrip()
    cut = max((m.end() for m in _BOUNDARY.finditer(opener)), default=0)
    before = [w.casefold() for w in _WORD.findall(opener[cut:])]
    if _MASK in opener[cut:] or any(w not in _OPENERS for w in before):
        return None
    if not before and cut == 0 and mention.kind is None:
        return subject if _reads_as_name(mention.name.split()[0], text) else None
    return subject


_POSTMODIFIER_PREPOSITIONS = frozenset("from at of in on with".split())


def _is_postmodifier(words: list[str]) -> bool:
    """Whether lower-case words after a person's name qualify the name ("Ana from the team works on …")."""
    rest = words[1:]
    if rest and rest[0] in _DETERMINERS:
        rest = rest[1:]
    return words[0] in _POSTMODIFIER_PREPOSITIONS and 1 <= len(rest) <= 2 and not _FUNCTION_WORDS.intersection(rest)


def _with_noun_tail(subject: _Mention, words: list[str]) -> _Mention | None:
    """The subject with the lower-case nouns between it and the phrase ("Harbor" + "build server"), up to three
    plain words; None when they are anything else (a function word, an adverb)."""
    if len(words) > 3 or any(w in _FUNCTION_WORDS or w.endswith("ly") for w in words):
        return None
    name = f"{subject.name} {' '.join(words)}"
    return _Mention(subject.start, subject.end + 1 + len(" ".join(words)), name, subject.kind)


# Relations whose object is the thing named, not a project the name stands for ("works on the Atlas rewrite" is about
# Atlas; "uses JSON string literals" is not about JSON), and the nouns after a name that still leave it the object.
_THING_OBJECTS = frozenset({"uses", "depends_on", "located_in", "owns"})
# Words after an object that start something else (a clause, a phrase), not a noun the object qualifies.
_NOT_NOUNS = (
    _FUNCTION_WORDS
    | _OPENERS
    | frozenset(
        "for into over under per across through without within during except like instead unlike than whether whenever"
        " wherever".split()
    )
)
_GENERIC_HEADS = frozenset(
    "library libraries package packages module modules tool toolkit framework engine server servers service services"
    " project database cluster protocol platform plugin extension compiler runtime".split()
)


def _clause_object(mention: _Mention, masked: str, phrase_end: int, predicate: str) -> _Mention | None:
    """The phrase's object when it follows the phrase at once (after a determiner at most) and is not a modifier of
    a later noun (`GNOME's prompter`, the `length` bits); None otherwise."""
    words = masked[phrase_end : mention.start].split()
    if not masked[phrase_end : mention.start].startswith(" ") or len(words) > 1:
        return None
    if words and words[0].casefold() not in _DETERMINERS:
        return None
    rest = masked[mention.end :]
    if rest[:1] not in ("", " ", "\t", "\n", *".,;:!?)"):
        return None  # a possessive or a longer token: `GNOME's prompter`, GDB/MI
    if re.match(r"\s+[\"'“‘]", rest):
        return None  # a quoted name after it: the Xcode "new build system"
    following = re.match(r"\s+([a-z][a-z-]*)", rest)
    if following and following.group(1) not in _NOT_NOUNS and not following.group(1).endswith("ly"):
        if mention.kind == "tool" or (words and words[0].casefold() in ("a", "an")):
            return None  # a name before a noun qualifies it: the `length` bits, a KeyObject class
        if predicate in _THING_OBJECTS and following.group(1) not in _GENERIC_HEADS:
            return None  # "uses JSON string literals" is not about JSON
    return mention


# A word at the start of a sentence is capitalised whatever it is; it counts as a name when it looks like one
# (`OpenSSL`, `IPv4`, `Node.js`), the text capitalises it elsewhere too, or never writes it in lower case.
_NAME_FORM = re.compile(r"(?<=.)[A-Z0-9]|\.\w")
_ADVERB_FORM = re.compile(r".+(?:ly|ing)")


def _reads_as_name(word: str, text: str) -> bool:
    if _NAME_FORM.search(word):
        return True
    if re.search(rf"[^.!?\s]\s+{re.escape(word)}\b", text):
        return True
    if _ADVERB_FORM.fullmatch(word):
        return False
    return not re.search(rf"\b{re.escape(word.lower())}\b", text)


def _heuristic_kind(key: str, name: str, fixed: Mapping[str, str], roles: Mapping[str, set[str]]) -> str:
    if key in fixed:
        return fixed[key]
    if name.split()[-1].rstrip(".").casefold() in _ORGANIZATION_SUFFIXES:
        return "organization"
    found = roles.get(key, set())
    return next((kind for kind in _ROLE_ORDER if kind in found), "other")


def _readable(text: str) -> str:
    """The text as prose: code blocks out, markup links and tags reduced to their words, wrapped lines joined."""
    text = _MARKUP_TAG.sub(" ", _LINK.sub(r"\1", _FENCED_CODE.sub("\n\n", text)))
    return _SPACES.sub(" ", _SOFT_WRAP.sub(" ", text))


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
        if _TOOL_NAME.fullmatch(inner) and _HAS_LETTER.search(inner) and len(inner) <= 60:
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

    # Where a word is capitalised whatever it is: the sentence's first word and the first after a colon.
    clause_starts = {m.end() for m in re.finditer(r"(?:^|:\s+)[^\w\s]*(?=[^\W_])", masked)}
    mentions = []
    for run in runs:
        if run[0][0] in clause_starts:
            while run and run[0][2].casefold() in _NON_NAMES | _PARTICLES:
                run = run[1:]
        if not run or all(word.casefold() in _NON_NAMES for _, _, word in run):
            continue
        name = masked[run[0][0] : run[-1][1]]
        if len(name) < 2:
            continue
        mentions.append(_Mention(run[0][0], run[-1][1], " ".join(name.split()), None))
    return mentions


def _is_joining_gap(gap: str) -> bool:
    """Words join a name only across plain spaces: punctuation, a line break or a masked span ends the run."""
    return bool(gap) and not gap.strip(" \t") and "\n" not in gap
