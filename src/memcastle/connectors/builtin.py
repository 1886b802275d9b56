"""The connectors that ship with MemCastle."""

from __future__ import annotations

from memcastle.connectors.chatgpt import ChatGPTConnector
from memcastle.connectors.claude import ClaudeConnector
from memcastle.connectors.codex import CodexConnector
from memcastle.connectors.contract import Connector
from memcastle.connectors.directory import DirectoryConnector
from memcastle.connectors.git import GitConnector
from memcastle.connectors.github import DEFAULT_API, DEFAULT_SITE, GitHubConnector
from memcastle.connectors.notes import NotesConnector
from memcastle.connectors.opencode import OpenCodeConnector
from memcastle.connectors.pi import PiConnector


def builtin_connectors(
    *, max_file_bytes: int, github_api_url: str = DEFAULT_API, github_wiki_url: str = DEFAULT_SITE
) -> dict[str, Connector]:
    connectors: list[Connector] = [
        DirectoryConnector(max_file_bytes=max_file_bytes),
        NotesConnector(max_file_bytes=max_file_bytes),
        GitConnector(),
        ClaudeConnector(),
        CodexConnector(),
        PiConnector(),
        OpenCodeConnector(),
        GitHubConnector(github_api_url, github_wiki_url),
        ChatGPTConnector(),
    ]
    return {c.name: c for c in connectors}
