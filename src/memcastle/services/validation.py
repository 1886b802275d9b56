"""Validation at the service seam: every refusal names the field."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from memcastle.clock import format_instant, parse_instant, to_datetime
from memcastle.errors import InvalidRequest
from memcastle.model.mining import parse_duration

MAX_LIMIT = 200
# Caps on what one request may ask for (documented in docs/http-api.md, "Limits").
MAX_CONTENT_CHARS = 1_000_000  # one note, diary entry, checkpoint item or replacement
MAX_TAGS = 50  # per drawer
MAX_TAG_CHARS = 100
MAX_QUERY_CHARS = 2_000
MAX_LOCATOR_CHARS = 4_096
MAX_CHECKPOINT_ITEMS = 100


def check_content(content: object, field: str = "content") -> str:
    """Non-blank text of at most MAX_CONTENT_CHARS characters."""
    if not isinstance(content, str) or not content.strip():
        raise InvalidRequest(f"{field} must not be empty", field=field)
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidRequest(
            f"{field} has {len(content)} characters; at most {MAX_CONTENT_CHARS} are stored as one drawer",
            field=field,
            help="split it, or mine it from a file",
        )
    return content


def has_lone_surrogate(text: str) -> bool:
    """True when `text` holds a UTF-16 surrogate code point on its own: JSON may carry one, no stored text can."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def find_bad_text(value: object, path: str) -> str | None:
    """The dotted path of the first string under `value` holding a lone surrogate, or None."""
    if isinstance(value, str):
        return path if has_lone_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            key_path = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and has_lone_surrogate(key):
                return key_path
            found = find_bad_text(item, key_path)
            if found:
                return found
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = find_bad_text(item, f"{path}[{index}]")
            if found:
                return found
    return None


def check_text(value: object, field: str) -> None:
    """Refuse text no store can hold (a lone surrogate anywhere in it), naming the field."""
    bad = find_bad_text(value, field)
    if bad is not None:
        raise InvalidRequest(
            f"{bad} holds a lone surrogate (not valid Unicode text)",
            field=bad,
            help="send valid UTF-8; a surrogate must come in a pair",
        )


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be an integer from 1 to {MAX_LIMIT}", field="limit")
    return limit


def check_name(value: str | None, field: str) -> str | None:
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > 200
        or "\x00" in value
        or has_lone_surrogate(value)
    ):
        raise InvalidRequest(f"{field} must be a non-empty name of at most 200 characters, without NUL", field=field)
    return value.strip()


def require_name(value: str | None, field: str) -> str:
    name = check_name(value, field)
    if name is None:
        raise InvalidRequest(f"{field} is required", field=field)
    return name


def check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    if len(tags) > MAX_TAGS:
        raise InvalidRequest(f"at most {MAX_TAGS} tags per drawer, not {len(tags)}", field="tags")
    out = []
    for tag in tags:
        if (
            not isinstance(tag, str)
            or not tag.strip()
            or len(tag) > MAX_TAG_CHARS
            or "\x00" in tag
            or has_lone_surrogate(tag)
        ):
            raise InvalidRequest(
                f"each tag must be a non-empty string of at most {MAX_TAG_CHARS} characters, without NUL",
                field="tags",
            )
        out.append(tag.strip())
    return tuple(dict.fromkeys(out))


def check_expiry(value: str | None, now: str, field: str = "expires_at") -> str | None:
    """When a drawer expires: an RFC 3339 instant, or a duration from now (`"7d"`, `"12h"`); later than now."""
    if value is None:
        return None
    try:
        seconds = parse_duration(value)
    except ValueError:
        at = parse_instant(value, field=field)
    else:
        at = format_instant(to_datetime(now) + timedelta(seconds=seconds))
    if at <= now:
        raise InvalidRequest(
            f"{field} {at} is not in the future", field=field, help="a duration such as 7d is from now"
        )
    return at
