"""Docs that cannot drift: `docs/architecture.md` names every unit of the package, `docs/connectors.md` every
connector, `docs/cli.md` every command and option (MCP tools: tests/mcp/test_docs.py; routes:
tests/api/test_route_docs.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click

import memcastle
from memcastle.cli.main import app
from memcastle.connectors.builtin import builtin_connectors

DOCS = Path(__file__).parents[1] / "docs"
SECTIONS = Path(memcastle.__file__).parent / "config" / "sections.py"  # the typed settings, generated too


def test_architecture_names_every_unit_of_the_package() -> None:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    tree = text[text.index("## The tree and its arrows") : text.index("Arrows point down only")]
    package = Path(memcastle.__file__).parent
    units = [p.stem if p.suffix == ".py" else p.name for p in package.iterdir() if not p.name.startswith(("_", "."))]
    units = [u for u in units if u != "py.typed"]  # the typing marker
    missing = [u for u in units if not re.search(rf"\b{re.escape(u)}(\.py|/)", tree)]
    assert not missing, f"docs/architecture.md's tree does not name: {missing}"


def test_connectors_md_names_every_connector() -> None:
    text = (DOCS / "connectors.md").read_text(encoding="utf-8")
    names = sorted(builtin_connectors(max_file_bytes=1))
    assert names
    missing = [name for name in names if f"`{name}`" not in text]
    assert not missing, f"docs/connectors.md does not name: {missing}"


def commands(group: click.Group, prefix: str = "memcastle") -> list[tuple[str, click.Command]]:
    """Every command under `group`, loaded (a lazy group's `commands` holds only those loaded so far)."""
    context = click.Context(group)
    found = []
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        found.append((f"{prefix} {name}", command))
        if isinstance(command, click.Group):
            found += commands(command, f"{prefix} {name}")
    return found


def test_cli_md_names_every_command_and_its_options() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = []
    for name, command in commands(app):
        rows = " ".join(line for line in text.splitlines() if f"`{name}" in line)
        if not rows:
            missing.append(name)
            continue
        for option in (p for p in command.params if isinstance(p, click.Option)):
            names = [o for o in (*option.opts, *option.secondary_opts) if o.startswith("--")]
            if names and not any(o in rows for o in names):
                missing.append(f"{name} {names[0]}")
    assert not missing, f"docs/cli.md does not name: {missing}"


def test_the_generated_docs_are_current_and_a_stale_one_fails_the_check(tmp_path: Path) -> None:
    """docs/configuration.md's settings table and docs/cli-reference.md are generated with cog from the declarations;
    `cog --check` (in CI) passes on them, and fails on a copy whose table no longer matches the code."""
    cog = [sys.executable, "-m", "cogapp", "--check"]
    pages = [str(DOCS / "configuration.md"), str(DOCS / "cli-reference.md"), str(SECTIONS)]
    done = subprocess.run([*cog, *pages], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    stale = tmp_path / "configuration.md"
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    stale.write_text(
        text.replace("| `server.port` | int | `8420` |", "| `server.port` | int | `9000` |"), encoding="utf-8"
    )
    assert stale.read_text(encoding="utf-8") != text
    done = subprocess.run([*cog, str(stale)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "changed" in (done.stdout + done.stderr).lower()
