"""A GitHub repository's wiki, for the `github` connector's `wiki` option.

GitHub's REST API has no wiki endpoint: a wiki is a git repository beside the project's,
`<site>/<owner>/<repo>.wiki.git` (`mining.github_wiki_url` names the site, https://github.com by default). It is
cloned into a temporary folder — no shell, MemCastle's variables out of the environment, a time bound, the token as
an HTTP header, never in the URL, on disk or on the command line — and each page file read: one page a document, its
time the last commit that changed it.
"""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from memcastle.clock import parse_instant
from memcastle.connectors.contract import SkipDocument

TIMEOUT_SECONDS = 120.0
# The markups GitHub renders in a wiki; files starting with `_` (`_Sidebar`, `_Footer`) are navigation, not pages.
PAGE_SUFFIXES = (".md", ".markdown", ".mediawiki", ".wiki", ".textile", ".rst", ".asciidoc", ".adoc", ".org", ".txt")
MAX_PAGE_BYTES = 1 << 20


@dataclass(frozen=True)
class WikiPage:
    repository: str
    path: str  # the page's file in the wiki repository
    text: str
    changed_at: str | None  # the last commit that changed it

    @property
    def title(self) -> str:
        """The page's name as GitHub shows it: the file name, its dashes as spaces."""
        return Path(self.path).stem.replace("-", " ")


def wiki_pages(site: str, repository: str, token: str | None) -> list[WikiPage]:
    """Every page of the repository's wiki; `SkipDocument` with the reason when it has none or cannot be read."""
    url = f"{site.rstrip('/')}/{repository}.wiki.git"
    with tempfile.TemporaryDirectory(prefix="memcastle-wiki-") as work:
        folder = Path(work) / "wiki"
        _git(["clone", "--quiet", "--no-tags", "--single-branch", url, str(folder)], token, url, repository)
        changed = _last_changes(folder, token, url, repository)
        pages = []
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder).as_posix()
            if (
                not path.is_file()
                or path.is_symlink()
                or relative.startswith(".git/")
                or path.name.startswith("_")
                or path.suffix.lower() not in PAGE_SUFFIXES
                or path.stat().st_size > MAX_PAGE_BYTES
            ):
                continue
            text = path.read_bytes().decode("utf-8", "replace")
            pages.append(WikiPage(repository, relative, text, changed.get(relative)))
        return pages


def _last_changes(folder: Path, token: str | None, url: str, repository: str) -> dict[str, str]:
    """Each file's last change, from one walk of the history (newest first)."""
    log = _git(["-C", str(folder), "log", "--format=%x00%cI", "--name-only"], token, url, repository)
    changed: dict[str, str] = {}
    when = None
    for line in log.splitlines():
        if line.startswith("\x00"):
            when = parse_instant(line[1:])
        elif line and when is not None:
            changed.setdefault(line, when)
    return changed


def _git(arguments: list[str], token: str | None, url: str, repository: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.upper().startswith(("MEMCASTLE_", "GIT_CONFIG"))}
    environment.update({"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "LC_ALL": "C"})
    if token and url.startswith("https://"):
        # GitHub reads a token over HTTPS as the password of `x-access-token`: sent as a header for this one run,
        # through the environment (never the command line, which other users of the machine can read).
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        environment.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
                            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}"})  # fmt: skip
    try:
        done = subprocess.run(
            ["git", *arguments],
            capture_output=True,
            timeout=TIMEOUT_SECONDS,
            env=environment,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise SkipDocument("git is not installed: a GitHub wiki is read with git") from None
    except subprocess.TimeoutExpired:
        raise SkipDocument(f"the wiki of {repository} was not read within {TIMEOUT_SECONDS:g} s") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = lines[-1] if lines else f"git exited {done.returncode}"
        raise SkipDocument(f"{repository} has no wiki, or not one this token may read ({reason})")
    return done.stdout.decode("utf-8", "replace")
