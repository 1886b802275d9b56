"""Every REST route the daemon serves is documented in docs/http-api.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.routing import APIRoute

from memcastle.api.routes import router

DOC = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"


def test_every_route_is_in_http_api_md() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = []
    for route in router.routes:
        assert isinstance(route, APIRoute)
        for method in route.methods:
            pattern = re.escape(route.path).replace(r"\{", "{").replace(r"\}", "}")
            pattern = re.sub(r"\{[^}]+\}", r"\\{[^}]+\\}", pattern)
            if not re.search(rf"{method}\s+{pattern}(?![\w/-])", text) and not _grouped(text, method, route.path):
                missing.append(f"{method} {route.path}")
    assert not missing, f"docs/http-api.md does not document: {', '.join(missing)}"


def _grouped(text: str, method: str, path: str) -> bool:
    """Routes documented as one row, e.g. `POST /api/jobs/{id}/pause` · `resume` · `cancel` · `retry`."""
    return method == "POST" and path == "/api/jobs/{job_id}/{action}" and "/api/jobs/{id}/pause" in text


def test_the_endpoints_table_is_written_from_every_route_and_fails_on_a_stale_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memcastle.api import reference
    from memcastle.api.route_docs import ROUTE_DOCS

    table = reference.routes_table()
    assert all(f"| `{key.replace(':path}', '}')}` |" in table for key in reference.route_keys())
    assert table in DOC.read_text(encoding="utf-8"), "docs/http-api.md holds the table as generated (cog -r)"
    monkeypatch.setitem(ROUTE_DOCS, "GET /api/nowhere", ("", "nothing"))
    with pytest.raises(KeyError, match="/api/nowhere"):
        reference.routes_table()
    monkeypatch.delitem(ROUTE_DOCS, "GET /api/nowhere")
    monkeypatch.delitem(ROUTE_DOCS, "GET /api/health")
    with pytest.raises(KeyError, match="GET /api/health"):
        reference.routes_table()
