"""Generated locators never read outside `mining.roots`.

Locators are built from the pieces attacks use — schemes, `..`, `x://..`, symbolic links in and out, `.git` files
and borrowed object stores, unicode, empty and relative forms — over a tree whose outside holds a marker in every
kind of source. Each locator goes through the one check every interface uses (`MiningService.check_source`); when
it is accepted, the connector lists and reads everything, while an audit hook records every file and folder the
process opens. Nothing recorded may lie outside the roots, and no marker may be read.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from repositories import one_commit_repository, run_git

from memcastle.connectors.builtin import builtin_connectors
from memcastle.connectors.contract import SkipDocument
from memcastle.connectors.registry import load_registry
from memcastle.errors import MemCastleError
from memcastle.mining.roots import MiningRoots
from memcastle.services.mining import MiningService

MARKER = "outside-the-roots-marker-7f3a"
CONNECTORS = ("directory", "notes", "git", "chatgpt", "claude", "codex")

# What the audit hook saw while a connector ran: (event, path).
_SEEN: list[tuple[str, str]] = []
_RECORDING: list[bool] = [False]


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _RECORDING[0]:
        return
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _SEEN.append((event, os.fsdecode(args[0])))
    elif event in ("os.scandir", "os.listdir") and isinstance(args[0], (str, bytes, os.PathLike)):
        _SEEN.append((event, os.fsdecode(args[0])))
    elif event == "subprocess.Popen":  # (executable, argv, cwd, env): git runs in the folder after `-C`
        argv = [os.fsdecode(a) for a in args[1]]
        _SEEN.extend((event, argv[i + 1]) for i, a in enumerate(argv[:-1]) if a == "-C")
        if args[2] is not None:
            _SEEN.append((event, os.fsdecode(args[2])))


sys.addaudithook(_audit)


def _session(text: str) -> str:
    entry = {"type": "user", "sessionId": "s", "cwd": "/w", "uuid": "u", "timestamp": "2026-01-01T00:00:00Z"}
    return json.dumps({**entry, "message": {"role": "user", "content": text}}) + "\n"


def _conversations(text: str) -> str:
    message = {"id": "m", "author": {"role": "user"}, "content": {"parts": [text]}, "create_time": 1.0}
    mapping = {"m": {"id": "m", "message": message, "parent": None, "children": []}}
    return json.dumps([{"conversation_id": "c", "title": "t", "mapping": mapping, "current_node": "m"}])


@dataclass(frozen=True)
class Tree:
    base: Path
    inside: Path
    outside: Path


@pytest.fixture(scope="module")
def tree() -> Iterator[Tree]:
    """`inside` is the one root; `outside` sits beside it (and outside the suite's home) with a marker everywhere."""
    with tempfile.TemporaryDirectory(prefix="memcastle-roots-") as folder:
        base = Path(folder).resolve()
        inside, outside = base / "inside", base / "outside"
        for kind in ("notes", "claude/proj", "codex/2026/01/01"):
            (outside / kind).mkdir(parents=True)
            (inside / kind).mkdir(parents=True)
        (outside / "notes" / "secret.md").write_text(f"# Secret\n{MARKER}\n")
        (outside / "claude" / "proj" / "s.jsonl").write_text(_session(MARKER))
        (outside / "codex" / "2026" / "01" / "01" / "rollout-1.jsonl").write_text(_session(MARKER))
        (outside / "conversations.json").write_text(_conversations(MARKER))
        one_commit_repository(outside / "repo", MARKER)

        (inside / "notes" / "a.md").write_text("# A\nordinary inside text\n")
        (inside / "notes" / "leak.md").symlink_to(outside / "notes" / "secret.md")
        (inside / "linkout").symlink_to(outside)
        (inside / "linkin").symlink_to(inside / "notes")
        (inside / "claude" / "real").mkdir()
        (inside / "claude" / "real" / "s.jsonl").write_text(_session("inside session"))
        (inside / "claude" / "linked").symlink_to(outside / "claude" / "proj")
        (inside / "claude" / "leak.jsonl").symlink_to(outside / "claude" / "proj" / "s.jsonl")
        (inside / "codex" / "2026" / "01" / "01" / "rollout-2.jsonl").symlink_to(
            outside / "codex" / "2026" / "01" / "01" / "rollout-1.jsonl"
        )
        (inside / "chat").mkdir()
        (inside / "chat" / "conversations.json").symlink_to(outside / "conversations.json")
        (inside / "wt").mkdir()
        (inside / "wt" / ".git").write_text(f"gitdir: {outside / 'repo' / '.git'}\n")
        (inside / "wt" / "note.md").write_text("# Worktree\ninside\n")
        one_commit_repository(inside / "repo", "inside commit")
        run_git(base, "clone", "-q", "--shared", str(outside / "repo"), str(inside / "borrowed"))
        (inside / "ünï").mkdir()
        (inside / "ünï" / "b.md").write_text("# B\nunicode folder\n")
        yield Tree(base, inside, outside)


@pytest.fixture(scope="module")
def mining(tree: Tree) -> MiningService:
    from memcastle.services.jobs import JobService  # the queue is never asked: only the check runs here

    roots = MiningRoots([tree.inside])
    registry = load_registry(builtin_connectors(max_file_bytes=1 << 20), access=roots)
    return MiningService(registry, JobService.__new__(JobService), roots)


PREFIXES = ("{inside}", "{outside}", "{base}", "", "~", "inside", "./", "file://{inside}", "x://", "{inside}/x://")
SEGMENTS = (
    "notes",
    "linkout",
    "linkin",
    "..",
    ".",
    "x://..",
    "://",
    "wt",
    "repo",
    "borrowed",
    "claude",
    "codex",
    "chat",
    "conversations.json",
    "leak.md",
    "a.md",
    "ünï",
    "%2e%2e",
    "outside",
    "inside",
    "",
    "\u202e",
)


def _locator(tree: Tree, prefix: str, segments: list[str]) -> str:
    start = prefix.format(inside=tree.inside, outside=tree.outside, base=tree.base)
    return "/".join([start, *segments]) if segments else start


def _read_everything(mining: MiningService, connector: str, locator: str) -> list[str]:
    """Check the source as a request would; when accepted, list and read every document. Returns the bodies."""
    adapter, spec = mining.check_source(connector, locator)
    bodies = []
    try:
        candidates = list(adapter.discover(spec, None))
    except SkipDocument:
        return bodies
    for candidate in candidates:
        try:
            bodies.append(adapter.read(spec, candidate).body)
        except SkipDocument:
            continue
    return bodies


def _outside_the_roots(tree: Tree, path: str) -> bool:
    resolved = Path(path).resolve()
    if resolved == tree.inside or tree.inside in resolved.parents:
        return False
    # The interpreter's own files (a lazy import), the null device git is given, and git's view of the process.
    tooling = (Path(sys.prefix), Path(sys.base_prefix), Path("/dev"), Path("/proc"))
    if any(resolved == t or t in resolved.parents for t in tooling):
        return False
    # A lazy import lists the folders on the import path (the suite's own among them): the import system's, not a read.
    return str(resolved) not in {str(Path(entry or ".").resolve()) for entry in sys.path}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# The probes of the attack, always run: a scheme, a `.git` file and borrowed objects pointing out, links out.
@example(prefix="{inside}/x://", segments=["..", "..", "outside", "notes"], connector="notes")
@example(prefix="{inside}", segments=["wt"], connector="git")
@example(prefix="{inside}", segments=["borrowed"], connector="git")
@example(prefix="{inside}", segments=["linkout", "repo"], connector="git")
@example(prefix="{inside}", segments=[], connector="directory")
@example(prefix="{inside}", segments=["claude"], connector="claude")
@example(prefix="{inside}", segments=["codex"], connector="codex")
@example(prefix="{inside}", segments=["chat"], connector="chatgpt")
@example(prefix="{inside}", segments=["linkout", "notes"], connector="notes")
@example(prefix="", segments=[], connector="directory")
@given(
    prefix=st.sampled_from(PREFIXES),
    segments=st.lists(st.sampled_from(SEGMENTS), max_size=3),
    connector=st.sampled_from(CONNECTORS),
)
def test_no_generated_locator_reads_outside_the_roots(
    tree: Tree, mining: MiningService, prefix: str, segments: list[str], connector: str
) -> None:
    locator = _locator(tree, prefix, segments)
    _SEEN.clear()
    _RECORDING[0] = True
    try:
        bodies = _read_everything(mining, connector, locator)
    except MemCastleError:
        bodies = []  # refused: a 400, 403 or 404 to the request
    finally:
        _RECORDING[0] = False
    read_outside = [(event, path) for event, path in _SEEN if _outside_the_roots(tree, path)]
    assert not read_outside, (connector, locator, read_outside)
    assert not [body for body in bodies if MARKER in body], (connector, locator)


@pytest.mark.parametrize(
    ("connector", "relative"),
    [("notes", "notes"), ("directory", "notes"), ("git", "repo"), ("claude", "claude"), ("notes", "ünï")],
)
def test_what_lies_inside_is_still_read(tree: Tree, mining: MiningService, connector: str, relative: str) -> None:
    """The fuzz test above cannot pass by refusing everything: the same check lets the inside be mined."""
    bodies = _read_everything(mining, connector, str(tree.inside / relative))
    assert bodies and not [body for body in bodies if MARKER in body]


def test_the_audit_hook_sees_a_read_outside(tree: Tree) -> None:
    """The recorder the fuzz test trusts does record a read outside the roots."""
    _SEEN.clear()
    _RECORDING[0] = True
    try:
        (tree.inside / "linkout" / "notes" / "secret.md").read_text()
    finally:
        _RECORDING[0] = False
    assert [path for _, path in _SEEN if _outside_the_roots(tree, path)]
