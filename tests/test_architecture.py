"""The import contract between the packages of `memcastle`: an explicit table of allowed edges, and what follows.

A unit is a top-level module or package of `memcastle` (`store`, `search`, `modes`, …). `ALLOWED[unit]` lists every
unit it may import (lazy imports inside functions count too). Beside the table: no cycle between units; settings are
read only by the composition roots; the database drivers are imported only under `store/`; every unit the table
names exists. `test_the_contract_breaks_on_a_forbidden_import` shows that the check can fail.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

import memcastle

ROOT = Path(memcastle.__file__).parent

VALUES = {"errors", "clock", "model"}
ALLOWED: dict[str, set[str]] = {
    # values: everything else stands on them
    "errors": set(),
    "clock": {"errors"},
    "model": {"errors", "clock"},
    # cross-cutting policy, pure
    "modes": {"errors"},
    "events": set(),
    "metrics": set(),  # the daemon's counters and figures for a monitor (prometheus-client)
    "preferences": VALUES,
    # persistence
    "store": VALUES,
    # domain
    "providers": VALUES,
    "connectors": VALUES,
    "jobs": VALUES | {"store"},
    "integrity": VALUES | {"store", "jobs"},
    "knowledge": VALUES | {"store", "jobs", "preferences", "providers"},
    "mining": VALUES | {"store", "jobs", "connectors", "knowledge"},
    "search": VALUES | {"store", "jobs", "preferences", "providers", "knowledge"},
    "archive": VALUES | {"store", "jobs"},
    "triggers": VALUES | {"connectors", "events"},
    "hooks": VALUES,
    "integrations": VALUES | {"hooks"},
    "__main__": {"cli"},  # `python -m memcastle`: the command line
    # application seam
    "services": VALUES
    | {
        "store",
        "jobs",
        "integrity",
        "preferences",
        "connectors",
        "knowledge",
        "mining",
        "search",
        "archive",
        "events",
        "metrics",
    },
    # this machine's footprint of a daemon, for interfaces and roots only
    "runtime": VALUES | {"modes"},
    # reading settings (TOML files, environment) into values
    "config": VALUES | {"modes", "preferences"},
    # composition roots
    "app": VALUES
    | {
        "events",
        "triggers",
        "config",
        "store",
        "jobs",
        "integrity",
        "preferences",
        "connectors",
        "knowledge",
        "mining",
        "search",
        "services",
        "runtime",
        "archive",
        "palace",
    },
    # the built palace, running (start and stop): what `app.build` returns
    "palace": VALUES | {"config", "jobs", "search", "services", "store", "triggers"},
    "daemon": VALUES | {"config", "app", "api", "runtime"},
    "doctor": VALUES | {"config", "app", "daemon", "runtime", "integrations", "store"},
    # interfaces: parse, call one service, render
    "mcp": VALUES | {"modes", "services", "runtime"},
    "api": VALUES | {"modes", "services", "runtime", "mcp", "events", "web", "metrics"},
    "web": VALUES | {"modes", "services"},
    "cli": VALUES
    | {
        "config",
        "modes",
        "runtime",
        "app",
        "daemon",
        "doctor",
        "mcp",
        "preferences",
        "connectors",
        "hooks",
        "integrations",
    },
}
# `config` itself reads the files; `palace` holds the settings it was built from.
COMPOSITION_ROOTS = {"app", "palace", "daemon", "doctor", "cli", "config", "__main__"}
DRIVERS = {"sqlite3", "psycopg", "psycopg_pool", "pgvector"}


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "memcastle"


def units(root: Path) -> set[str]:
    return {
        p.stem if p.is_file() else p.name
        for p in root.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())
    }


def imports(root: Path) -> dict[str, set[tuple[str, str]]]:
    """unit → {(imported module, importing file)}, from an `ast` walk of every file (lazy imports too)."""
    found: dict[str, set[tuple[str, str]]] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent).with_suffix("")
        unit = unit_of(".".join(relative.parts))
        if unit == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"memcastle.{a.name}" for a in node.names] if node.module == "memcastle" else [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                found.setdefault(unit, set()).add((name, str(path.relative_to(root))))
    return found


def violations(root: Path, allowed: Mapping[str, set[str]]) -> list[str]:
    """Every way the tree at `root` breaks the contract."""
    problems: list[str] = []
    present = units(root)
    problems += [f"the table names {name!r}, which does not exist" for name in sorted(set(allowed) - present)]
    problems += [f"{name!r} has no row in the table" for name in sorted(present - set(allowed))]
    edges: dict[str, set[str]] = {}
    for unit, found in imports(root).items():
        for module, where in sorted(found):
            top = module.split(".")[0]
            if top in DRIVERS and unit != "store":
                problems.append(f"{where} imports the database driver {module} outside store/")
            if top != "memcastle" or module in ("memcastle", "memcastle.__version__"):
                continue
            target = unit_of(module)
            if target == unit:
                continue
            edges.setdefault(unit, set()).add(target)
            if target == "config" and unit not in COMPOSITION_ROOTS:
                problems.append(f"{where} reads configuration ({module}); only {sorted(COMPOSITION_ROOTS)} may")
            elif target not in allowed.get(unit, set()):
                problems.append(f"{where} imports {module}: {unit} → {target} is not an allowed edge")
    problems += [f"import cycle between units: {' → '.join(cycle)}" for cycle in cycles(edges)]
    return problems


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of units, if any (depth-first search)."""
    found: list[list[str]] = []
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = "done"

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    return found


