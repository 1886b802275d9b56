"""docs/mcp.md names every tool with its hints and every argument it takes, and every other name an argument or a
tool goes by: adding a tool or an argument without documenting it fails here."""

from __future__ import annotations

import re
from pathlib import Path

from memcastle.mcp.server import bind
from memcastle.mcp.sessions import SessionModes
from memcastle.mcp.tools import TOOLS
from memcastle.mcp.tools.base import COMMON_ALIASES, OTHER_NAMES

DOCS = Path(__file__).parents[2] / "docs" / "mcp.md"


def rows() -> dict[str, list[str]]:
    """The Tools table: tool name → its cells (RO, D, I, arguments, answer)."""
    text = DOCS.read_text(encoding="utf-8")
    table = text[text.index("## Tools") : text.index("### Other names")]
    found = {}
    for line in table.splitlines():
        match = re.match(r"\| `(memcastle_\w+)` \|(.*)\|$", line)
        if match:
            found[match.group(1)] = [cell.strip() for cell in re.split(r"(?<!\\)\|", match.group(2))]
    return found


def test_every_tool_is_documented_with_its_hints_and_every_argument() -> None:
    documented = rows()
    assert set(documented) == set(TOOLS)
    for name, spec in TOOLS.items():
        read_only, destructive, idempotent, arguments, _ = documented[name]
        assert read_only == ("yes" if spec.read_only else "no"), name
        if not spec.read_only:
            assert destructive.strip("*") == ("yes" if spec.hints.destructive else "no"), name
            assert idempotent == ("yes" if spec.hints.idempotent else "no"), name
        _, accepted = bind(spec, services=None, modes=SessionModes())  # type: ignore[arg-type]
        for argument in accepted:
            assert re.search(rf"`{argument}\??`", arguments), f"{name}: argument {argument} is not documented"


def test_every_other_name_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    other = text[text.index("### Other names") :]
    names = set(COMMON_ALIASES) | {alias for spec in TOOLS.values() for alias in spec.aliases}
    for alias in names:
        assert f"`{alias}`" in other, f"the other name {alias} is not documented"
    for tool in OTHER_NAMES:
        short = tool.removeprefix("memcastle_job_")
        assert f"`{tool}`" in other or f"`_{short}`" in other, f"the tool name {tool} is not documented"
    for spec in TOOLS.values():
        if spec.adapt is not None:
            assert f"| {spec.name.removeprefix('memcastle_')}" in other or spec.name.removeprefix("memcastle_") in other
