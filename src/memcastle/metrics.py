"""What a monitor scrapes (`GET /metrics`, Prometheus' exposition format, written by prometheus-client).

Counted as things happen, in the palace's own registry (not the process's: two palaces in one process, as the tests
build them, count apart): searches and recalls with their latency, by the ranking they used and the interface that
asked; error answers by code and interface; finished jobs by kind and final status. Read when scraped, from the
palace itself (`Figures`): drawers, facts, jobs by status, the queue, the embedding and extraction backlogs, MCP
sessions and read-audit records. docs/operations.md names every metric and its meaning.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

# A `…_created` series beside every counter (its creation time) is noise to every monitor but OpenMetrics': off.
cast(Callable[[], None], disable_created_metrics)()  # the library leaves it unannotated

# Seconds: a warm lexical search takes milliseconds, a first one or a loaded machine's up to seconds.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class Figures:
    """The palace as a scrape reads it: plain figures (name → value) and labelled ones (name → label value →
    value), each with its help text."""

    plain: Mapping[str, tuple[str, float]] = field(default_factory=dict)
    labelled: Mapping[str, tuple[str, str, Mapping[str, float]]] = field(default_factory=dict)


class Metrics:
    """The daemon's counters and latency histograms, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.searches = Histogram(
            "memcastle_search_seconds",
            "Searches and recalls answered: how long each took, by the ranking it used and the interface that asked",
            ["ranking", "interface"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "memcastle_errors",
            "Error answers given, by error code and the interface that asked",
            ["code", "interface"],
            registry=self.registry,
        )
        self.jobs = Counter(
            "memcastle_jobs_finished",
            "Jobs that ended, by kind and final status (completed, failed, cancelled)",
            ["kind", "status"],
            registry=self.registry,
        )

    @contextmanager
    def timing_search(self, interface: str) -> Iterator[dict[str, str]]:
        """Time a search; the caller says which ranking it used (`labels["ranking"]`) before the block ends. A
        search that fails is not counted here (its error is)."""
        labels = {"ranking": "unknown"}
        started = time.perf_counter()
        yield labels
        self.searches.labels(labels["ranking"], interface).observe(time.perf_counter() - started)

    def error(self, code: str, interface: str) -> None:
        self.errors.labels(code, interface).inc()

    def job_finished(self, kind: str, status: str) -> None:
        self.jobs.labels(kind, status).inc()

    def exposition(self, figures: Callable[[], Figures] | None = None) -> tuple[bytes, str]:
        """The exposition a scrape answers with, and its content type: the counters, and the figures read now."""
        body = generate_latest(self.registry)
        if figures is not None:
            now = CollectorRegistry()
            now.register(_Read(figures))
            body += generate_latest(now)
        return body, CONTENT_TYPE_LATEST


class _Read(Collector):
    """The figures of one scrape, as gauges."""

    def __init__(self, figures: Callable[[], Figures]) -> None:
        self._figures = figures

    def collect(self) -> Iterator[Metric]:
        read = self._figures()
        for name, (help, value) in read.plain.items():
            yield GaugeMetricFamily(name, help, value=value)
        for name, (help, label, values) in read.labelled.items():
            family = GaugeMetricFamily(name, help, labels=[label])
            for key, value in values.items():
                family.add_metric([key], value)
            yield family
