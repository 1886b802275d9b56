"""Walking a folder of project files: what to skip, how to read text safely, and the repository around it."""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memcastle.clock import from_epoch
from memcastle.connectors.contract import SkipDocument
from memcastle.connectors.ignore import IgnoreRules
from memcastle.connectors.secrets import secret_content_reason, secret_file_reason

SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        "__pycache__",
        "build",
        "dist",
        "target",
        "out",
        "venv",
        "env",
        "site-packages",
        "bower_components",
        "coverage",
        "htmlcov",
    }
)
BINARY_SNIFF_BYTES = 8192


def walk_files(root: Path, suffixes: tuple[str, ...] | None = None) -> Iterator[str]:
    """Relative POSIX paths of regular files under `root`, sorted; skips dot-dirs, build outputs, symlinks and
    whatever `.gitignore` / `.memcastleignore` files exclude (see `memcastle.connectors.ignore`)."""
    entries: list[str] = []
    rules = IgnoreRules(root)
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        if here != root:
            rules.enter(here)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in SKIPPED_DIRS
            and not d.endswith(".egg-info")
            and not (here / d).is_symlink()
            and not rules.ignored(here / d, is_dir=True)
        )
        for name in files:
            path = here / name
            if name.startswith(".") or path.is_symlink() or rules.ignored(path, is_dir=False):
                continue
            if suffixes is not None and not name.lower().endswith(suffixes):
                continue
            entries.append(path.relative_to(root).as_posix())
    entries.sort()
    yield from entries


def read_text_file(path: Path, max_bytes: int) -> tuple[str, os.stat_result]:
    """The file's text, or `SkipDocument` with the reason: a secret (by name or content), unreadable, empty, too
    large, binary, not UTF-8."""
    secret = secret_file_reason(path.name)
    if secret:
        raise SkipDocument(secret)
    try:
        stat = path.lstat()
        if path.is_symlink():
            raise SkipDocument("symbolic link")
        if stat.st_size == 0:
            raise SkipDocument("empty file")
        if stat.st_size > max_bytes:
            raise SkipDocument(f"larger than mining.max_file_bytes ({stat.st_size} > {max_bytes} bytes)")
        data = path.read_bytes()
    except SkipDocument:
        raise
    except PermissionError:
        raise SkipDocument("permission denied") from None
    except OSError as exc:
        raise SkipDocument(f"cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise SkipDocument("binary file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkipDocument(f"not valid UTF-8 (byte {exc.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise SkipDocument("whitespace only")
    secret = secret_content_reason(text)
    if secret:
        raise SkipDocument(secret)
    return text, stat


def file_metadata(root: Path, relative: str, stat: os.stat_result) -> dict[str, Any]:
    path = root / relative
    return {
        "path": str(path),
        "relative_path": relative,
        "extension": path.suffix.lower().lstrip("."),
        "size": stat.st_size,
        "mtime": from_epoch(stat.st_mtime),
    }


@dataclass(frozen=True)
class RepositoryInfo:
    branch: str | None
    remote: str | None

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in (("branch", self.branch), ("remote", self.remote)) if v}


_CREDENTIALS = re.compile(r"^(\w+://)[^/@]+@")


def repository_info(start: Path) -> RepositoryInfo | None:
    """Branch and origin remote of the git repository around `start`, read from `.git` without running git."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
            try:
                target = dot_git.read_text(encoding="utf-8").strip().removeprefix("gitdir:").strip()
            except OSError:
                return None
            dot_git = (folder / target).resolve()
        if dot_git.is_dir():
            return RepositoryInfo(branch=_branch(dot_git), remote=_remote(dot_git))
    return None


def _branch(git_dir: Path) -> str | None:
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: refs/heads/") else None


def _remote(git_dir: Path) -> str | None:
    config_file = git_dir / "config"
    if not config_file.is_file():
        common = git_dir / "commondir"
        if common.is_file():
            config_file = (git_dir / common.read_text(encoding="utf-8").strip() / "config").resolve()
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(config_file, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    url = parser.get('remote "origin"', "url", fallback=None)
    # Tokens embedded in an https remote must never land in a drawer's metadata snapshot.
    return _CREDENTIALS.sub(r"\1", url) if url else None
