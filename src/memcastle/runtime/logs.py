"""The daemon's log: `logging.level` and `logging.format` (text lines, or one JSON object per line for a log
shipper), on standard error — which a background start and a service append to the palace's log file."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# The id of the HTTP request being answered (`api.request_ids`): every log line written for it carries it.
REQUEST_ID: ContextVar[str | None] = ContextVar("memcastle_request_id", default=None)
REQUEST_ID_STATE = "request_id"  # where the request's scope keeps it, for code that runs outside its context (MCP)


def request_id_of(scope: Mapping[str, Any]) -> str | None:
    """The id of the HTTP request `scope` is (None outside one)."""
    found = (scope.get("state") or {}).get(REQUEST_ID_STATE)
    return found if isinstance(found, str) else None


class RequestIdFilter(logging.Filter):
    """Puts the current request's id on every record written while it is answered (`request_id`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = REQUEST_ID.get()
        if current is not None and not hasattr(record, "request_id"):
            record.request_id = current
        return True


# Attributes every LogRecord has; anything else on a record was passed through `extra=` and is kept in JSON.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: `time` (RFC 3339, UTC), `level`, `logger`, `message`, the exception's traceback
    as `exception` when there is one, and any `extra=` fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value if isinstance(value, str | int | float | bool | type(None)) else repr(value)
        return json.dumps(out, ensure_ascii=False)


def configure(level: str, fmt: str, *, stream: TextIO | None = None) -> None:
    """Route the root logger to `stream` (standard error) at `level`, as text or JSON; the MCP SDK, which logs
    every session at INFO, and uvicorn's access log stay at WARNING unless the level is debug."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    quiet = logging.DEBUG if level == "debug" else logging.WARNING
    for name in ("mcp", "uvicorn.access", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(quiet)
