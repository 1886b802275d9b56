"""Which files of a folder a mine leaves alone: `.gitignore` files (nested ones too) and `.memcastleignore`.

Matching is git's own (`pathspec.GitIgnoreSpec`): patterns are relative to the folder of the file that holds them, a
deeper file overrides a shallower one, the last matching line wins and `!pattern` re-includes. In each folder
`.memcastleignore` is read after `.gitignore`, so it can exclude more or re-include what git ignores. Mining a
subfolder of a repository still honours the `.gitignore` files above it, up to the repository root, and
`.git/info/exclude`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

IGNORE_FILES = (".gitignore", ".memcastleignore")


class IgnoreRules:
    """The ignore files met while walking down from `root`; ask `ignored(path, is_dir)` for any path below it.
    Above `root`, only folders `may_read` allows are looked at (the repository around it, inside `mining.roots`)."""

    def __init__(self, root: Path, may_read: Callable[[Path], bool] | None = None) -> None:
        self.root = root
        self._specs: dict[Path, GitIgnoreSpec] = {}
        top = _repository_root(root, may_read or _anywhere)
        if top is not None:
            chain = [top, *reversed([p for p in root.parents if p.is_relative_to(top) and p != top])]
            for index, folder in enumerate(chain):
                extra = _lines(top / ".git" / "info" / "exclude") if index == 0 else []
                self._add(folder, extra)
            if self.ignored(root, is_dir=True):
                # The folder asked for is itself ignored by the repository around it (a pyenv checkout's
                # `versions/`, a build tree): it was chosen explicitly, so only its own ignore files apply.
                self._specs.clear()
        self.enter(root)

    def enter(self, folder: Path) -> None:
        """Read the ignore files of `folder` (called by the walk before it looks inside)."""
        self._add(folder, [])

    def ignored(self, path: Path, *, is_dir: bool) -> bool:
        """Whether git would ignore `path` under the rules read so far (the last matching rule wins)."""
        verdict: bool | None = None
        for base in (*reversed(path.parents),):
            spec = self._specs.get(base)
            if spec is None:
                continue
            relative = path.relative_to(base).as_posix() + ("/" if is_dir else "")
            result = spec.check_file(relative)
            if result.include is not None:
                verdict = result.include
        return bool(verdict)

    def _add(self, folder: Path, extra: list[str]) -> None:
        if folder in self._specs:
            return
        lines = list(extra)
        for name in IGNORE_FILES:
            lines.extend(_lines(folder / name))
        if lines:
            from pathspec import GitIgnoreSpec  # on the first ignore file met: not on the start-up path

            self._specs[folder] = GitIgnoreSpec.from_lines(lines)


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _anywhere(path: Path) -> bool:
    return True


def _repository_root(start: Path, may_read: Callable[[Path], bool]) -> Path | None:
    for folder in (start, *start.parents):
        if folder != start and not may_read(folder):
            return None
        if (folder / ".git").exists():
            return folder
    return None
