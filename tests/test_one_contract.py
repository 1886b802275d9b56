"""One contract per operation: every interface that builds a request offers the request's fields under the request's
names, or this test says why it does not. A new search option declared on `SearchRequest` and forgotten by one
interface fails here, naming the interface."""

from __future__ import annotations

import inspect

import click

from memcastle.api.schemas import CheckpointItemBody as CheckpointBodyItem
from memcastle.api.schemas import FactBody, ForgetSearchBody, MineBody, MinerBody, SearchBody, SupersedeFactBody
from memcastle.cli.main import app
from memcastle.mcp.tools import TOOLS
from memcastle.mcp.tools.agents import CheckpointArgument, FactArgument
from memcastle.model.requests import (
    CheckpointItem,
    FactCorrection,
    FactSpec,
    MinerDefinition,
    MineRequest,
    SearchRequest,
    field_names,
)

# A caller's own query vector is for a script with its own embedder, over REST: a person typing a query (CLI, the
# web form) and an agent (MCP, whose tool list every agent reads at start) search by text.
SEARCH = set(field_names(SearchRequest)) - {"query_embedding"}
# A forget by search picks drawers by where and when only: no ranking, so no limit, ranking, expansion, preference
# or second stage.
# A forget reaches hidden drawers too, so it has no include_hidden.
FORGET = SEARCH - {"limit", "ranking", "expand", "preferences", "rerank", "include_hidden"}
# A recall searches a whole wing: never a room (SearchService.recall refuses one).
RECALL = SEARCH - {"room"}
# MCP recall also leaves out the connector and record time, to keep the tool list every agent reads at start small:
# an agent that needs them has memcastle_search.
MCP_RECALL = RECALL - {"connector", "known_at", "known_from", "known_until", "include_hidden"}
# Hidden drawers are the ones a person keeps out of what agents are handed: no MCP search reaches them (an agent
# reads one only by its id).
MCP_SEARCH = SEARCH - {"include_hidden"}
# What an interface holds beyond the request: how the answer is shaped.
ANSWER_SHAPE = {"full", "max_chars"}


def python_names(names: set[str]) -> set[str]:
    return {"from_" if name == "from" else name for name in names}


def cli_params(path: str) -> set[str]:
    command: click.Command = app
    context = click.Context(app)
    for word in path.split():
        assert isinstance(command, click.Group)
        found = command.get_command(context, word)
        assert found is not None, path
        command = found
    return {p.name for p in command.params if p.name}


def tool_params(name: str) -> set[str]:
    return set(inspect.signature(TOOLS[name].fn).parameters) - {"env"}


def test_rest_bodies_name_every_field_of_the_request_they_build() -> None:
    assert set(SearchBody.model_fields) == set(field_names(SearchRequest)) | ANSWER_SHAPE
    assert set(ForgetSearchBody.model_fields) == FORGET


def test_mcp_tools_name_every_field_of_the_request_they_build() -> None:
    assert tool_params("memcastle_search") == MCP_SEARCH | ANSWER_SHAPE
    assert tool_params("memcastle_recall") == MCP_RECALL | ANSWER_SHAPE


def test_cli_commands_name_every_field_of_the_request_they_build() -> None:
    assert cli_params("search") == SEARCH | {"full"}
    assert cli_params("recall") == RECALL | {"full"}
    assert cli_params("forget search") == FORGET | {"dry_run", "yes"}


def test_the_search_form_names_every_field_of_the_search() -> None:
    from memcastle.web.routes.search import DEFAULTS

    form = python_names(set(DEFAULTS)) - {"time", "page"}
    # The form's `time` choice stands for include_historical (and picks which time fields count); `page` is which
    # page of the ranking is shown, not part of the search.
    assert form | {"include_historical"} == SEARCH


FACT = set(field_names(FactSpec))
CORRECTION = set(field_names(FactCorrection))
# MCP's correction leaves the entity kinds to the fact it replaces (tool-list budget); its checkpoint fact states
# names, predicate, confidence and time (the drawer it is kept in is its evidence).
MCP_CORRECTION = CORRECTION - {"subject_kind", "object_kind"}
MCP_CHECKPOINT_FACT = FACT - {"subject_kind", "object_kind", "evidence_drawer"}


def test_facts_and_checkpoints_are_named_alike_everywhere() -> None:
    assert set(FactBody.model_fields) == FACT
    assert set(SupersedeFactBody.model_fields) == CORRECTION
    assert tool_params("memcastle_fact_supersede") == MCP_CORRECTION | {"fact_id"}
    assert set(CheckpointBodyItem.model_fields) == set(field_names(CheckpointItem))
    assert set(CheckpointArgument.model_fields) == set(field_names(CheckpointItem))
    assert set(FactArgument.model_fields) == MCP_CHECKPOINT_FACT


def test_mining_is_asked_for_alike_everywhere() -> None:
    mine = set(field_names(MineRequest))
    assert set(MineBody.model_fields) == mine
    assert tool_params("memcastle_mine") == mine
    assert set(MinerBody.model_fields) == set(field_names(MinerDefinition))
    # The CLI names the connector by its positional argument SOURCE (`memcastle mine notes ~/vault`), and may wait.
    assert cli_params("mine") - {"wait"} == mine - {"connector"} | {"source"}
    assert cli_params("miner add") == set(field_names(MinerDefinition))
