"""The `git` connector: one document per commit of a local repository's history, read through the git CLI.

Only local read commands run (rev-parse, rev-list, show, diff-tree, config, symbolic-ref, merge-base); the
environment forbids every transport, so nothing here can reach the network.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from memcastle.clock import from_epoch, parse_instant
from memcastle.connectors.contract import (
    Candidate,
    CanonicalDocument,
    ConnectorBase,
    OptionSpec,
    RawDocument,
    SkipDocument,
    SourceSpec,
    identify_source,
)
from memcastle.connectors.project import project_wing
from memcastle.errors import InvalidRequest

_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_FILES_HEADING = "Files:"
_NAME_SUBJECT_CHARS = 60
# Variables that would point git at some other repository than the locator (e.g. when the daemon runs from a hook).
_REPO_LOCATING_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)
# %B goes last: it is the only field that may hold newlines, so splitting at NUL with a bounded count is safe.
_HEADER_FORMAT = "%H%x00%P%x00%an%x00%ae%x00%cn%x00%ce%x00%at%x00%ct%x00%s%x00%B"
_HEADER_FIELDS = 10


@dataclass(frozen=True)
class _Repository:
    """What discovery resolved once, handed to `read` through `Candidate.hint`."""

    root: Path
    branch: str | None
    remote: str | None


@dataclass(frozen=True)
class _FileChange:
    """One changed path; counts are None for binary files or when blobs are unavailable."""

    path: str
    added: int | None
    deleted: int | None


class _GitFailed(Exception):
    """A git command exited non-zero; carries its first line of stderr."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class GitConnector(ConnectorBase):
    """Mines a repository's commits (oldest first) on one branch."""

    name = "git"
    source_kind = "commit"
    options: Mapping[str, OptionSpec] = {
        "branch": OptionSpec("string", "the branch (or ref) to mine; default: the branch HEAD points at"),
        "since": OptionSpec("date", "only commits committed at or after this instant", identity=False),
    }

    def identify(self, source: SourceSpec) -> str:
        """The repository root plus `branch` when given; a path outside any repository identifies as itself."""
        try:
            root = _repository_root(source.path)
        except SkipDocument:
            root = source.path.resolve()
        present = {
            key: value for key, value in source.options.items() if key in self.options and self.options[key].identity
        }
        return identify_source(self.name, str(root), present)

    def local_paths(self, source: SourceSpec) -> Iterator[Path]:
        """The locator, then (once it is known to be allowed) everything git will read for it: the work tree, the
        git folder a `.git` file points to, the common folder of a worktree and the object stores its `alternates`
        borrow from."""
        yield source.path
        try:
            root = _repository_root(source.path)
            git_dir = _git_path(source.path, ["rev-parse", "--absolute-git-dir"])
            common = _git_path(source.path, ["rev-parse", "--path-format=absolute", "--git-common-dir"])
        except (SkipDocument, _GitFailed):
            return  # not a repository: `check` says so
        yield from (root, git_dir, common)
        yield from _alternates(common / "objects")

    def check(self, source: SourceSpec) -> None:
        """Refuse a locator that is not inside a git repository, when the mine is asked for."""
        try:
            _repository_root(source.path)
        except SkipDocument as exc:
            raise InvalidRequest(exc.reason, field="locator", help="point it at a git work tree") from None

    def default_wing(self, source: SourceSpec) -> str:
        """The project wing of the repository root."""
        try:
            return project_wing(_repository_root(source.path))
        except SkipDocument:
            return project_wing(source.path)

    def change_token(self, source: SourceSpec) -> str | None:
        """The branch's tip: what a poll compares (`triggers.poll`)."""
        repository = _open(source)
        return _resolve_tip(repository.root, source.options.get("branch"))

    def discover(self, source: SourceSpec, cursor: str | None) -> list[Candidate]:
        """Commits of the branch, oldest first; after `cursor` when it is an ancestor of the tip, else all."""
        repository = _open(source)
        tip = _resolve_tip(repository.root, source.options.get("branch"))
        if tip is None:
            return []
        since = source.options.get("since")
        since_stamp = parse_instant(since, field="options.since") if since else None
        args = ["rev-list", "--topo-order", "--reverse", "--timestamp", tip]
        # An unknown or non-ancestor cursor means history was rewritten: re-list everything and let the pipeline's
        # revision check skip what is unchanged.
        if cursor and _is_ancestor(repository.root, cursor, tip):
            args.append(f"^{cursor}")
        candidates = []
        for line in _git_text(repository.root, args).splitlines():
            stamp, sha = line.split(" ", 1)
            if since_stamp is not None and from_epoch(int(stamp)) < since_stamp:
                continue
            candidates.append(Candidate(external_id=sha, cursor_after=sha, hint=repository))
        return candidates

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        """One commit: its message and changed files, with a metadata snapshot."""
        sha = candidate.external_id
        if not _SHA.fullmatch(sha):
            raise SkipDocument(f"not a commit id: {sha!r}")
        repository = candidate.hint if isinstance(candidate.hint, _Repository) else _open(source)
        try:
            header = _git(
                repository.root,
                [
                    "show",
                    "-s",
                    "--no-color",
                    "--no-show-signature",
                    "--no-use-mailmap",
                    "--encoding=UTF-8",
                    f"--format={_HEADER_FORMAT}",
                    f"{sha}^{{commit}}",
                ],
            )
        except _GitFailed as exc:
            raise SkipDocument(f"cannot read commit {sha}: {exc.message}") from None
        fields = header.split(b"\x00", _HEADER_FIELDS - 1)
        if len(fields) != _HEADER_FIELDS:
            raise SkipDocument(f"cannot read commit {sha}: unexpected output from git show")
        decoded = [field.decode("utf-8", "replace") for field in fields]
        full_sha, parents_text, author, author_email, committer, committer_email, authored, committed = decoded[:8]
        subject, message = decoded[8], decoded[9].rstrip()
        parents = parents_text.split()
        warnings: list[str] = []
        if any(_is_invalid_utf8(field) for field in fields):
            warnings.append("commit text is not valid UTF-8; undecodable bytes were replaced")
        changes = _changed_files(repository.root, full_sha, parents, warnings)
        committed_at = from_epoch(int(committed))
        metadata: dict[str, Any] = {
            "sha": full_sha,
            "author": {"name": author, "email": author_email},
            "committer": {"name": committer, "email": committer_email},
            "authored_at": from_epoch(int(authored)),
            "committed_at": committed_at,
            "parents": parents,
            "merge": len(parents) > 1,
            "subject": subject,
            "files": [change.path for change in changes],
        }
        if repository.branch is not None:
            metadata["branch"] = repository.branch
        if repository.remote is not None:
            metadata["remote"] = repository.remote
        body = "\n\n".join(part for part in (message, _render_files(changes)) if part)
        return RawDocument(
            external_id=full_sha,
            body=body,
            metadata=metadata,
            occurred_at=committed_at,
            title=subject,
            uri=f"git:{full_sha}",
            warnings=tuple(warnings),
            first_line=1,
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        """Message and file list as two segments; named by short sha and subject."""
        sha = str(raw.metadata.get("sha", raw.external_id))
        subject = raw.title if raw.title is not None else str(raw.metadata.get("subject", ""))
        # Segments re-join with a blank line, so splitting at a look-alike heading inside a path loses nothing.
        split_at = raw.body.rfind(f"\n\n{_FILES_HEADING}\n")
        segments = (raw.body,) if split_at < 0 else (raw.body[:split_at], raw.body[split_at + 2 :])
        return CanonicalDocument(
            kind="commit",
            segments=segments,
            title=subject or None,
            room="commits",
            name=_document_name(sha, subject),
            uri=raw.uri or f"git:{sha}",
            tags=(),
        )


def _open(source: SourceSpec) -> _Repository:
    root = _repository_root(source.path)
    branch = source.options.get("branch")
    if branch is None:
        branch = _current_branch(root)
    return _Repository(root=root, branch=branch, remote=_origin_url(root))


def _repository_root(path: Path) -> Path:
    """The work tree's top level (or the git dir of a bare repository)."""
    try:
        git_dir = _git_path(path, ["rev-parse", "--absolute-git-dir"])
    except _GitFailed as exc:
        raise SkipDocument(f"not a git repository: {path} ({exc.message})") from None
    if _git_text(path, ["rev-parse", "--is-bare-repository"]).strip() == "true":
        return git_dir
    try:
        return _git_path(path, ["rev-parse", "--show-toplevel"])
    except _GitFailed:
        return git_dir  # inside the .git folder itself there is no work tree to name


def _alternates(objects: Path, depth: int = 0) -> Iterator[Path]:
    """The object folders `objects/info/alternates` borrows from, recursively (git follows five levels)."""
    try:
        lines = (objects / "info" / "alternates").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or depth >= 5:
            continue
        found = (objects / line).resolve()
        yield found
        yield from _alternates(found, depth + 1)


def _current_branch(root: Path) -> str | None:
    """The branch HEAD points at; None when HEAD is detached."""
    try:
        return _git_text(root, ["symbolic-ref", "--quiet", "--short", "HEAD"]).strip() or None
    except _GitFailed:
        return None


def _resolve_tip(root: Path, branch: str | None) -> str | None:
    """The commit to mine up to; None for a repository without commits."""
    ref = branch or "HEAD"
    if ref.startswith("-"):
        raise SkipDocument(f"not a valid branch name: {ref!r}")
    try:
        return _git_text(root, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"]).strip()
    except _GitFailed:
        pass
    if not _git_text(root, ["rev-list", "--max-count=1", "--all"]).strip():
        return None
    raise SkipDocument(f"no branch {ref!r} in {root}")


def _is_ancestor(root: Path, cursor: str, tip: str) -> bool:
    if not _SHA.fullmatch(cursor):
        return False
    try:
        _git(root, ["merge-base", "--is-ancestor", cursor, tip])
    except _GitFailed:
        return False
    return True


def _origin_url(root: Path) -> str | None:
    try:
        url = _git_text(root, ["config", "--get", "remote.origin.url"]).strip()
    except _GitFailed:
        return None
    return _without_credentials(url) if url else None


def _without_credentials(url: str) -> str:
    """Drop user:password (and http(s) user tokens) so that secrets never land in a metadata snapshot."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc or not (parts.password or parts.scheme in ("http", "https")):
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _changed_files(root: Path, sha: str, parents: Sequence[str], warnings: list[str]) -> list[_FileChange]:
    """Paths changed by the commit; a merge is compared with its first parent, a root commit with nothing."""
    against = [parents[0], sha] if parents else ["--root", sha]
    diff = ["diff-tree", "-r", "-z", "--no-commit-id", "--no-renames", "--no-ext-diff", "--no-textconv"]
    try:
        return _parse_numstat(_git(root, [*diff, "--numstat", *against]))
    except _GitFailed:
        pass
    # Counts need blobs, which a partial clone may lack and may not fetch; names need only trees.
    try:
        names = _git(root, [*diff, "--name-only", *against])
    except _GitFailed as exc:
        raise SkipDocument(f"cannot list files of commit {sha}: {exc.message}") from None
    warnings.append("line counts unavailable (missing objects); files listed without them")
    return [_FileChange(_decode_path(name), None, None) for name in names.split(b"\x00") if name]


def _parse_numstat(output: bytes) -> list[_FileChange]:
    changes = []
    for record in output.split(b"\x00"):
        if not record:
            continue
        added, deleted, path = record.split(b"\t", 2)
        changes.append(_FileChange(_decode_path(path), _count(added), _count(deleted)))
    return changes


def _count(text: bytes) -> int | None:
    return None if text == b"-" else int(text)


def _decode_path(raw: bytes) -> str:
    # Metadata must encode as UTF-8 JSON, so a (rare) non-UTF-8 path gets U+FFFD rather than lone surrogates.
    return raw.decode("utf-8", "replace")


def _render_files(changes: Sequence[_FileChange]) -> str:
    if not changes:
        return ""
    lines = [_FILES_HEADING]
    for change in changes:
        if change.added is None or change.deleted is None:
            lines.append(change.path)
        else:
            lines.append(f"{change.path} (+{change.added} -{change.deleted})")
    return "\n".join(lines)


def _document_name(sha: str, subject: str) -> str:
    short = subject if len(subject) <= _NAME_SUBJECT_CHARS else subject[: _NAME_SUBJECT_CHARS - 1].rstrip() + "…"
    return f"{sha[:12]} {short}".rstrip()


def _is_invalid_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _git_text(cwd: Path, args: Sequence[str]) -> str:
    return _git(cwd, args).decode("utf-8", "replace")


def _git_path(cwd: Path, args: Sequence[str]) -> Path:
    """A path git printed, decoded the way the OS encodes file names."""
    return Path(os.fsdecode(_git(cwd, args).rstrip(b"\n")))


def _git(cwd: Path, args: Sequence[str]) -> bytes:
    """Run one read-only git command in `cwd` and return its stdout; `_GitFailed` on a non-zero exit."""
    argv = ["git", "--no-pager", "-C", str(cwd), "-c", "core.quotepath=off", *args]
    try:
        done = subprocess.run(argv, env=_environment(), stdin=subprocess.DEVNULL, capture_output=True, check=False)
    except FileNotFoundError:
        raise SkipDocument("the git executable was not found on PATH") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _GitFailed(lines[0] if lines else f"git {args[0]} exited with {done.returncode}")
    return done.stdout


def _environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in _REPO_LOCATING_ENV}
    env["GIT_TERMINAL_PROMPT"] = "0"
    # A transport named "none" does not exist, so every fetch (including a partial clone's lazy fetch) is refused.
    env["GIT_ALLOW_PROTOCOL"] = "none"
    env["GIT_NO_LAZY_FETCH"] = "1"
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_CONFIG_NOSYSTEM"] = "1"  # the machine's /etc/gitconfig is no part of a source
    return env
