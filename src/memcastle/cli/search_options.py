"""The search options as the command line offers them to `search`, `recall` and `forget search`, derived from
their one declaration on `SearchRequest`; `search_body` sends them as the REST body names them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from memcastle.model.options import Declared, declared_options
from memcastle.model.requests import SearchRequest, field_names

F = TypeVar("F", bound=Callable[..., Any])


def _click_option(declared: Declared) -> Callable[[F], F]:
    """The command line's option for a declared search option."""
    option = declared.option
    names = (*option.flags(declared.name), declared.name)
    if option.kind == "flag":
        return click.option(*names, is_flag=True, help=option.help)
    if option.kind == "tags":
        return click.option(*names, multiple=True, help=option.help + "; repeat for more")
    if option.kind == "count":
        return click.option(*names, type=int, default=declared.default, help=option.help)
    # Choices are listed, and checked by the daemon like any other field (exit 1 naming it, as for every option).
    shown = "[" + "|".join(option.choices) + "]" if option.choices else None
    return click.option(*names, metavar=shown, default=declared.default, help=option.help)


OPTIONS: dict[str, Callable[[F], F]] = {d.name: _click_option(d) for d in declared_options(SearchRequest)}
# What a forget by search takes: where and when, no ranking.
SCOPE_OPTIONS = tuple(d.name for d in declared_options(SearchRequest) if d.option.scope)
# A recall searches a whole wing: never a room.
RECALL_OPTIONS = tuple(d.name for d in declared_options(SearchRequest) if d.option.recall)
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
