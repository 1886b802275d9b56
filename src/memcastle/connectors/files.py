"""Walking a folder of project files: what to skip, how to read text safely, and the repository around it."""

from __future__ import annotations

import configparser
import errno
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Any, BinaryIO

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


def walk_files(
    root: Path, suffixes: tuple[str, ...] | None = None, may_read: Callable[[Path], bool] | None = None
) -> Iterator[str]:
    """Relative POSIX paths of regular files under `root`, sorted; skips dot-dirs, build outputs, symlinks and
    whatever `.gitignore` / `.memcastleignore` files exclude (see `memcastle.connectors.ignore`; above `root` only
    what `may_read` allows is looked at)."""
    entries: list[str] = []
    rules = IgnoreRules(root, may_read)
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


def hard_link_refusal(stat: os.stat_result, allowed: bool) -> None:
    """`SkipDocument` for a file with more than one name, unless `mining.hard_links` allows it: the roots are checked
    on the path, and a hard link's other names — which may lie in `~/.ssh` — are not on it (ADR 0050)."""
    if stat.st_nlink > 1 and not allowed and S_ISREG(stat.st_mode):
        raise SkipDocument(
            f"hard link ({stat.st_nlink} names): its data may also live outside mining.roots, which no path shows "
            "(mining.hard_links = true mines such files)"
        )


def _open_file(path: Path) -> int:
    try:
        # O_NOFOLLOW: a file swapped for a symbolic link after the walk listed it is refused, not followed.
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SkipDocument("symbolic link") from None
        if isinstance(exc, PermissionError):
            raise SkipDocument("permission denied") from None
        raise SkipDocument(f"cannot read: {exc.strerror or exc}") from None


@contextmanager
def open_local(path: Path, *, hard_links: bool) -> Iterator[BinaryIO]:
    """A local file opened as a mine reads it: a regular file, not through a symbolic link, and a hard link only when
    allowed (judged on the open file, so a swap after the walk changes nothing)."""
    handle = os.fdopen(_open_file(path), "rb")
    with handle:
        stat = os.fstat(handle.fileno())
        if not S_ISREG(stat.st_mode):
            raise SkipDocument("not a regular file")
        hard_link_refusal(stat, hard_links)
        yield handle


def read_local_bytes(path: Path, *, hard_links: bool) -> bytes:
    """A local file's bytes (`open_local`); an unreadable one is a `SkipDocument` naming it."""
    try:
        with open_local(path, hard_links=hard_links) as handle:
            return handle.read()
    except OSError as exc:
        raise SkipDocument(f"cannot read {path}: {exc.strerror or exc}") from None


def read_text_file(path: Path, max_bytes: int, *, hard_links: bool = False) -> tuple[str, os.stat_result]:
    """The file's text, or `SkipDocument` with the reason: a secret (by name or content), unreadable, empty, too
    large, binary, not UTF-8, a hard link (unless `hard_links`)."""
    secret = secret_file_reason(path.name)
    if secret:
        raise SkipDocument(secret)
    descriptor = _open_file(path)
    try:
        with os.fdopen(descriptor, "rb") as handle:
            stat = os.fstat(handle.fileno())
            if not S_ISREG(stat.st_mode):
                raise SkipDocument("not a regular file")
            hard_link_refusal(stat, hard_links)
            if stat.st_size == 0:
                raise SkipDocument("empty file")
            if stat.st_size > max_bytes:
                raise SkipDocument(f"larger than mining.max_file_bytes ({stat.st_size} > {max_bytes} bytes)")
            data = handle.read(max_bytes + 1)
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


def repository_info(start: Path, may_read: Callable[[Path], bool] | None = None) -> RepositoryInfo | None:
    """Branch and origin remote of the git repository around `start`, read from `.git` without running git. Only
    folders `may_read` allows are looked at: the walk up stops at the first that is not, and a `.git` file (a
    worktree or submodule) is followed only to a git folder it allows."""
    allowed = may_read or (lambda path: True)
    for folder in (start, *start.parents):
        if folder != start and not allowed(folder):
            return None
        dot_git = folder / ".git"
        if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
            try:
                target = dot_git.read_text(encoding="utf-8").strip().removeprefix("gitdir:").strip()
            except OSError:
                return None
            dot_git = (folder / target).resolve()
            if not allowed(dot_git):
                return None
        if dot_git.is_dir():
            return RepositoryInfo(branch=_branch(dot_git), remote=_remote(dot_git, allowed))
    return None


def _branch(git_dir: Path) -> str | None:
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: refs/heads/") else None


def _remote(git_dir: Path, may_read: Callable[[Path], bool]) -> str | None:
    config_file = git_dir / "config"
    if not config_file.is_file():
        common = git_dir / "commondir"
        if common.is_file():
            try:
                config_file = (git_dir / common.read_text(encoding="utf-8").strip() / "config").resolve()
            except OSError:
                return None
            if not may_read(config_file):
                return None
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(config_file, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    url = parser.get('remote "origin"', "url", fallback=None)
    # Tokens embedded in an https remote must never land in a drawer's metadata snapshot.
    return _CREDENTIALS.sub(r"\1", url) if url else None


def folder_token(root: Path, may_read: Callable[[Path], bool]) -> str | None:
    """A cheap fingerprint of what a folder's mine would list: how many files, and the newest modification time
    among them (no file is opened). None when the folder is not there."""
    if not root.is_dir():
        return None
    count, newest = 0, 0
    for relative in walk_files(root, may_read=may_read):
        try:
            newest = max(newest, (root / relative).stat().st_mtime_ns)
        except OSError:
            continue
        count += 1
    return f"{count}:{newest}"
