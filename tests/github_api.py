"""GitHub's REST shapes for a loopback server: JSON answers with the rate-limit headers GitHub sends, and lists paged
with a `Link: <…>; rel="next"` header, as its documentation describes. Tests and benchmarks subclass `GitHubHandler`
and answer their own paths."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit


class GitHubHandler(BaseHTTPRequestHandler):
    page_size: int | None = None  # a page size imposed whatever `per_page` asks (tests paging); else `per_page`

    def log_message(self, *args: Any) -> None:
        pass

    def answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        for key, value in {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999", **(headers or {})}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def page(self, items: list[Any], query: dict[str, list[str]], size: int | None = None) -> None:
        """One page of `items` (`page` in the query, from 1), with a `Link` to the next when there is one."""
        size = size or self.page_size or min(int(query.get("per_page", ["30"])[0]), 100)
        number = int(query.get("page", ["1"])[0])
        headers = {}
        if number * size < len(items):
            rest = "&".join(f"{k}={v[0]}" for k, v in query.items() if k != "page")
            url = f"http://{self.headers['Host']}{urlsplit(self.path).path}?{rest}&page={number + 1}"
            headers["Link"] = f'<{url}>; rel="next"'
        self.answer(200, items[(number - 1) * size : number * size], headers)
