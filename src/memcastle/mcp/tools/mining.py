"""Mining sources into memory: one mine, and the miners the palace keeps (config or API)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from memcastle.errors import InvalidRequest
from memcastle.mcp.tools.base import ADDS, READS, REQUESTER, Env, tool
from memcastle.model.requests import MineRequest, request_of
from memcastle.services.views import job_view, miner_view

MinerName = Annotated[str, Field(min_length=1)]


def from_path(arguments: dict[str, Any]) -> dict[str, Any]:
    """The original MemCastle's `path` (a directory) or `source` (a connector, with `locator`)."""
    if "path" not in arguments:
        return arguments
    arguments = dict(arguments)
    if "source" in arguments or "connector" in arguments or "locator" in arguments:
        raise InvalidRequest("give path (a directory) or connector and locator, not both", field="path")
    arguments["connector"], arguments["locator"] = "directory", arguments.pop("path")
    return arguments


@tool("memcastle_mine", "Mine a source", "write", ADDS,
      aliases={"source": "connector"}, adapt=from_path, palace_wide=True)  # fmt: skip
def mine(
    env: Env,
    connector: Annotated[str, Field(min_length=1, description="{connectors}")],
    locator: Annotated[str, Field(description="path, repository or export")] = "",
    options: Annotated[dict[str, str] | None, Field()] = None,
    wing: Annotated[str | None, Field()] = None,
    full: Annotated[bool, Field(description="re-read unchanged documents too")] = False,
    notice_removed: Annotated[bool | None, Field(description="close drawers of removed documents")] = None,
) -> dict[str, Any]:
    """Queue a mine of a source (unchanged documents skipped); returns its job."""
    submitted = env.services.mining.submit_mine(request_of(MineRequest, locals()), requested_by=REQUESTER)
    return {"job": job_view(submitted.job), "joined": not submitted.created}


@tool("memcastle_miner_list", "List miners", "read", READS, palace_wide=True,
      other_names={"memcastle_trigger_list": {}})  # fmt: skip
def miner_list(env: Env) -> dict[str, Any]:
    """Miners: sources mined on a watch or a schedule."""
    return {"miners": [miner_view(m) for m in env.services.miners.list_miners()]}


@tool("memcastle_miner_get", "Get a miner", "read", READS, palace_wide=True,
      aliases={"id": "name", "trigger_id": "name", "miner": "name"},
      other_names={"memcastle_trigger_get": {}})  # fmt: skip
def miner_get(env: Env, name: MinerName) -> dict[str, Any]:
    """A miner whole, with its last run."""
    return env.services.miners.get_miner(name).to_json()


@tool(
    "memcastle_miner_run",
    "Run a miner",
    "write",
    ADDS,
    aliases={"id": "name"},
    palace_wide=True,
)
def miner_run(env: Env, name: MinerName) -> dict[str, Any]:
    """Mine a miner's source now; returns the job."""
    submitted = env.services.miners.run(name, requested_by=REQUESTER)
    return {"job": job_view(submitted.job), "joined": not submitted.created}
