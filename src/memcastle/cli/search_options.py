"""The search options, declared once and named as `SearchRequest` names them, for `search`, `recall` and
`forget search`; `search_body` sends them as the REST body names them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from memcastle.model.requests import SearchRequest, field_names

F = TypeVar("F", bound=Callable[..., Any])

OPTIONS: dict[str, Callable[[F], F]] = {
    "limit": click.option("--limit", type=int, default=10, help="how many hits (1-200)"),
    "wing": click.option("--wing", help="only this wing"),
    "room": click.option("--room", help="only this room"),
    "tags": click.option("--tag", "tags", multiple=True, help="required tag; repeat for more"),
    "source_kind": click.option(
        "--source-kind", "--kind", "source_kind", help="source kind: file, note, transcript, commit, …"
    ),
    "connector": click.option("--connector", help="only drawers mined by this connector"),
    "ranking": click.option("--ranking", default="auto", help="auto, lexical, semantic or hybrid"),
    "as_of": click.option("--as-of", help="what was current at this instant"),
    "from_": click.option("--from", "from_", help="window start (with --until)"),
    "until": click.option("--until", help="window end (with --from)"),
    "include_historical": click.option(
        "--include-historical", "--historical", "include_historical", is_flag=True, help="include closed versions"
    ),
    "known_at": click.option("--known-at", help="what the palace knew at this instant (record time)"),
    "known_from": click.option(
        "--known-from", help="what the palace knew at some point of a window (with --known-until)"
    ),
    "known_until": click.option("--known-until", help="record-time window end (with --known-from)"),
    "expand": click.option("--expand", is_flag=True, help="add drawers related through the knowledge graph"),
    "preferences": click.option(
        "--preferences", default="on", help="on, or off to see the ranking without source preferences"
    ),
    "rerank": click.option(
        "--rerank",
        type=click.Choice(("off", "on", "auto")),
        default=None,
        help="the second stage over the fused pool; default the palace's search.rerank",
    ),
    "include_hidden": click.option("--include-hidden", is_flag=True, help="the drawers a person hid too"),
}
# What a forget by search takes: where and when, no ranking.
SCOPE_OPTIONS = ("wing", "room", "tags", "source_kind", "connector", "as_of", "from_", "until", "include_historical",
                 "known_at", "known_from", "known_until")  # fmt: skip
# A recall searches a whole wing: never a room.
RECALL_OPTIONS = tuple(name for name in OPTIONS if name != "room")
FULL = click.option("--full", is_flag=True, help="print each hit's whole drawer instead of its snippet")


def search_options(*names: str) -> Callable[[F], F]:
    """The named search options (all of them without names), in the order `SearchRequest` declares them."""
    chosen = names or tuple(OPTIONS)

    def decorate(command: F) -> F:
        for name in reversed(chosen):
            command = OPTIONS[name](command)
        return command

    return decorate


def search_body(query: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The REST body of a search from the command's options: the request's fields as the wire names them (`from`),
    without those left unset."""
    names = set(field_names(SearchRequest))
    body: dict[str, Any] = {"query": query}
    for name, value in options.items():
        if name in names and value not in (None, (), [], False):
            body[name.rstrip("_")] = list(value) if isinstance(value, tuple) else value
    return body
