"""The `github` connector: repositories' issues and pull requests, with their comments and reviews, over GitHub's
REST API (`mining.github_api_url`, https://api.github.com by default; a token from `GH_TOKEN`, else
`GITHUB_TOKEN`, never from a setting).

Which repositories: the required `include` patterns (`owner/repo`, `owner/*`, `owner/prefix-*`), less `exclude`,
less those without one of `topics` when given. What of them: every issue and pull request (GitHub's issues list
holds both) updated since the cursor — or `since` — and, with `labels`, only those carrying one of them; with
`paths`, only pull requests that touch a matching file. One document per issue or pull request: its text, then each
comment, review and review comment by author and date. With `wiki = true` (or `only`), each repository's wiki pages
too (or only them): a wiki is a git repository, cloned from `mining.github_wiki_url` (`github_wiki`).

GitHub's shapes, as its REST reference documents them: lists are pages of at most 100, the next one named by the
`Link` header's `rel="next"`; an exhausted rate limit is a 403 or 429 with `x-ratelimit-remaining: 0` (and
`x-ratelimit-reset`, epoch seconds) or a `retry-after`; an unknown or private repository is a 404; a bad token a 401.
"""

from __future__ import annotations

import fnmatch
import os
import re
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from memcastle.connectors.github_wiki import WikiPage, wiki_pages
from memcastle.connectors.transcript import identity_options
from memcastle.errors import InvalidRequest

if TYPE_CHECKING:
    import httpx  # imported when a GitHub source is read: the daemon starts without it

DEFAULT_API = "https://api.github.com"
DEFAULT_SITE = "https://github.com"  # where a repository's wiki is cloned from: <site>/<owner>/<repo>.wiki.git
PAGE = 100
TIMEOUT_SECONDS = 30.0
WAIT_AT_MOST = 10.0  # a `retry-after` this short is waited out once; a longer one stops the mine with the reason
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
MISSING = "missing repository"