def test_every_import_follows_the_table() -> None:
    assert not violations(ROOT, ALLOWED), "\n".join(violations(ROOT, ALLOWED))


def test_the_table_itself_has_no_cycle() -> None:
    assert not cycles(ALLOWED)


@pytest.mark.parametrize(
    ("file", "line", "expected"),
    [
        ("search/fusion.py", "from memcastle.mining.pipeline import KIND", "search → mining is not an allowed edge"),
        ("store/sql/base.py", "from memcastle.services import Services", "store → services is not an allowed edge"),
        ("knowledge/facts.py", "from memcastle.config import Settings", "reads configuration"),
        ("search/engine.py", "import sqlite3", "database driver sqlite3 outside store/"),
        ("modes.py", "import psycopg", "database driver psycopg outside store/"),
        ("mcp/server.py", "from memcastle.api.access import reads", "mcp → api is not an allowed edge"),
    ],
)
def test_the_contract_breaks_on_a_forbidden_import(package_copy: Path, file: str, line: str, expected: str) -> None:
    target = package_copy / file
    original = target.read_text(encoding="utf-8")
    target.write_text(original + f"\n{line}\n", encoding="utf-8")
    try:
        found = violations(package_copy, ALLOWED)
    finally:
        target.write_text(original, encoding="utf-8")
    assert any(expected in problem for problem in found), found


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package that holds to the contract (each case breaks one file of it, then puts it back)."""
    copy = tmp_path_factory.mktemp("contract") / "memcastle"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data", "migrations"))
    assert not violations(copy, ALLOWED)
    return copy


def test_a_cycle_between_units_is_found() -> None:
    assert cycles({"api": {"mcp"}, "mcp": {"modes", "api"}, "modes": set()}) == [["api", "mcp", "api"]]


def test_a_stale_name_in_the_table_is_reported(tmp_path: Path) -> None:
    assert "the table names 'ghost', which does not exist" in violations(ROOT, {**ALLOWED, "ghost": set()})


def test_no_module_is_over_600_lines() -> None:
    """A module past 600 lines holds more than one concept: split it by concern (as api/routes/ and services/ are)."""
    package = Path(memcastle.__file__).parent
    long = {
        str(path.relative_to(package)): lines
        for path in package.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long, f"modules over 600 lines: {long}"
