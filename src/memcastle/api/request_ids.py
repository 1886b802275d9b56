"""Every HTTP request's id: the caller's `X-Request-Id` when it is well-formed (1-128 letters, digits and `._:-`),
else a new one. It is sent back in the `X-Request-Id` header, put in every error answer (`request_id`), and carried by
every log line written while the request is answered (`runtime.logs.REQUEST_ID`). A refused or failed request is
logged once, with its status and how long it took, so an error answer can be found in the log by its id."""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.types import Message, Receive, Scope, Send

from memcastle.api.asgi import HttpMiddleware
from memcastle.runtime.logs import REQUEST_ID, REQUEST_ID_STATE

HEADER = "X-Request-Id"
WELL_FORMED = re.compile(r"[A-Za-z0-9._:-]{1,128}")

log = logging.getLogger(__name__)


class RequestIds(HttpMiddleware):
    """ASGI middleware: the request's id, kept or made, told back and logged with."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        given = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if WELL_FORMED.fullmatch(given) else uuid.uuid4().hex
        scope.setdefault("state", {})[REQUEST_ID_STATE] = request_id
        token = REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status: list[int] = []

        async def tell(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, tell)
        finally:
            if status and status[0] >= 400:
                elapsed = (time.perf_counter() - started) * 1000
                log.info("%s %s answered %d in %.0f ms", scope["method"], scope.get("path", ""), status[0], elapsed)
            REQUEST_ID.reset(token)
