"""Arrows point down only: an import from a higher layer fails this test."""

from __future__ import annotations

import ast
from pathlib import Path

import memcastle

ROOT = Path(memcastle.__file__).parent
LAYERS = {
    "model": 0, "errors": 0, "clock": 0, "config": 0, "registry": 0,
    "store": 1,
    "search": 2, "mining": 2, "chunking": 2, "miners": 2, "integrity": 2, "jobs": 2, "connectors": 2,
    "preferences": 2, "facts": 2, "extraction": 2, "dedup": 2, "embedding": 2, "entities": 2, "knowledge": 2, "credentials": 2, "provider_command": 2,
    "palace_copy": 2,
    "services": 3,
    "app": 4,
    "api": 5, "cli": 5, "daemon": 5, "mcp": 5, "web": 5,
}


def _layer(module: str) -> int:
    top = module.split(".")[1] if module.startswith("memcastle.") else module
    if top not in LAYERS:
        raise AssertionError(f"memcastle.{top} has no layer in tests/test_architecture.py")
    return LAYERS[top]


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memcastle."):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names if a.name.startswith("memcastle."))
    return found


def test_every_import_points_down_or_sideways() -> None:
    violations = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).with_suffix("")
        module = ".".join(relative.parts)
        if module in ("memcastle.__init__", "memcastle"):
            continue
        own = _layer(module)
        for imported in _imports(path):
            if imported == "memcastle":
                continue
            if _layer(imported) > own:
                violations.append(f"{module} (layer {own}) imports {imported} (layer {_layer(imported)})")
    assert not violations, "\n".join(violations)


def test_sql_lives_only_under_store() -> None:
    offenders = [
        str(path.relative_to(ROOT)) for path in ROOT.rglob("*.py")
        if "store" not in path.relative_to(ROOT).parts and "import sqlite3" in path.read_text(encoding="utf-8")
    ]
    assert not offenders
