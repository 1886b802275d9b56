"""`GET /metrics`: the daemon's counters and the palace's figures read now, in Prometheus' exposition format. Behind
the same door as `/api` (a bearer token when authentication is on; the Host and Origin checks)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from memcastle.mcp.endpoint import LazyEndpoint
from memcastle.metrics import Figures
from memcastle.services import Services
from memcastle.services.reader import palace_wide


async def scrape(services: Services, endpoint: LazyEndpoint, request: Request) -> Response:
    """The whole palace's figures: refused to a token limited to some wings."""
    palace_wide("the metrics")
    body, kind = await run_in_threadpool(services.metrics.exposition, lambda: figures(services, endpoint))
    return Response(body, media_type=kind)


def figures(services: Services, endpoint: LazyEndpoint) -> Figures:
    """The palace's figures now: what it holds, what waits, who is connected."""
    status = services.status.status()
    embeddings, extraction = status.embeddings, status.extraction
    return Figures(
        plain={
            "memcastle_drawers": ("Current drawers in the palace", status.drawers),
            "memcastle_drawer_versions": ("Drawer records, closed versions included", status.drawers_total),
            "memcastle_facts": ("Facts recorded, of any state", float(extraction.facts or 0)),
            "memcastle_queue_depth": ("Jobs queued, not yet running", status.jobs.get("queued", 0)),
            "memcastle_embedding_backlog_drawers": (
                "Current drawers still waiting for their passage vectors",
                embeddings.pending,
            ),
            "memcastle_embedding_backlog_passages": (
                "Passages still to embed, as the running embed sweep last counted them (0 when none runs)",
                float(embeddings.backlog.passages_pending or 0),
            ),
            "memcastle_extraction_backlog_drawers": (
                "Current drawers the fact extractor has not read yet",
                extraction.pending,
            ),
            "memcastle_mcp_sessions": ("MCP sessions open now", endpoint.sessions()),
            "memcastle_audit_records": ("Read-audit records kept", services.audit.count()),
        },
        labelled={"memcastle_jobs": ("Jobs in the palace, by status", "status", dict(status.jobs))},
    )
