"""Bearer tokens of a palace: stored only as SHA-256 digests in `<palace>/tokens.json`, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from memcastle.clock import utc_now
from memcastle.errors import ConfigError, InvalidRequest

TOKENS_FILE = "tokens.json"
PREFIX = "mc_"


@dataclass(frozen=True)
class TokenRecord:
    name: str
    digest: str
    created_at: str


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenStore:
    """Reads the token file again whenever it changes, so tokens created while the daemon runs take effect."""

    def __init__(self, palace: Path) -> None:
        self.path = palace / TOKENS_FILE
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
        return found

    def create(self, name: str) -> str:
        """A new random token; only its digest is kept. Returns the token (shown once)."""
        name = name.strip()
        if not name:
            raise InvalidRequest("a token needs a name", field="name")
        records = self.records()
        if any(r.name == name for r in records):
            raise InvalidRequest(f"a token named {name!r} exists already", field="name")
        token = PREFIX + secrets.token_urlsafe(32)
        records.append(TokenRecord(name=name, digest=digest_of(token), created_at=utc_now()))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps([asdict(r) for r in records], indent=2), encoding="utf-8")
        os.chmod(temporary, 0o600)
        temporary.replace(self.path)
        return token


def _load(path: Path) -> list[TokenRecord]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [
            TokenRecord(name=str(d["name"]), digest=str(d["digest"]), created_at=str(d["created_at"])) for d in data
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"unreadable token file: {exc}", file=str(path)) from None
