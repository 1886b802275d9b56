"""The MemCastle exception tree, arranged by what the caller can do about it.

    MemCastleError                 anything MemCastle raises on purpose
    ├── InvalidRequest             fix the request: a field is missing, malformed or out of range (HTTP 400)
    │   └── UnknownOption          an option the connector does not declare (lists the accepted ones)
    ├── NotFound                   the thing named does not exist (HTTP 404)
    ├── Conflict                   the request clashes with current state (HTTP 409)
    │   ├── AmbiguousId            a shortened id starts several ids (lists them)
    │   ├── IllegalTransition      a job cannot move from its status to the one asked for
    │   └── LeaseLost              this worker no longer holds the job's lease (another took it over)
    ├── AccessDenied               the client's memory mode or token forbids this (HTTP 403 / 401)
    ├── ProviderError              an external provider (embeddings, extraction) failed (HTTP 502)
    ├── ConfigError                a configuration file or value is wrong (names file, line, key)
    ├── MigrationError             the palace schema could not be brought up to date; the daemon stops
    ├── StorageError               the palace's storage failed to read or write (HTTP 503); retry later
    │   ├── StorageFull            the disk holding the palace is full (HTTP 507); free some space
    │   └── PalaceDamaged          the palace file is damaged or missing; restore it (the daemon stops)
    ├── DaemonNotRunning           no live daemon serves this palace (CLI exit code 3)
    └── InternalError              a bug: something MemCastle did not raise on purpose (HTTP 500); the log has it

Each class carries its meaning: `code`, the HTTP `status` (REST and the web page answer it) and the CLI's
`exit_code`. Errors become responses at each edge, in one shape (`error_shape`): `api.errors` for HTTP, `mcp.server`
for tool results, `cli.command_line` for the terminal, which raises a daemon's error answer as its class again
(`from_answer`). `tests/mcp/test_one_meaning.py` drives one failure through all four.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class MemCastleError(Exception):
    """Base of every error MemCastle raises on purpose. Its meaning travels with its class: `code` (every interface
    names it), `status` (what HTTP answers: the REST API and the web page) and `exit_code` (what the CLI exits with);
    the CLI turns a daemon's answer back into the class by its code (`from_answer`)."""

    code = "error"
    help = ""
    status = 500
    exit_code = 1
    # Details an error carries when its class has them; every interface answers those that are set.
    field: str | None = None
    existing_id: str | None = None
    candidates: tuple[str, ...] = ()
    unauthenticated: bool = False

    def __init__(self, message: str, *, help: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if help is not None:
            self.help = help


class InvalidRequest(MemCastleError):
    """A request field is missing, malformed or out of range."""

    code = "invalid_request"
    status = 400

    def __init__(self, message: str, *, field: str | None = None, help: str | None = None) -> None:
        super().__init__(message, help=help)
        self.field = field


class UnknownOption(InvalidRequest):
    """An option the connector does not declare."""

    code = "unknown_option"
    option = ""
    accepted: tuple[str, ...] = ()

    @classmethod
    def of(cls, option: str, accepted: Sequence[str], *, connector: str) -> UnknownOption:
        listed = ", ".join(sorted(accepted)) or "(none)"
        error = cls(
            f"connector {connector!r} has no option {option!r}; accepted options: {listed}",
            field=f"options.{option}",
            help=f"accepted options for {connector}: {listed}",
        )
        error.option, error.accepted = option, tuple(sorted(accepted))
        return error


class NotFound(MemCastleError):
    """The thing named does not exist."""

    code = "not_found"
    status = 404
    # Said when the raiser has nothing more particular: an agent told only "no drawer x" does not know what to try.
    help = "ids are taken whole or by their first 8 characters; a search or a wing's listing shows what there is"


class Conflict(MemCastleError):
    """The request clashes with the current state of the palace."""

    code = "conflict"
    status = 409

    def __init__(self, message: str, *, existing_id: str | None = None, help: str | None = None) -> None:
        super().__init__(message, help=help)
        self.existing_id = existing_id


class AmbiguousId(Conflict):
    """A shortened id that starts more than one id of its kind."""

    code = "ambiguous_id"

    @classmethod
    def of(cls, kind: str, prefix: str, candidates: Sequence[str], *, field: str | None = None) -> AmbiguousId:
        error = cls(
            f"{prefix!r} starts more than one {kind} id: {', '.join(candidates)}",
            help="give more characters of the id (or the whole id)",
        )
        error.field, error.candidates = field, tuple(candidates)
        return error


class IllegalTransition(Conflict):
    """A job cannot move from its current status to the one asked for."""

    code = "illegal_transition"
    current = ""
    target = ""

    @classmethod
    def of(cls, job_id: str, current: str, target: str) -> IllegalTransition:
        error = cls(
            f"job {job_id} cannot go from {current} to {target}",
            existing_id=job_id,
            help="see the job transition table in docs/architecture.md",
        )
        error.current, error.target = current, target
        return error


class LeaseLost(Conflict):
    """The job is no longer leased to the worker that tried to change it."""

    code = "lease_lost"

    @classmethod
    def of(cls, job_id: str) -> LeaseLost:
        return cls(
            f"job {job_id} is no longer leased to this worker",
            existing_id=job_id,
            help="another worker took the job over once its lease ran out",
        )


class AccessDenied(MemCastleError):
    """The client's memory mode or credentials forbid this request."""

    code = "forbidden"
    status = 403

    def __init__(self, message: str, *, unauthenticated: bool = False, help: str | None = None) -> None:
        super().__init__(message, help=help)
        self.unauthenticated = unauthenticated
        if unauthenticated:
            self.code = "unauthorized"
            self.status = 401


class TooManyRequests(MemCastleError):
    """More requests than a bound allows in a while (a webhook flooded); `retry_after` seconds until one fits."""

    code = "too_many_requests"
    status = 429

    def __init__(self, message: str, *, retry_after: float = 1.0, help: str | None = None) -> None:
        super().__init__(message, help=help)
        self.retry_after = retry_after


class ProviderError(MemCastleError):
    """An external provider (embeddings, extraction) failed or answered badly."""

    code = "provider_error"
    status = 502


class ConfigError(MemCastleError):
    """A configuration file or value is wrong; says where."""

    code = "config_error"

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
        help: str | None = None,
    ) -> None:
        where = []
        if file:
            where.append(f"{file}:{line}" if line else file)
        if key:
            where.append(f"key {key!r}")
        prefix = f"{' '.join(where)}: " if where else ""
        super().__init__(prefix + message, help=help)
        self.reason = message  # the message without where it happened
        self.file = file
        self.line = line
        self.key = key


