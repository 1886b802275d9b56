"""Bearer tokens of a palace: stored only as SHA-256 digests in `<palace>/tokens.json`, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memcastle.clock import utc_now
from memcastle.errors import ConfigError, InvalidRequest, NotFound
from memcastle.model.visibility import Visibility
from memcastle.modes import parse_mode

TOKENS_FILE = "tokens.json"
PREFIX = "mc_"
MIN_SECRET_CHARS = 32
SECRET_NAME = "MEMCASTLE_AUTH_TOKEN"  # how the configured secret shows in listings and logs


@dataclass(frozen=True)
class TokenRecord:
    name: str
    digest: str
    created_at: str
    mode: str = "full"  # the most a client holding it may do: a ceiling, as the daemon's own mode is
    read: tuple[str, ...] | None = None  # the wings it may read (None: every wing)
    write: tuple[str, ...] | None = None  # the wings it may write to (None: every wing)
    tools: tuple[str, ...] | None = None  # the MCP tools it may list and call (None: every tool)
    routes: tuple[str, ...] | None = None  # the REST route groups (OpenAPI tags, and `web`) it may use (None: all)

    @property
    def visibility(self) -> Visibility:
        return Visibility.of(self.read, self.write)

    def to_json(self) -> dict[str, Any]:
        """As listed (never the digest)."""
        scope = self.visibility.to_json()
        tools = None if self.tools is None else list(self.tools)
        routes = None if self.routes is None else list(self.routes)
        return {"name": self.name, "created_at": self.created_at, "mode": self.mode, **scope, "tools": tools,
                "routes": routes}  # fmt: skip


TOKEN_STATE = "memcastle_token"  # the key of the ASGI request state that holds the token a request authenticated with


def token_of(request: Any) -> TokenRecord | None:
    """The token the request (a Starlette request: REST, the web page, MCP over HTTP) authenticated with; None without
    authentication. Only `api.auth.BearerAuth` writes it, so nothing a client sends can set it."""
    state = (getattr(request, "scope", None) or {}).get("state") or {}
    record = state.get(TOKEN_STATE)
    return record if isinstance(record, TokenRecord) else None


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenStore:
    """Reads the token file again whenever it changes, so tokens created or revoked while the daemon runs take effect
    on the next request. `secret` is a token configured for a headless deployment (`auth.token`, from
    `MEMCASTLE_AUTH_TOKEN`): accepted beside the file's tokens, never written anywhere."""

    def __init__(self, palace: Path, *, secret: str | None = None) -> None:
        self.path = palace / TOKENS_FILE
        self._secret_digest = digest_of(secret) if secret else None
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._records: list[TokenRecord] = []

    def records(self) -> list[TokenRecord]:
        with self._lock:
            try:
                stat = self.path.stat()
            except FileNotFoundError:
                self._stamp, self._records = None, []
                return []
            stamp = (stat.st_mtime_ns, stat.st_size)
            if stamp != self._stamp:
                self._records = _load(self.path)
                self._stamp = stamp
            return list(self._records)

    def verify(self, token: str) -> TokenRecord | None:
        """The record whose digest matches; every record is compared so timing does not reveal which."""
        offered = digest_of(token)
        found = None
        for record in self.records():
            if hmac.compare_digest(offered, record.digest):
                found = record
        if self._secret_digest is not None and hmac.compare_digest(offered, self._secret_digest):
            found = TokenRecord(name=SECRET_NAME, digest=self._secret_digest, created_at="")
        return found

    @property
    def has_secret(self) -> bool:
        return self._secret_digest is not None

    def revoke(self, name: str) -> TokenRecord:
        """Remove the token named `name`; requests carrying it are refused from the next one on."""
        with self._lock:
            records = _load(self.path) if self.path.exists() else []
            kept = [r for r in records if r.name != name]
            if len(kept) == len(records):
                known = ", ".join(r.name for r in records) or "none"
                raise NotFound(f"no token named {name!r}", help=f"tokens of this palace: {known}")
            self._save(kept)
            self._stamp = None
        return next(r for r in records if r.name == name)

    def create(
        self,
        name: str,
        *,
        mode: str = "full",
        read: Sequence[str] | None = None,
        write: Sequence[str] | None = None,
        tools: Sequence[str] | None = None,
        routes: Sequence[str] | None = None,
    ) -> str:
        """A new random token for a client of at most `mode`, reading and writing only the wings given (every wing
        where None); only its digest is kept. Returns the token (shown once)."""
        name = name.strip()
        if not name:
            raise InvalidRequest("a token needs a name", field="name")
        mode = parse_mode(mode, field="mode")
        read, write, tools = _wings(read, "read"), _wings(write, "write"), _wings(tools, "tools")
        routes = _wings(routes, "routes")
        records = self.records()
        if any(r.name == name for r in records):
            raise InvalidRequest(f"a token named {name!r} exists already", field="name")
        token = PREFIX + secrets.token_urlsafe(32)
        records.append(
            TokenRecord(
                name=name,
                digest=digest_of(token),
                created_at=utc_now(),
                mode=mode,
                read=read,
                write=write,
                tools=tools,
                routes=routes,
            )  # fmt: skip
        )
        with self._lock:
            self._save(records)
            self._stamp = None
        return token

    def _save(self, records: list[TokenRecord]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps([asdict(r) for r in records], indent=2), encoding="utf-8")
        os.chmod(temporary, 0o600)
        temporary.replace(self.path)


WEB = "web"  # the route group of the web page's routes (which have no OpenAPI tag)
# The REST route groups, as the routes' OpenAPI tags name them (a test checks every route has one of these).
ROUTE_GROUPS = ("agents", "auth", "drawers", "events", "facts", "forgetting", "jobs", "lifecycle", "mining",
                "preferences", "search", "security", "status", WEB)  # fmt: skip


def known_routes(names: list[str] | None, field: str = "routes") -> list[str] | None:
    """A token's route groups, each a known one (refused by name otherwise); None for every group."""
    if names is None:
        return None
    unknown = sorted(set(names) - set(ROUTE_GROUPS))
    if unknown:
        raise InvalidRequest(f"no route group {unknown[0]!r}; the groups: {', '.join(ROUTE_GROUPS)}", field=field)
    return names


def _wings(names: Sequence[str] | None, field: str) -> tuple[str, ...] | None:
    """A list of names (wings, `wing/room`s, tools); None for all of them."""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) and n.strip() and "\x00" not in n for n in names):
        raise InvalidRequest(f"{field} must be a list of names", field=field)
    return tuple(sorted({n.strip() for n in names}))


def _load(path: Path) -> list[TokenRecord]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [
            TokenRecord(
                name=str(d["name"]),
                digest=str(d["digest"]),
                created_at=str(d["created_at"]),
                mode=parse_mode(d.get("mode"), field=f"{d['name']}.mode"),
                read=_wings(d.get("read"), f"{d['name']}.read"),
                write=_wings(d.get("write"), f"{d['name']}.write"),
                tools=_wings(d.get("tools"), f"{d['name']}.tools"),
                routes=_wings(d.get("routes"), f"{d['name']}.routes"),
            )
            for d in data
        ]
    except (OSError, ValueError, KeyError, TypeError, InvalidRequest) as exc:
        raise ConfigError(f"unreadable token file: {exc}", file=str(path)) from None
