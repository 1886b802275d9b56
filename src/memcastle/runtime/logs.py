"""The daemon's log: `logging.level` and `logging.format` (text lines, or one JSON object per line for a log
shipper), on standard error — which a background start and a service append to the palace's log file."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
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
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    quiet = logging.DEBUG if level == "debug" else logging.WARNING
    for name in ("mcp", "uvicorn.access", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(quiet)
