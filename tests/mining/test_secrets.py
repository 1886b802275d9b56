"""Secrets stay out: ignore files are honoured, secret files are skipped with a reason, credentials inside text are
redacted before anything is stored, indexed or embedded — checked by reading every byte of the palace."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import planted
import pytest
from addresses import LOCAL
from clocks import DistinctClock
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from planted import ANTHROPIC, AWS, ENV_TOKEN, GITHUB, GITLAB, JWT, OPENAI, PLANTED, PRIVATE_KEY, SLACK, URL_PASSWORD
from waiting import wait_until

from memcastle.app import Palace, build
from memcastle.config import Settings, load_settings
from memcastle.connectors.files import walk_files
from memcastle.connectors.secrets import RULES, Redactor, is_config_name, secret_content_reason, secret_file_reason
from memcastle.daemon import http_app
from memcastle.model.requests import MineRequest

IGNORED_PASSWORD = "hunter2-" + "4815162342"
IGNORED_TEXT = "ignored-" + "phrase-4815162342"
SECRETS = (*(p.value for p in PLANTED), IGNORED_PASSWORD, IGNORED_TEXT)
ORDINARY_CODE = 'password = request.form["password"]\ntoken = tokenizer.next()\nmax_tokens: int = 100\n'


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def context(where: str) -> list[str]:
    return [p.context for p in PLANTED if p.where == where]


@dataclass(frozen=True)
class Tree:
    project: Path
    repository: Path
    notes: Path
    sessions: Path
    codex: Path
    chatgpt: Path


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@e"
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    """A project, a repository, a notes vault and three kinds of transcript, holding every planted credential that
    a source can (the rest are written through the API by the test)."""
    project = tmp_path / "work" / "shop"
    (project / ".git").mkdir(parents=True)
    write(project / ".gitignore", "id_ed25519\nconfig.local.yaml\nlogs/\n")
    write(project / "id_ed25519", PRIVATE_KEY)
    write(project / "config.local.yaml", f"password: {IGNORED_PASSWORD}\n")
    write(project / "logs" / "debug.txt", IGNORED_TEXT)
    write(project / "src" / ".gitignore", "*.local.py\n")
    write(project / "src" / "settings.local.py", f"SECRET = '{IGNORED_TEXT}'\n")
    write(project / "src" / "app.py", "\n".join(context("project src/app.py")[:1]) + f"\n{ORDINARY_CODE}"
          + "\n".join(context("project src/app.py")[1:]) + "\n")  # fmt: skip
    for where in {p.where for p in PLANTED if p.where.startswith("project ") and p.where != "project src/app.py"}:
        name = where.removeprefix("project ")
        if name.startswith("file name"):
            continue
        text = "\n".join(context(where)) + "\n"
        if name == "config.yaml":
            text = f"db:\n  host: db.internal\n{text}  token: ${{TOKEN}}\n"
        elif name == "kubeconfig":
            text = f"apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n{text}"
        write(project / name, text)
    write(project / "tokens" / context("project file name tokens/<value>.txt")[0], "the CI token, rotated monthly\n")
    for name in ("server.key", "cert.pem", "credentials.json", "release.jks", "prod.env"):
        write(project / name, f"{IGNORED_TEXT}\n")
    write(project / ".memcastleignore", "private/\n")
    write(project / "private" / "diary.md", IGNORED_TEXT)

    repository = tmp_path / "work" / "history"
    repository.mkdir(parents=True)
    _git(repository, "init", "-q", "-b", "main")
    _git(repository, "remote", "add", "origin", context("git remote url")[0])
    write(repository / "deploy.sh", "echo deploy\n")
    _git(repository, "add", "deploy.sh")
    _git(repository, "commit", "-q", "-m", context("git commit message")[0])

    notes = tmp_path / "work" / "vault"
    write(notes / ".memcastleignore", "drafts/\n")
    write(notes / "drafts" / "unfinished.md", f"# Draft\n{IGNORED_TEXT}\n")
    front = "\n".join([*context("notes ops.md front matter"), *context("notes ops.md front matter title"),
                       *context("notes ops.md front matter tags")])  # fmt: skip
    write(notes / "ops.md", f"---\n{front}\n---\n# Ops\n{context('notes ops.md body')[0]}\n")
    write(notes / "aws.md", f"# AWS\n{context('notes aws.md body')[0]}\n")

    sessions = tmp_path / "work" / "claude" / "-home-alex-shop"
    sessions.mkdir(parents=True)
    lines = [
        _turn("user", " and ".join(context("claude session user turn")), 1),
        _turn("assistant", "\n".join(context("claude session assistant turn")), 2),
    ]
    (sessions / "0d6d0c34-1f0e-4a57-9a57-4b0c8bb3e0f1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    codex = tmp_path / "work" / "codex" / "2026" / "11" / "02"
    codex.mkdir(parents=True)
    meta = {"id": "0199713c-5b2e-7d31-9a4f-2f6c1e8b7a11", "timestamp": "2026-11-02T10:00:00Z", "cwd": "/w/shop",
            "originator": "codex_cli_rs", "cli_version": "0.39.0"}  # fmt: skip
    call = {"type": "function_call", "name": "shell", "call_id": "c1",
            "arguments": json.dumps({"command": ["bash", "-lc", context("codex session shell call")[0]]})}  # fmt: skip
    ask = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "set up the env"}]}
    rollout = [
        {"timestamp": "2026-11-02T10:00:00Z", "type": "session_meta", "payload": meta},
        {"timestamp": "2026-11-02T10:00:01Z", "type": "response_item", "payload": ask},
        {"timestamp": "2026-11-02T10:00:02Z", "type": "response_item", "payload": call},
    ]
    (codex / "rollout-2026-11-02T10-00-00-0199713c.jsonl").write_text(
        "\n".join(json.dumps(line) for line in rollout) + "\n", encoding="utf-8"
    )

    chatgpt = tmp_path / "work" / "chatgpt"
    chatgpt.mkdir()
    message = {"id": "m1", "author": {"role": "user"}, "create_time": 1762077600.0,
               "content": {"content_type": "text", "parts": [context("chatgpt message")[0]]}}  # fmt: skip
    title = context("chatgpt conversation title")[0]
    conversation = {"conversation_id": "c0ffee00-0000-4000-8000-000000000001", "title": title,
                    "create_time": 1762077600.0, "current_node": "m1",
                    "mapping": {"m1": {"id": "m1", "message": message, "parent": None, "children": []}}}  # fmt: skip
    (chatgpt / "conversations.json").write_text(json.dumps([conversation]), encoding="utf-8")
    return Tree(project, repository, notes, sessions.parent, codex.parents[2], chatgpt)


def _turn(role: str, text: str, n: int) -> str:
    return json.dumps(
        {
            "type": role,
            "sessionId": "0d6d0c34-1f0e-4a57-9a57-4b0c8bb3e0f1",
            "cwd": "/home/alex/shop",
            "uuid": f"00000000-0000-0000-0000-00000000000{n}",
            "timestamp": f"2026-11-0{n}T10:00:00Z",
            "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]},
        }
    )


@pytest.fixture
def embedding_palace(xdg_home: Any, palace_dir: Path) -> Iterator[Palace]:
    """A palace with the builtin embedding model and the heuristic extractor on: every derived store gets text."""
    settings: Settings = load_settings(
        flags={"palace": str(palace_dir), "jobs.drain_seconds": 3.0, "embeddings.provider": "builtin"},
        env={},
        config_file=None,
    )
    built = build(settings, now=DistinctClock())
    built.start()
    try:
        yield built
    finally:
        built.stop()


def mined(palace: Palace, connector: str, locator: Path) -> dict[str, Any]:
    job = palace.services.mining.submit_mine(MineRequest(connector, str(locator), {}, wing="secrets")).job
    done = wait_until(lambda: (j := palace.services.jobs.get_job(job.id)).is_finished and j, what="the mine")
    assert done.status.value == "completed", done.error
    return dict(done.result)


def settled(palace: Palace) -> bool:
    active = [j for j in palace.services.jobs.list_jobs(None, None, 200) if j.status.value in ("queued", "running")]
    status = palace.services.status.status().to_json()
    assert status["embeddings"]["provider"] == "builtin"
    return not active and status["embeddings"]["pending"] == 0 and not status["extraction"].get("pending")


def written_through_the_api(client: TestClient) -> None:
    """The planted values an agent or a person writes: notes, a diary, a checkpoint, facts, a supersession."""
    only = {p.where: p.context for p in PLANTED}
    note = client.post(
        "/api/notes",
        json={
            "content": only["note content"],
            "wing": "secrets",
            "tags": ["ops", only["note tag"]],
            "name": only["note name"],
        },  # fmt: skip
    )
    assert note.status_code == 201, note.json()
    assert client.post("/api/diary", json={"agent": "claude", "content": only["diary entry"]}).status_code == 201
    item = {"content": only["checkpoint item content"], "wing": "secrets", "name": only["checkpoint item name"],
            "tags": [only["checkpoint item tag"]],
            "fact": {"subject": "Shop", "predicate": "uses", "object": only["checkpoint fact"]}}  # fmt: skip
    checkpoint = client.post("/api/checkpoint", json={"items": [item]})
    assert checkpoint.status_code in (200, 201), checkpoint.json()
    fact = client.post("/api/facts", json={"subject": "Shop", "predicate": "depends_on",
                                           "object": only["explicit fact object"]})  # fmt: skip
    assert fact.status_code == 201, fact.json()
    other = client.post("/api/facts", json={"subject": "Ledger", "predicate": "uses", "object": "Redis"}).json()
    invalidated = client.post(f"/api/facts/{other['id']}/invalidate", json={"reason": only["fact invalidation reason"]})
    assert invalidated.status_code == 200, invalidated.json()
    drawer = note.json()["drawer"]["id"]
    replaced = client.post(f"/api/drawers/{drawer}/supersede", json={"content": only["drawer supersession"]})
    assert replaced.status_code in (200, 201), replaced.json()


def test_no_planted_secret_reaches_any_file_of_the_palace(
    tree: Tree, embedding_palace: Palace, palace_dir: Path
) -> None:
    """All 51 planted values, in every kind of source and every field a write can carry, then every byte of the
    palace (database, write-ahead log, vectors) searched for each."""
    files = mined(embedding_palace, "directory", tree.project)
    history = mined(embedding_palace, "git", tree.repository)
    notes = mined(embedding_palace, "notes", tree.notes)
    chats = mined(embedding_palace, "claude", tree.sessions)
    rollouts = mined(embedding_palace, "codex", tree.codex)
    export = mined(embedding_palace, "chatgpt", tree.chatgpt / "conversations.json")
    with TestClient(http_app(embedding_palace), base_url=LOCAL) as client:
        written_through_the_api(client)
    wait_until(lambda: settled(embedding_palace), what="embedding and extraction to finish")
    embedding_palace.stop()

    skipped = {s["document"]: s["reason"] for s in files["skipped_documents"]}
    for name in ("server.key", "cert.pem", "credentials.json", "release.jks", "prod.env", "deploy.txt", "deploy.ppk"):
        assert skipped[name].startswith("secret file"), skipped
    for ignored in ("id_ed25519", "config.local.yaml", "logs/debug.txt", "src/settings.local.py", "private/diary.md"):
        assert ignored not in skipped
    found = {
        kind: count
        for result in (files, history, notes, chats, rollouts, export)
        for kind, count in result["redacted_by_kind"].items()
    }
    mined_kinds = {p.kind for p in PLANTED if not p.where.startswith(("note", "diary", "checkpoint", "explicit",
                                                                       "drawer", "fact", "git remote"))}  # fmt: skip
    assert mined_kinds - {"secret file"} <= set(found), (mined_kinds, found)

    leaked = []
    for path in sorted(p for p in palace_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        leaked += [(path.name, secret) for secret in SECRETS if secret.encode() in data]
    assert not leaked, leaked


def test_what_is_kept_reads_as_the_source_with_markers_in_place(tree: Tree, palace: Palace) -> None:
    mined(palace, "directory", tree.project)
    texts = {
        d.source.origin.document: d.content
        for d in palace.services.drawers.list_drawers("secrets", None, 50, None).items
    }
    assert texts["src/app.py"] == (
        f'GITHUB = "[redacted:github-token]"\n{ORDINARY_CODE}AWS_KEY = "[redacted:aws-access-key]"\n'
    )
    assert "password: [redacted:password]\n  token: ${TOKEN}" in texts["config.yaml"]
    assert "postgresql://shop:[redacted:url-password]@db/shop" in texts["README.md"]
    assert "redis://:[redacted:url-password]@cache:6379/0" in texts["cache.md"]
    assert texts["env.production"] == "RAILS_MASTER_KEY=[redacted:env-secret]\n"
    assert texts["settings.py"] == 'DB_PASSWORD = "[redacted:code-secret]"\n'
    assert "client-key-data: [redacted:password]" in texts["kubeconfig"]
    # A file named after a token is known by its redacted name, kept apart from others by a digest of the original.
    (named,) = [document for document in texts if document.startswith("tokens/")]
    assert (
        named.startswith("tokens/[redacted:github-token].txt#")
        and len(named) == len("tokens/[redacted:github-token].txt#") + 16
    )


def test_a_re_mine_of_unchanged_redacted_files_changes_nothing(tree: Tree, palace: Palace) -> None:
    first = mined(palace, "directory", tree.project)
    again = mined(palace, "directory", tree.project)
    assert again["unchanged"] == first["created"] and again["created"] == again["superseded"] == 0


# ------------------------------------------------------------------------------------------------------ the rules


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"key {AWS} here", "aws-access-key"),
        ("aws_secret_access_key = " + "Zq7Xw2Lm9Pv4Rt8Yk3Nb6Hc1Jd5Fg0Sa7Ue2Wi3K", "aws-secret-key"),
        (f"token {GITHUB}", "github-token"),
        ("github_pat_" + "11AAAAAAA0" + "Zq7Xw2Lm9Pv4Rt8Yk3Nb6Hc1Jd5", "github-token"),
        (GITLAB, "gitlab-token"),
        (SLACK, "slack-token"),
        ("https://hooks.slack.com/services/T0AAAA/B0BBBB/Zq7Xw2Lm9Pv4", "slack-webhook"),
        (OPENAI, "openai-key"),
        (ANTHROPIC, "anthropic-key"),
        ("AIza" + "SyZq7Xw2Lm9Pv4Rt8Yk3Nb6Hc1Jd5Fg0Sa7", "google-api-key"),
        ("sk_live_" + "Zq7Xw2Lm9Pv4Rt8Yk3Nb6Hc1", "stripe-key"),
        (f"Bearer {JWT}", "jwt"),
        (f"redis://user:{URL_PASSWORD}@cache:6379", "url-password"),
        (f"export DB_PASSWORD={ENV_TOKEN}", "env-secret"),
        (PRIVATE_KEY, "private-key"),
        (planted.PUTTY_KEY, "private-key"),
        (f"redis://:{planted.REDIS_PASSWORD}@cache:6379", "url-password"),
        (f"RAILS_MASTER_KEY={planted.RAILS_MASTER_KEY}", "env-secret"),
        (f"TOKEN={planted.ENV_TOKEN}", "env-secret"),
        (f'DB_PASSWORD = "{planted.DB_PASSWORD}"', "code-secret"),
        (f"API_TOKEN: str = '{planted.API_TOKEN}'", "code-secret"),
        (planted.STRIPE_TEST, "stripe-key"),
        (planted.STRIPE_WEBHOOK, "stripe-key"),
        (planted.HUGGINGFACE, "huggingface-token"),
        (f"//registry.npmjs.org/:_authToken={planted.NPM}", "npm-token"),
        (planted.SENDGRID, "sendgrid-key"),
        (planted.AZURE_CONNECTION, "azure-key"),
        (f'{{"auths": {{"ghcr.io": {{"auth": "{planted.DOCKER}"}}}}}}', "docker-auth"),
    ],
)
def test_each_credential_shape_is_replaced_by_its_marker(text: str, kind: str) -> None:
    result = Redactor().text(text)
    assert result.found == {kind: 1}
    assert f"[redacted:{kind}]" in result.text
    assert not any(secret in result.text for secret in SECRETS)


@pytest.mark.parametrize(
    "text",
    [
        ORDINARY_CODE,
        "API_TOKEN=os.environ['API_TOKEN']\nTOKEN=$GITHUB_TOKEN\n",
        "pip install sk-learn-compatible-estimators and scikit-learn",
        "https://docs.python.org/3/library/urllib.parse.html#url-parsing",
        "The AKIA prefix marks an AWS access key id.",
        'TOKEN_TYPE = "Bearer"\nPASSWORD_RESET_URL = "https://example.com/reset"\nMAX_TOKENS = "1000"\n',
        "see sk-learn and xoxo-gossip; hf_hub; npm_config; SG.example",
        'const auth = {"auth": "basic"};',
        'USER_PASSWD = "%s:%s" % (USER, PASSWD)\nAPI_TOKEN = "{token}"\n',
    ],
)
def test_ordinary_code_and_prose_pass_through_untouched(text: str) -> None:
    assert Redactor().text(text).text == text


def test_assignments_are_redacted_only_in_configuration_files() -> None:
    config = "[db]\npassword = 'p4ss-Zq7X'\nretries = 3\nmax_tokens: 100\npassword: ${DB_PASSWORD}\n"
    assert Redactor().text(config, config=True).text == (
        "[db]\npassword = '[redacted:password]'\nretries = 3\nmax_tokens: 100\npassword: ${DB_PASSWORD}\n"
    )
    assert Redactor().text(config, config=False).text == config
    assert is_config_name("config/app.yaml") and is_config_name(".env.local") and not is_config_name("app.py")


def test_secret_files_are_known_by_name_or_by_a_private_key_block() -> None:
    for name in ("id_rsa", "id_ed25519", "x/.env", ".env.production", "tls.pem", "a.key", "credentials-prod.json"):
        assert secret_file_reason(name), name
    for name in ("id_ed25519.pub", "keys.py", "environment.md", "credentials.md"):
        assert secret_file_reason(name) is None, name
    assert secret_content_reason("notes\n" + PRIVATE_KEY)
    assert secret_content_reason("-----BEGIN PUBLIC KEY-----\nabc\n-----END PUBLIC KEY-----") is None


def test_nested_ignore_files_follow_git_semantics(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git" / "info").mkdir(parents=True)
    write(repo / ".git" / "info" / "exclude", "scratch.txt\n")
    write(repo / ".gitignore", "*.log\nbuild/\n")
    write(repo / "pkg" / ".gitignore", "!keep.log\nlocal/\n")
    write(repo / "pkg" / ".memcastleignore", "fixtures/\n")
    for name in (
        "a.py",
        "a.log",
        "scratch.txt",
        "build/out.py",
        "pkg/keep.log",
        "pkg/b.log",
        "pkg/local/x.py",
        "pkg/fixtures/big.json",
        "pkg/mod.py",
    ):
        write(repo / name, "x")
    assert list(walk_files(repo)) == ["a.py", "pkg/keep.log", "pkg/mod.py"]
    # Mining a subfolder still honours the ignore files above it, up to the repository root.
    assert list(walk_files(repo / "pkg")) == ["keep.log", "mod.py"]


def test_a_note_an_agent_writes_is_redacted_like_mined_text(palace: Palace) -> None:
    drawer = palace.services.drawers.save_note(f"deploy with {GITHUB}", wing="secrets").drawer
    assert drawer.content == "deploy with [redacted:github-token]"
    replaced = palace.services.drawers.supersede_drawer(drawer.id, f"rotated; new one is {SLACK}")
    assert replaced.content == "rotated; new one is [redacted:slack-token]"


def test_a_folder_the_repository_around_it_ignores_is_mined_with_its_own_rules(tmp_path: Path) -> None:
    # A pyenv checkout ignores `/versions/`; mining an installed standard library inside it is still asked for.
    checkout = tmp_path / "pyenv"
    (checkout / ".git").mkdir(parents=True)
    write(checkout / ".gitignore", "/versions/\n*.pyc\n")
    lib = checkout / "versions" / "3.11" / "lib"
    write(lib / ".gitignore", "test/\n")
    for name in ("os.py", "os.pyc", "test/test_os.py"):
        write(lib / name, "x")
    assert list(walk_files(lib)) == ["os.py", "os.pyc"]


def test_connectors_md_lists_exactly_the_kinds_redacted() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "connectors.md").read_text(encoding="utf-8")
    table = docs[docs.index("| kind | shape |") : docs.index("Only the value is replaced")]
    documented = set(re.findall(r"^\s*\| `([a-z0-9-]+)` \|", table, re.MULTILINE))
    assert documented == {rule.kind for rule in RULES}


def test_every_planted_kind_is_a_rule_or_a_secret_file() -> None:
    assert {p.kind for p in PLANTED} - {"secret file"} <= {rule.kind for rule in RULES}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [*(p.context for p in PLANTED), "a", " ", "\n", "=", ":", "/", "@", "://", "key", "Token", "pass", "x" * 8]
        ),
        max_size=12,
    ),
    st.booleans(),
)
def test_a_text_said_to_be_clean_is_one_the_rules_leave_unchanged(parts: list[str], config: bool) -> None:
    """The one-look shortcut (`Redactor.clean`) never lets through a text some rule would change."""
    redactor = Redactor()
    text = "".join(parts)
    if redactor.clean(text, config=config):
        assert redactor.text(text, config=config).text == text
