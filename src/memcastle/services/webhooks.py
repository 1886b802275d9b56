"""Webhook triggers (`POST /hooks/{miner}`): a delivery asks for a run of a miner that declares `webhook`, once it is
verified — an HMAC-SHA256 signature of the raw body (`X-Hub-Signature-256: sha256=<hex>`, GitHub's header; or
`X-MemCastle-Signature-256`) or a token (`Authorization: Bearer <token>`, or `X-MemCastle-Webhook-Token`), compared
in constant time with the secret in the daemon's environment variable the miner names. Nothing runs before that:
not even whether the miner is enabled is told to an unverified sender. A delivery id (`X-GitHub-Delivery` or
`X-Delivery-Id`) seen again within a week runs nothing; more than `per_minute` deliveries a minute are refused with
429 and `Retry-After`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from memcastle.clock import Clock, format_instant, to_datetime, utc_now
from memcastle.errors import AccessDenied, Conflict, NotFound, StorageError, TooManyRequests
from memcastle.services.miners import MinerService
from memcastle.store import MinerStore

REPLAY_WINDOW = dt.timedelta(days=7)
PER_MINUTE = 30
SIGNATURE_HEADERS = ("x-hub-signature-256", "x-memcastle-signature-256")
DELIVERY_HEADERS = ("x-github-delivery", "x-delivery-id")


class WebhookService:
    def __init__(
        self,
        miners: MinerService,
        store: MinerStore,
        *,
        now: Clock = utc_now,
        environ: Mapping[str, str] | None = None,
        per_minute: int = PER_MINUTE,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._miners = miners
        self._store = store
        self._now = now
        self._environ = os.environ if environ is None else environ
        self._per_minute = per_minute
        self._monotonic = monotonic
        self._recent: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def deliver(self, name: str, body: bytes, headers: Mapping[str, str]) -> dict[str, Any]:
        """Verify a delivery, then ask for a run of the miner (or join its queued one); a replay runs nothing."""
        found = self._miners.effective().get(name)
        if found is None or found[0].webhook is None:
            raise NotFound(f"no webhook named {name!r}")
        spec, state = found
        assert spec.secret_env is not None  # a webhook always names it (check_triggers)
        secret = self._environ.get(spec.secret_env, "")
        if not secret:
            raise StorageError(
                f"the webhook's secret is not set: the daemon has no environment variable {spec.secret_env}",
                help=f"set {spec.secret_env} in the daemon's environment (memcastle daemon install carries none)",
            )
        if not _verified(spec.webhook, secret, body, headers):
            raise AccessDenied("the delivery's signature or token does not match", unauthenticated=True)
        if not state.enabled:
            raise Conflict(
                f"miner {name!r} is disabled: its webhook runs nothing", help=f"memcastle miner enable {name}"
            )
        self._admit(name)
        delivery = next((headers[h] for h in DELIVERY_HEADERS if headers.get(h)), None)
        if delivery is not None:
            now = to_datetime(self._now())
            fresh = self._store.note_delivery(
                name, delivery[:200], at=format_instant(now), forget_before=format_instant(now - REPLAY_WINDOW)
            )
            if not fresh:
                return {"duplicate": True, "delivery": delivery, "job": None, "message": "seen before: nothing run"}
        submitted = self._miners.run(name, trigger="webhook", requested_by="webhook", delivery=delivery)
        return {
            "duplicate": False,
            "delivery": delivery,
            "job": submitted.job.to_json(),
            "joined": not submitted.created,
        }

    def _admit(self, name: str) -> None:
        """At most `per_minute` deliveries a minute per webhook, past which a 429 says when one fits."""
        now = self._monotonic()
        with self._lock:
            recent = self._recent.setdefault(name, deque())
            while recent and now - recent[0] >= 60.0:
                recent.popleft()
            if len(recent) >= self._per_minute:
                wait = 60.0 - (now - recent[0])
                raise TooManyRequests(
                    f"webhook {name!r} took {self._per_minute} deliveries in the last minute", retry_after=wait
                )
            recent.append(now)


def _verified(kind: str | None, secret: str, body: bytes, headers: Mapping[str, str]) -> bool:
    if kind == "hmac":
        given = next((headers[h] for h in SIGNATURE_HEADERS if headers.get(h)), "")
        expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(given.strip().lower(), expected)
    authorization = headers.get("authorization", "")
    token = (
        authorization[7:]
        if authorization.lower().startswith("bearer ")
        else headers.get("x-memcastle-webhook-token", "")
    )
    return bool(token) and hmac.compare_digest(token.strip().encode(), secret.encode())