class GitHubConnector(ConnectorBase):
    """Issues and pull requests of the repositories `include` selects, incrementally on their update time."""

    name = "github"
    source_kind = "other"
    default_room = None
    options: Mapping[str, OptionSpec] = {
        "include": OptionSpec("string", "required: repositories as owner/repo patterns, comma-separated (owner/*)"),
        "exclude": OptionSpec("string", "repositories left out, as owner/repo patterns, comma-separated"),
        "since": OptionSpec("date", "only issues and pull requests updated at or after this instant", identity=False),
        "labels": OptionSpec("string", "only issues and pull requests with one of these labels, comma-separated"),
        "topics": OptionSpec("string", "only repositories with one of these topics, comma-separated"),
        "paths": OptionSpec("string", "only pull requests touching a file matching one of these globs"),
        "wiki": OptionSpec("string", "the repositories' wiki pages too (true), or only them (only)"),
    }

    def __init__(self, api_url: str = DEFAULT_API, wiki_url: str = DEFAULT_SITE) -> None:
        self.api_url = api_url.rstrip("/")
        self.wiki_url = wiki_url.rstrip("/")
        self._local = threading.local()

    def identify(self, source: SourceSpec) -> str:
        return identify_source(self.name, self.api_url, identity_options(self.options, source.options))

    def default_wing(self, source: SourceSpec) -> str:
        return self.name

    def local_paths(self, source: SourceSpec) -> tuple[Path, ...]:
        return ()  # nothing on this machine is read

    def check(self, source: SourceSpec) -> None:
        """`include` is required and every pattern is `owner/repo` with a literal owner; `since` must be a date."""
        patterns = _patterns(source.options.get("include"))
        if not patterns:
            raise InvalidRequest(
                "the github connector needs include: the repositories to mine, as owner/repo patterns",
                field="options.include",
                help="memcastle mine github include=octo-org/*,octocat/hello-world",
            )
        for pattern in (*patterns, *_patterns(source.options.get("exclude"))):
            owner, _, repo = pattern.partition("/")
            if not repo or not _NAME.match(owner):
                raise InvalidRequest(
                    f"{pattern!r} is not owner/repo (the owner must be written out; the repository may be a pattern)",
                    field="options.include",
                )
        if source.options.get("since"):
            parse_instant(source.options["since"], field="options.since")
        _wiki(source)

    # --- discovery ------------------------------------------------------------------------------

    def discover(self, source: SourceSpec, cursor: str | None) -> list[Candidate]:
        """Every issue and pull request updated at or after the cursor (else `since`), oldest update first across
        the repositories, each advancing the cursor to its update time."""
        since = cursor
        if since is None and source.options.get("since"):
            since = parse_instant(source.options["since"], field="options.since")
        labels = set(_patterns(source.options.get("labels")))
        wiki = _wiki(source)
        with self._session() as client:
            repositories, missing = self._repositories(client, source)
            found: list[Candidate] = []
            for repo in repositories if wiki != "only" else ():
                params: dict[str, Any] = {"state": "all", "sort": "updated", "direction": "asc", "per_page": PAGE}
                if since:
                    params["since"] = _github_time(since)
                for item in _pages(client, f"/repos/{repo}/issues", params):
                    names = {str(label.get("name")) for label in item.get("labels") or [] if isinstance(label, dict)}
                    if labels and not labels & names:
                        continue
                    found.append(Candidate(f"{repo}#{item['number']}", cursor_after=item["updated_at"], hint=item))
        found.sort(key=lambda c: (str(c.cursor_after), c.external_id))
        # A repository `include` names that GitHub does not show is listed as a document that says so when read:
        # the mine reports it among its skips instead of leaving it out in silence; so is a wiki that cannot be read.
        pages = [page for repo in repositories for page in self._wiki_candidates(repo)] if wiki else []
        return [Candidate(repo, hint=MISSING) for repo in missing] + pages + found

    def _wiki_candidates(self, repo: str) -> list[Candidate]:
        """The wiki's pages, listed every mine (a wiki has no update time to list from; an unchanged page is
        recognized by its text and left as it is), without moving the cursor."""
        try:
            pages = wiki_pages(self.wiki_url, repo, _token())
        except SkipDocument as exc:
            return [Candidate(f"{repo}/wiki", hint={"skip": str(exc)})]
        return [Candidate(f"{repo}/wiki/{page.path}", hint=page) for page in pages]

    def _repositories(self, client: httpx.Client, source: SourceSpec) -> tuple[list[str], list[str]]:
        """The repositories `include` names, less `exclude`, less those without one of `topics`; and those it names
        outright that GitHub answers 404 for."""
        include, exclude = _patterns(source.options.get("include")), _patterns(source.options.get("exclude"))
        topics = set(_patterns(source.options.get("topics")))
        chosen: dict[str, Mapping[str, Any]] = {}
        missing: list[str] = []
        for pattern in include:
            owner, _, repo = pattern.partition("/")
            if any(ch in repo for ch in "*?["):
                listed = _pages(client, f"/users/{owner}/repos", {"per_page": PAGE, "type": "owner"})
                chosen.update((r["full_name"], r) for r in listed if fnmatch.fnmatchcase(r["full_name"], pattern))
            else:
                found = _get(client, f"/repos/{owner}/{repo}", missing_ok=True)
                if found is None:
                    missing.append(pattern)
                else:
                    chosen[str(found["full_name"])] = found
        return sorted(
            name
            for name, repo in chosen.items()
            if not any(fnmatch.fnmatchcase(name, p) for p in exclude)
            and (not topics or topics & set(repo.get("topics") or []))
        ), missing

    # --- reading --------------------------------------------------------------------------------

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        if candidate.hint == MISSING:
            raise SkipDocument("no such repository, or not one this token may read (GitHub answered 404)")
        if isinstance(candidate.hint, dict) and "skip" in candidate.hint:
            raise SkipDocument(str(candidate.hint["skip"]))
        if "/wiki/" in candidate.external_id:
            return self._read_wiki(candidate)
        repo, _, number = candidate.external_id.rpartition("#")
        with self._session() as client:
            item = (
                candidate.hint if isinstance(candidate.hint, dict) else _get(client, f"/repos/{repo}/issues/{number}")
            )
            assert item is not None
            pull = "pull_request" in item
            paths = _patterns(source.options.get("paths"))
            if paths:
                if not pull:
                    raise SkipDocument("an issue touches no file (paths selects pull requests)")
                files = [
                    f["filename"] for f in _pages(client, f"/repos/{repo}/pulls/{number}/files", {"per_page": PAGE})
                ]
                if not any(fnmatch.fnmatchcase(name, p) for name in files for p in paths):
                    raise SkipDocument("touches no file the paths option names")
            replies = [
                (c.get("created_at"), f"@{_login(c)} commented on {c.get('created_at')}:", c.get("body"))
                for c in _pages(client, f"/repos/{repo}/issues/{number}/comments", {"per_page": PAGE})
            ]
            if pull:
                for review in _pages(client, f"/repos/{repo}/pulls/{number}/reviews", {"per_page": PAGE}):
                    state = str(review.get("state") or "").lower().replace("_", " ")
                    replies.append((review.get("submitted_at"), f"@{_login(review)} reviewed ({state}) on "
                                    f"{review.get('submitted_at')}:", review.get("body")))  # fmt: skip
                for note in _pages(client, f"/repos/{repo}/pulls/{number}/comments", {"per_page": PAGE}):
                    where = f"{note.get('path')}:{note.get('line') or note.get('original_line') or ''}".rstrip(":")
                    replies.append((note.get("created_at"), f"@{_login(note)} on {where}, {note.get('created_at')}:",
                                    note.get("body")))  # fmt: skip
        kind = "pull request" if pull else "issue"
        labels = [str(label.get("name")) for label in item.get("labels") or [] if isinstance(label, dict)]
        head = (
            f"{kind} #{number} in {repo} · {item.get('state')} · opened by @{_login(item)} on {item.get('created_at')}"
        )
        parts = [f"# {item.get('title') or ''}".rstrip(), head + (f" · labels: {', '.join(labels)}" if labels else "")]
        if item.get("body"):
            parts.append(str(item["body"]).strip())
        for _, heading, body in sorted(replies, key=lambda r: str(r[0] or "")):
            parts.append(f"{heading}\n{str(body or '').strip()}".strip())
        metadata = {
            "repository": repo,
            "number": int(number),
            "kind": "pull_request" if pull else "issue",
            "state": item.get("state"),
            "author": _login(item),
            "labels": labels,
            "created_at": item.get("created_at"),
            "updated_at": item.get("updated_at"),
            "closed_at": item.get("closed_at"),
            "comments": len(replies),
        }
        return RawDocument(
            external_id=candidate.external_id,
            body="\n\n".join(parts),
            metadata=metadata,
            occurred_at=parse_instant(str(item["created_at"])) if item.get("created_at") else None,
            title=str(item.get("title") or candidate.external_id),
            uri=str(item.get("html_url") or f"https://github.com/{repo}/issues/{number}"),
        )

    def _read_wiki(self, candidate: Candidate) -> RawDocument:
        """One wiki page: its text as written, its time the last commit that changed it."""
        repo, _, path = candidate.external_id.partition("/wiki/")
        page = candidate.hint
        if not isinstance(page, WikiPage):  # listed by an earlier run (a resumed mine): read the wiki again
            page = next((p for p in wiki_pages(self.wiki_url, repo, _token()) if p.path == path), None)
            if page is None:
                raise SkipDocument("the page is no longer in the wiki")
        metadata = {
            "repository": repo,
            "kind": "wiki",
            "page": page.title,
            "path": page.path,
            "updated_at": page.changed_at,
        }
        return RawDocument(
            external_id=candidate.external_id,
            body=page.text.strip() or page.title,
            metadata=metadata,
            occurred_at=page.changed_at,
            title=page.title,
            uri=f"{self.wiki_url}/{repo}/wiki/{Path(page.path).stem}",
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        repo = str(raw.metadata["repository"])
        return CanonicalDocument(
            kind="other",
            segments=tuple(raw.body.split("\n\n")),
            title=raw.title,
            room=repo.replace("/", "-"),
            name=raw.external_id,
            uri=raw.uri,
            tags=("github", str(raw.metadata["kind"]).replace("_", "-")),
        )

    @contextmanager
    def _session(self) -> Iterator[httpx.Client]:
        """This thread's client for the current token, kept between documents: a new one per document spent more
        CPU setting up its TLS context than reading the issue (27 ms a document)."""
        token = _token()
        found: tuple[str | None, httpx.Client] | None = getattr(self._local, "client", None)
        if found is None or found[0] != token:
            if found is not None:
                found[1].close()
            headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
            if token:
                headers["Authorization"] = f"Bearer {token}"
            import httpx

            client = httpx.Client(base_url=self.api_url, headers=headers, timeout=TIMEOUT_SECONDS, trust_env=False)
            found = (token, client)
            self._local.client = found
        yield found[1]


def _token() -> str | None:
    return os.environ.get("GH_TOKEN") or os.environ.get("GITHUB_TOKEN") or None


def _wiki(source: SourceSpec) -> str | None:
    """The `wiki` option: None (issues and pull requests only), "true" (and the wiki pages) or "only"."""
    value = (source.options.get("wiki") or "").strip().lower()
    if value in ("", "false", "no"):
        return None
    if value in ("true", "yes", "only"):
        return "only" if value == "only" else "true"
    raise InvalidRequest(f"wiki must be true, false or only, not {value!r}", field="options.wiki")


def _pages(client: httpx.Client, path: str, params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every item of a paginated list, following `Link: <…>; rel="next"`."""
    url: str | None = path
    query: Mapping[str, Any] | None = params
    while url is not None:
        answer = _request(client, url, query)
        items = answer.json()
        if not isinstance(items, list):
            raise SkipDocument(f"GitHub answered {url} with something other than a list")
        yield from (item for item in items if isinstance(item, dict))
        found = _NEXT.search(answer.headers.get("link", ""))
        url, query = (found.group(1), None) if found else (None, None)


def _get(client: httpx.Client, path: str, *, missing_ok: bool = False) -> dict[str, Any] | None:
    answer = _request(client, path, None, missing_ok=missing_ok)
    if answer.status_code == 404:
        return None
    data = answer.json()
    return data if isinstance(data, dict) else None


def _request(
    client: httpx.Client, url: str, params: Mapping[str, Any] | None, *, missing_ok: bool = False
) -> httpx.Response:
    """One GET; a spent rate limit waits a short `retry-after` out once, else stops the mine with when it resets."""
    import httpx  # loaded already: the client was made with it

    for attempt in (1, 2):
        try:
            answer = client.get(url, params=params)
        except httpx.HTTPError as exc:
            raise SkipDocument(f"GitHub could not be reached: {exc}") from None
        if answer.status_code in (403, 429) and _rate_limited(answer):
            wait = float(answer.headers.get("retry-after") or 0)
            if attempt == 1 and 0 < wait <= WAIT_AT_MOST:
                time.sleep(wait)
                continue
            reset = answer.headers.get("x-ratelimit-reset")
            when = f"; it resets at {from_epoch(int(reset))}" if reset and reset.isdigit() else ""
            raise SkipDocument(f"GitHub's rate limit is spent{when}: mine again then (a GH_TOKEN raises the limit)")
        if answer.status_code == 401:
            raise SkipDocument("GitHub refused the token (401): set GH_TOKEN (or GITHUB_TOKEN) to a valid one")
        if answer.status_code == 404 and missing_ok:
            return answer
        if answer.status_code >= 400:
            message = _message(answer)
            raise SkipDocument(f"GitHub answered {answer.status_code} for {url}: {message}")
        return answer
    raise AssertionError("unreachable")


def _rate_limited(answer: httpx.Response) -> bool:
    return answer.headers.get("x-ratelimit-remaining") == "0" or "retry-after" in answer.headers


def _message(answer: httpx.Response) -> str:
    try:
        data = answer.json()
    except ValueError:
        return answer.text[:200]
    return str(data.get("message") if isinstance(data, dict) else data)[:200]


def _login(record: Mapping[str, Any]) -> str:
    user = record.get("user")
    return str(user.get("login")) if isinstance(user, dict) and user.get("login") else "ghost"


def _patterns(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _github_time(instant: str) -> str:
    """An instant as GitHub's `since` reads it: `YYYY-MM-DDTHH:MM:SSZ`."""
    return parse_instant(instant)[:19] + "Z"
