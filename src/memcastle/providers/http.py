"""An OpenAI-compatible HTTP endpoint, as the embedding and extraction providers both call one."""

from __future__ import annotations

from typing import Any

from memcastle.errors import ConfigError, ProviderError
from memcastle.providers.command import tail


def endpoint_url(url: str, path: str, *, key: str) -> str:
    """`url` with `path` (e.g. `/embeddings`) appended unless it already ends so; a bad URL names the setting."""
    base = url.strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ConfigError(f"must be an http:// or https:// URL, got {url!r}", key=key)
    return base if base.endswith(path) else base + path


def post_json(endpoint: str, body: Any, *, api_key: str | None, timeout: float, who: str) -> tuple[Any, str]:
    """POST `body` as JSON; the decoded answer and its text (for error messages). Every failure is a ProviderError."""
    import httpx  # only remote providers need it; the daemon starts without it

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.post(endpoint, json=body, headers=headers, timeout=timeout)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise ProviderError(f"{who} failed: {type(exc).__name__}: {exc}") from exc
    if not response.is_success:
        raise ProviderError(f"{who} answered HTTP {response.status_code}: {tail(response.text)}")
    try:
        return response.json(), response.text
    except ValueError:
        raise ProviderError(f"{who} did not answer JSON: {tail(response.text)}") from None
