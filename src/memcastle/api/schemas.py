"""Request bodies accepted over HTTP (pydantic at the edge; unknown fields are refused).

The constraints here are the ones the services enforce (`memcastle.services.validation`), written as schema so the
OpenAPI document says what a request may hold: a request the schema allows is one the daemon accepts, apart from
what depends on the palace's state (a drawer that does not exist is a 404, a locator outside `mining.roots` a 403).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from memcastle.errors import InvalidRequest
from memcastle.model.vocabulary import EntityKind, ExplicitLink, Predicate
from memcastle.modes import Mode
from memcastle.services.validation import (
    MAX_CHECKPOINT_ITEMS,
    MAX_CONTENT_CHARS,
    MAX_LOCATOR_CHARS,
    MAX_QUERY_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    check_text,
)

_TEXT = r"^[^\x00]*\S[^\x00]*$"  # something besides white space, and no NUL


def _integral(value: Any) -> Any:
    # JSON Schema counts 5.0 as an integer; strict mode would refuse it. `true` stays a boolean and is refused.
    return int(value) if isinstance(value, float) and value.is_integer() else value


Name = Annotated[str, Field(min_length=1, max_length=200, pattern=_TEXT)]
Content = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS, pattern=r"\S")]
Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS, pattern=r"\S")]
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS, description=f"at most {MAX_TAGS} tags")]
Instant = Annotated[
    str,
    Field(min_length=1, description="an RFC 3339 instant (or a date)", json_schema_extra={"format": "date-time"}),
]
Reason = Annotated[str, Field(min_length=1, max_length=2000, pattern=r"\S")]
Confidence = Annotated[float, Field(ge=0.0, le=1.0), BeforeValidator(lambda v: float(v) if type(v) is int else v)]
IdempotencyKeyField = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^[\x21-\x7e]+$",
        description="the same key on a retry answers with the first write (also the Idempotency-Key header)",
    ),
]


def Integer(minimum: int, maximum: int) -> Any:
    return Annotated[int, Field(ge=minimum, le=maximum), BeforeValidator(_integral)]


class Body(BaseModel):
    # Strict: JSON true is not a limit of 1 and "yes" is not a boolean; a wrong type is a 400 naming the field.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _valid_text(cls, data: Any) -> Any:
        # JSON may carry a lone surrogate ("\ud800"); no store can hold one. InvalidRequest is not a ValueError, so
        # it leaves pydantic as itself and becomes the usual 400 naming the field.
        check_text(data, "")
        return data


Expiry = Annotated[
    str,
    Field(max_length=64, description="when the drawer expires: an RFC 3339 instant, or a duration from now (7d, 12h)"),
]


class NoteBody(Body):
    content: Content
    wing: Name | None = None
    room: Name | None = None
    tags: Tags = Field(default_factory=list)
    agent: Name | None = None
    name: Name | None = None
    expires_at: Expiry | None = None
    idempotency_key: IdempotencyKeyField = None


class MarksBody(Body):
    """What to change: either mark or both (a mark left out stays as it is)."""

    pinned: bool | None = Field(None, description="always enter its wing's wake-up and recall")
    hidden: bool | None = Field(None, description="left out of search, recall and wake-up unless asked for")


class SupersedeBody(Body):
    content: Content
    reason: Reason | None = None
    agent: Name | None = None  # who corrects it (default: the token's name)


class SearchScopeBody(Body):
    """Where and when to search, shared by a search and a forget by search: the options `SearchRequest` declares
    with `scope` (generated with cog from the declarations, `cog -r src/memcastle/api/schemas.py`)."""

    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S")]

    @model_validator(mode="before")
    @classmethod
    def _original_shape(cls, data: Any) -> Any:
        """The original MemCastle's search body, `{text, filter: {wing, room, tags, source_kind, temporal}}`, read
        as this one (docs/http-api.md, "Compatibility with MemCastle (Rust)")."""
        return original_search(data) if isinstance(data, dict) else data

    # [[[cog
    # import cog
    # from memcastle.api.declared import option_fields
    # cog.out(option_fields(scope=True))
    # ]]]
    # fmt: off
    wing: Name | None = Field(
        default=None, description="only this wing")
    room: Name | None = Field(
        default=None, description="only this room")
    tags: Tags = Field(
        default_factory=list, description="required tags, all of them")
    source_kind: Literal["file", "note", "transcript", "commit", "manual", "other"] | None = Field(
        default=None, description="only drawers of this source kind")
    connector: Name | None = Field(
        default=None, description="only drawers mined by this connector")
    as_of: Instant | None = Field(
        default=None, description="what was current at this instant")
    from_: Instant | None = Field(
        default=None, alias="from", description="window start (with until)")
    until: Instant | None = Field(
        default=None, description="window end (with from)")
    include_historical: bool = Field(
        default=False, description="include closed (superseded) versions")
    known_at: Instant | None = Field(
        default=None, description="what the palace knew at this instant (record time)")
    known_from: Instant | None = Field(
        default=None, description="what the palace knew at some point of a window (with known_until)")
    known_until: Instant | None = Field(
        default=None, description="record-time window end (with known_from)")
    # fmt: on
    # [[[end]]]


MAX_DIMENSION = 4096  # the longest vector accepted from a caller


class SearchBody(SearchScopeBody):
    """A search: where and when, then how to rank (the other declared options), then how to answer."""

    # [[[cog cog.out(option_fields(scope=False)) ]]]
    # fmt: off
    limit: Integer(1, 200) = Field(  # type: ignore[valid-type]
        default=10, description="how many hits (1-200)")
    ranking: Literal["auto", "lexical", "semantic", "hybrid"] = Field(
        default="auto", description="how hits are ranked: by words, by meaning or both")
    expand: bool = Field(
        default=False, description="add drawers related through the knowledge graph")
    preferences: Literal["on", "off"] = Field(
        default="on", description="source preferences: off shows the ranking without them")
    rerank: Literal["off", "on", "auto"] | None = Field(
        default=None, description="the second stage over the fused pool; default the palace's search.rerank")
    include_hidden: bool = Field(
        default=False, description="the drawers a person hid too")
    # fmt: on
    # [[[end]]]
    full: bool = Field(
        True,
        description="false: the compact hits MCP answers with (snippet, origin, signals, a "
        "preference line; no drawer text, no hashes)",
    )  # fmt: skip
    max_chars: Integer(200, 10_000_000) | None = Field(  # type: ignore[valid-type]
        None, description="the answer never exceeds this many characters: whole hits, `omitted` and `note` say the rest"
    )
    query_embedding: Annotated[list[float], Field(min_length=1, max_length=MAX_DIMENSION)] | None = Field(
        None,
        description="your own vector for the query, of the palace's dimension (GET /api/status embeddings.dimension): "
        "the semantic leg uses it instead of embedding the text; the text still drives the lexical leg and snippets",
    )


class ForgetSearchBody(SearchScopeBody):
    """The drawers matching every word of `query` inside these filters; every version unless a time is given."""


def original_search(data: dict[str, Any]) -> dict[str, Any]:
    """`text` as `query`; `filter`'s fields beside the others, its `temporal` (`current`, `all`, `{as_of}`,
    `{between: {from, until}}`) as the time fields; a field given twice, or an unknown temporal, is refused by name."""
    if "text" not in data and "filter" not in data:
        return data
    out = dict(data)
    if "text" in out:
        if "query" in out:
            raise InvalidRequest("give the query once: query or text", field="text")
        out["query"] = out.pop("text")
    nested = out.pop("filter", None)
    if nested is None:
        return out
    if not isinstance(nested, dict):
        raise InvalidRequest("filter must be an object: wing, room, tags, source_kind, temporal", field="filter")
    nested = dict(nested)
    temporal = nested.pop("temporal", "current")
    if temporal == "all":
        nested["include_historical"] = True
    elif isinstance(temporal, dict) and set(temporal) == {"as_of"}:
        nested["as_of"] = temporal["as_of"]
    elif isinstance(temporal, dict) and set(temporal) == {"between"} and isinstance(temporal["between"], dict):
        nested.update({"from": temporal["between"].get("from"), "until": temporal["between"].get("until")})
    elif temporal != "current":
        raise InvalidRequest(
            'filter.temporal must be "current", "all", {"as_of": …} or {"between": {"from": …, "until": …}}',
            field="filter.temporal",
        )
    for key, value in nested.items():
        if key in out:
            raise InvalidRequest(f"{key} is given both inside filter and beside it: give it once", field=key)
        out[key] = value
    return out


Identifier = Annotated[str, Field(min_length=1, max_length=2000, pattern=_TEXT)]


class ForgetBody(Body):
    """Exactly one scope. `dry_run` defaults to true for source, room, wing and search, false otherwise."""

    scope: Literal["drawer", "document", "source", "room", "wing", "search"]
    drawer_id: Identifier | None = None
    source_id: Identifier | None = None
    document: Identifier | None = None
    wing: Name | None = None
    room: Name | None = None
    search: ForgetSearchBody | None = None
    dry_run: bool | None = None


ArchivePath = Annotated[
    str, Field(min_length=1, max_length=MAX_LOCATOR_CHARS, pattern=r"^[^\x00]*$", description="an absolute file path")
]


class ExportBody(Body):
    path: ArchivePath
    vectors: bool = Field(False, description="include the passage vectors (else the target embeds again)")


class ImportBody(Body):
    path: ArchivePath


class RenameBody(Body):
    name: Name


class EmbeddingBody(Body):
    # `embedding`: the original MemCastle's name for it.
    vector: Annotated[list[float], Field(min_length=1, max_length=MAX_DIMENSION)] = Field(
        validation_alias=AliasChoices("vector", "embedding")
    )


class PlaceBody(Body):
    name: Name


class InvalidateBody(Body):
    reason: Reason


class VerifyBody(Body):
    batch: Integer(1, 10_000) = 200  # type: ignore[valid-type]
    pace_ms: Integer(0, 60_000) = 0  # type: ignore[valid-type]
    priority: Literal["background", "low", "normal", "high", "critical"] = "low"


class AuditBody(Body):
    priority: Literal["background", "low", "normal", "high", "critical"] = "normal"


class RepairBody(Body):
    checks: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(default_factory=list, max_length=50)
    batch: Integer(1, 10_000) = 500  # type: ignore[valid-type]
    priority: Literal["background", "low", "normal", "high", "critical"] = "normal"


class MineBody(Body):
    connector: Annotated[str, Field(min_length=1, max_length=200)]
    locator: Annotated[str, Field(max_length=MAX_LOCATOR_CHARS, pattern=r"^[^\x00]*$")] = ""
    options: dict[str, str] = Field(default_factory=dict)
    wing: Name | None = None
    full: bool = False
    notice_removed: bool | None = Field(
        None,
        description="close the drawers of documents gone from the source (default: yes for directory and notes)",
    )


class MinerBody(Body):
    name: Name
    connector: Annotated[str, Field(min_length=1, max_length=200)]
    locator: Annotated[str, Field(max_length=MAX_LOCATOR_CHARS, pattern=r"^[^\x00]*$")] = ""
    options: dict[str, str] = Field(default_factory=dict)
    wing: Name | None = None
    full: bool = False
    watch: bool = Field(False, description="mine again when the source's files change")
    debounce: Annotated[str, Field(max_length=20)] | float = Field(
        "1.6s", description="quiet time before a watched source is mined: seconds or a duration such as 2s"
    )
    every: Annotated[str, Field(max_length=20)] | float | None = Field(
        None, description="mine on a schedule: a duration such as 5m, 2h or 1d (at least 10 s)"
    )
    poll: Annotated[str, Field(max_length=20)] | float | None = Field(
        None, description="check the source for a change so often (at least 30 s), and mine when it changed"
    )
    webhook: Literal["hmac", "token"] | None = Field(
        None, description="POST /hooks/{name} asks for a run, verified by an HMAC-SHA256 signature or a token"
    )
    secret_env: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="the daemon's environment variable holding the webhook's secret (never the secret itself)"
    )


class DiaryBody(Body):
    agent: Name = Field(validation_alias=AliasChoices("agent", "agent_identity"))  # the original's name for it
    content: Content
    wing: Name | None = None


class FactBody(Body):
    subject: Name
    predicate: Predicate
    object: Name
    confidence: Confidence = 1.0
    valid_from: Instant | None = None
    subject_kind: EntityKind | None = None
    object_kind: EntityKind | None = None
    evidence_drawer: Name | None = None


class CheckpointItemBody(Body):
    content: Content
    wing: Name | None = None
    room: Name | None = None
    name: Name | None = None
    tags: Tags = Field(default_factory=list)
    expires_at: Expiry | None = None
    fact: FactBody | None = None


class CheckpointBody(Body):
    items: Annotated[list[CheckpointItemBody], Field(min_length=1, max_length=MAX_CHECKPOINT_ITEMS)]
    agent: Name | None = None
    idempotency_key: IdempotencyKeyField = None
    emergency: bool = Field(
        False,
        description="the session is about to end: checked, then queued as a durable job and answered at once (202) "
        "— the write happens even if the client is gone",
    )


class SupersedeFactBody(Body):
    subject: Name | None = None
    predicate: Predicate | None = None
    object: Name | None = None
    confidence: Confidence | None = None
    subject_kind: EntityKind | None = None
    object_kind: EntityKind | None = None
    evidence_drawer: Name | None = None
    reason: Reason | None = None


class InvalidateFactBody(Body):
    reason: Reason


class AliasBody(Body):
    alias: Name


class MentionBody(Body):
    entity: Name = Field(validation_alias=AliasChoices("entity", "name"))  # `name`: the original MemCastle's
    kind: EntityKind = "other"


class LinkFactBody(Body):
    to: Name
    kind: ExplicitLink
    reason: Reason


class TokenBody(Body):
    name: Annotated[str, Field(min_length=1, max_length=100, pattern=_TEXT)] = Field(
        description="what the token is for (a client, a machine)"
    )
    mode: Mode = Field("full", description="the most a client holding the token may do (a ceiling on its mode)")
    read: list[Name] | None = Field(None, description="the only wings it may read (every wing when left out)")
    write: list[Name] | None = Field(None, description="the only wings it may write to (every wing when left out)")
    tools: list[Name] | None = Field(None, description="the only MCP tools it may list and call (all when left out)")
    routes: list[Name] | None = Field(
        None,
        description="the only REST route groups (OpenAPI tags; `web` for the pages) it may use (all when left out)",
    )


class EmptyBody(Body):
    """A state change that needs no fields still sends a JSON object (`{}`): see the browser-origin defence."""
