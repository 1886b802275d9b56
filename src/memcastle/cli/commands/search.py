"""Search and recall: evidence with provenance and the signals that ranked it."""

from __future__ import annotations

from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, pass_invocation
from memcastle.cli.search_options import FULL, RECALL_OPTIONS, search_body, search_options


@app.command()
@click.argument("query")
@search_options()
@FULL
@pass_invocation
def search(inv: Invocation, /, query: str, full: bool, **options: Any) -> None:
    """Search the palace for QUERY: evidence with provenance and the signals that ranked it.

    Each hit shows the passage that matched best, with its lines in the document (`path:120-168`); `--full` prints
    whole drawers, and `memcastle drawer show ID` one drawer."""
    data = inv.client().post("/search", search_body(query, options))
    inv.emit(data, lambda data: render.show_hits(data, full=full))


@app.command()
@click.argument("query")
@search_options(*RECALL_OPTIONS)
@FULL
@pass_invocation
def recall(inv: Invocation, /, query: str, full: bool, **options: Any) -> None:
    """Search a whole wing for QUERY (no room scoping): the agent-facing search."""
    data = inv.client().post("/recall", search_body(query, options))
    inv.emit(data, lambda data: render.show_hits(data, full=full))
