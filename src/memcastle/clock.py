"""UTC timestamps as fixed-width RFC 3339 text, so that text order equals time order."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime

from memcastle.errors import InvalidRequest

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

Clock = Callable[[], str]
"""What everything that stamps a time is handed: `utc_now`, or a test's clock (`app.build(settings, now=…)`)."""


def utc_now() -> str:
    """The current instant as a timestamp string."""
    return format_instant(datetime.now(UTC))


def format_instant(moment: datetime) -> str:
    """Render an aware datetime (naive ones are taken as UTC) in the stored form."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(_FORMAT)


def parse_instant(text: str, *, field: str = "timestamp") -> str:
    """Accept RFC 3339 / ISO 8601 (or a bare date) and return the stored form; 400 naming `field` otherwise."""
    value = text.strip()
    try:
        if len(value) == 10:
            moment = datetime.combine(date.fromisoformat(value), datetime.min.time(), tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidRequest(
            f"{field}: {text!r} is not an RFC 3339 timestamp", field=field, help="e.g. 2026-01-31T12:00:00Z"
        ) from None
    return format_instant(moment)


def from_epoch(seconds: float) -> str:
    """A Unix timestamp in the stored form."""
    return format_instant(datetime.fromtimestamp(seconds, UTC))


def to_datetime(stamp: str) -> datetime:
    """The stored form back to an aware datetime."""
    return datetime.strptime(stamp, _FORMAT).replace(tzinfo=UTC)