class MigrationError(MemCastleError):
    """The palace schema could not be brought up to date."""

    code = "migration_failed"


class StorageError(MemCastleError):
    """The palace's storage failed to read or write (an I/O error); nothing half-written was kept."""

    code = "storage_error"
    status = 503
    help = "the write was rolled back; check the disk and the system log, then try again"


class StorageFull(StorageError):
    """The disk holding the palace is full; the write was refused and nothing acknowledged was lost."""

    code = "storage_full"
    status = 507

    @classmethod
    def of(cls, path: str, free_bytes: int | None) -> StorageFull:
        free = f"{free_bytes:,} bytes free" if free_bytes is not None else "no space left"
        return cls(
            f"the palace's disk is full: {path} ({free}); nothing was written",
            help="free some space on that disk, then resume the paused jobs (or cancel them: that always works)",
        )


class PalaceDamaged(StorageError):
    """The palace file is damaged, or missing from a palace that was in use; the daemon will not serve it."""

    code = "palace_damaged"


class DaemonNotRunning(MemCastleError):
    """No live daemon serves this palace."""

    code = "daemon_not_running"
    exit_code = 3


class InternalError(MemCastleError):
    """Something failed that MemCastle did not raise on purpose: a bug. Every interface answers it in the one shape
    (never a bare failure), naming only the exception's type; the daemon's log has the traceback."""

    code = "internal"
    help = "this is a bug; the daemon log has the details"

    @classmethod
    def of(cls, exc: BaseException) -> InternalError:
        return cls(f"internal error: {type(exc).__name__}")


