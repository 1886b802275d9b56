"""The repository's own promises: the README's two set-up commands, CI running the same test command, and every
package the code imports declared in pyproject.toml."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import memcastle

REPO = Path(__file__).resolve().parents[1]
SRC = Path(memcastle.__file__).parent


def readme_commands() -> list[str]:
    block = re.search(r"\A# MemCastle\n\n```sh\n(.*?)\n```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)
    assert block, "the README starts with a sh block of its set-up commands"
    return block.group(1).splitlines()


def test_the_readme_starts_with_exactly_two_commands_serve_then_test() -> None:
    serve, test = readme_commands()
    assert serve.endswith("memcastle serve")
    assert test.endswith("python -m pytest")


def test_ci_runs_the_readmes_test_command() -> None:
    _, test = readme_commands()
    assert test in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)]
    return {_normalized(re.split(r"[\s\[<>=!~;]", name, maxsplit=1)[0]) for name in names}


def imported_packages() -> dict[str, str]:
    """Top-level third-party modules imported anywhere in the package (lazy imports too) → a file importing it."""
    found: dict[str, str] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "memcastle" and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(SRC)))
    return found


def test_every_imported_package_is_declared() -> None:
    distributions = packages_distributions()
    wanted = declared()
    missing = []
    for module, where in sorted(imported_packages().items()):
        names = {_normalized(d) for d in distributions.get(module, [module])}
        if not names & wanted:
            missing.append(f"{module} (imported by {where}; provided by {sorted(names)})")
    assert not missing, "imported but not declared in pyproject.toml: " + ", ".join(missing)
