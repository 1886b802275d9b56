"""UTC timestamps as fixed-width RFC 3339 text, so that text order equals time order."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime

from memcastle.errors import InvalidRequest

_LEAP_SECOND = re.compile(r"(T\d\d:\d\d:)60(?:\.\d+)?", re.IGNORECASE)
_EARLIEST = datetime.min.replace(tzinfo=UTC)
_LATEST = datetime.max.replace(tzinfo=UTC)

Clock = Callable[[], str]
"""What everything that stamps a time is handed: `utc_now`, or a test's clock (`app.build(settings, now=…)`)."""


def utc_now() -> str:
    """The current instant as a timestamp string."""
    return format_instant(datetime.now(UTC))


def format_instant(moment: datetime) -> str:
    """Render an aware datetime (naive ones are taken as UTC) in the stored form."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    utc = moment.astimezone(UTC)
    # Not strftime: `%Y` is not zero-padded below year 1000 everywhere, and the width is what keeps text order.
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
        f".{utc.microsecond:06d}Z"
    )


def parse_instant(text: str, *, field: str = "timestamp") -> str:
    """Accept RFC 3339 / ISO 8601 (or a bare date) and return the stored form; 400 naming `field` otherwise."""
    value = text.strip()
    try:
        if len(value) == 10:
            moment = datetime.combine(date.fromisoformat(value), datetime.min.time(), tzinfo=UTC)
        else:
            # RFC 3339 allows a leap second (`23:59:60`); Python cannot hold one, so it is the instant just before.
            value = _LEAP_SECOND.sub(r"\g<1>59.999999", value)
            moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidRequest(
            f"{field}: {text!r} is not an RFC 3339 timestamp", field=field, help="e.g. 2026-01-31T12:00:00Z"
        ) from None
    try:
        return format_instant(moment)
    except OverflowError:
        # An offset that moves the instant past year 1 or 9999 in UTC: the edge of time is as far as it goes.
        return format_instant(_EARLIEST if moment.year < 5000 else _LATEST)


def from_epoch(seconds: float) -> str:
    """A Unix timestamp in the stored form."""
    return format_instant(datetime.fromtimestamp(seconds, UTC))


def to_datetime(stamp: str) -> datetime:
    """The stored form back to an aware datetime."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def eta_text(seconds: float | None) -> str:
    """`ETA 40 s`, `ETA 4 min`, `ETA 2 h 5 min`; empty when nothing is known yet."""
    if seconds is None:
        return ""
    whole = int(seconds)
    if whole < 90:
        return f"ETA {whole} s"
    minutes = round(whole / 60)
    return f"ETA {minutes} min" if minutes < 90 else f"ETA {minutes // 60} h {minutes % 60} min"
