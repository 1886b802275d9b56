"""Real git repositories for tests: made with the git command, with a fixed author."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

AUTHOR = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}


def run_git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, env={**os.environ, **AUTHOR})


def one_commit_repository(path: Path, message: str) -> Path:
    """A repository at `path` holding one file, committed with `message`."""
    path.mkdir(parents=True)
    run_git(path, "init", "-q", "-b", "main")
    (path / "f.md").write_text("# F\nthe file of a repository\n")  # its clone's checkout is inside, and may be read
    run_git(path, "add", "f.md")
    run_git(path, "commit", "-q", "-m", message)
    return path
