"""Validation at the service seam: every refusal names the field."""

from __future__ import annotations

from collections.abc import Sequence

from memcastle.errors import InvalidRequest

MAX_LIMIT = 200


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be an integer from 1 to {MAX_LIMIT}", field="limit")
    return limit


def check_name(value: str | None, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 200 or "\x00" in value:
        raise InvalidRequest(f"{field} must be a non-empty name of at most 200 characters", field=field)
    return value.strip()


def require_name(value: str | None, field: str) -> str:
    name = check_name(value, field)
    if name is None:
        raise InvalidRequest(f"{field} is required", field=field)
    return name


def check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    out = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip() or len(tag) > 100:
            raise InvalidRequest("each tag must be a non-empty string of at most 100 characters", field="tags")
        out.append(tag.strip())
    return tuple(dict.fromkeys(out))