# --- the error shape every interface answers with ---------------------------------------------------------------

_WHERE = ("body", "query", "path", "header")


def error_shape(exc: MemCastleError) -> dict[str, Any]:
    """`{error, code, help}` plus `field` (a bad request) or `existing_id` (a conflict): the body of every error
    answer, REST and MCP alike."""
    data: dict[str, Any] = {"error": exc.message, "code": exc.code, "help": exc.help}
    if isinstance(exc, InvalidRequest) and exc.field:
        data["field"] = exc.field
    if isinstance(exc, Conflict) and exc.existing_id:
        data["existing_id"] = exc.existing_id
    if isinstance(exc, AmbiguousId):
        data["candidates"] = list(exc.candidates)
        if exc.field:
            data["field"] = exc.field
    return data


def http_status(exc: MemCastleError) -> int:
    """The HTTP status an error answers with, the same on every interface that speaks HTTP (REST, the web page)."""
    return exc.status


def _classes(base: type[MemCastleError]) -> list[type[MemCastleError]]:
    found = [base]
    for sub in base.__subclasses__():
        found += _classes(sub)
    return found


def from_answer(status: int, body: Mapping[str, Any]) -> MemCastleError:
    """The error an HTTP answer carries, as its class (by its `code`, else the most general class with its status):
    the CLI raises what the daemon raised, and exits as it would have."""
    message = str(body.get("error") or f"HTTP {status}")
    code = str(body.get("code") or "")
    kinds = _classes(MemCastleError)
    kind = next((k for k in kinds if k.code == code), None) or next(
        (k for k in kinds if k.status == status or (status == 401 and k is AccessDenied)), MemCastleError
    )
    error = kind(message, help=str(body.get("help") or "") or None)
    error.field, error.existing_id = body.get("field"), body.get("existing_id")
    error.candidates, error.unauthenticated = tuple(body.get("candidates") or ()), status == 401
    error.code, error.status = code or kind.code, status
    return error


def field_path(loc: Sequence[Any], *, located: bool = True) -> str:
    """A validation error's location as a field path: `items[0].content`, `limit` (with `located`, an HTTP
    request's: the leading `body`/`query`/… that says where the value was is dropped; a tool's arguments have no
    such part, and one of them may well be named `query`)."""
    parts = list(loc[1:] if located and loc and loc[0] in _WHERE else loc)
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += ("." if path else "") + str(part)
    return path or "body"


def invalid_arguments(errors: Sequence[Mapping[str, Any]], help: str, *, located: bool = True) -> InvalidRequest:
    """The first of a validator's errors (pydantic's `errors()` shape: loc, msg, type) as an `InvalidRequest` naming
    its field (`located`: see `field_path`); never the rejected value, never a link to the validator's
    documentation."""
    first: Mapping[str, Any] = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": "invalid"}
    field = field_path(tuple(first.get("loc", ())), located=located)
    kind = first.get("type")
    if kind == "json_invalid":
        context = first.get("ctx") or {}
        return InvalidRequest(f"the body is not valid JSON: {context.get('error', first.get('msg'))}", field="body")
    if kind == "extra_forbidden":
        return InvalidRequest(f"{field}: unknown field", field=field, help=help)
    if kind == "missing":
        return InvalidRequest(f"{field}: required", field=field, help=help)
    return InvalidRequest(f"{field}: {first.get('msg')}", field=field, help=help)
