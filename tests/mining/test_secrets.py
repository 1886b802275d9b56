"""Secrets stay out: ignore files are honoured, secret files are skipped with a reason, credentials inside text are
redacted before anything is stored, indexed or embedded — checked by reading every byte of the palace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clocks import DistinctClock
from waiting import wait_until

from memcastle.app import Palace, build
from memcastle.config import Settings, load_settings
from memcastle.connectors.files import walk_files
from memcastle.connectors.secrets import Redactor, is_config_name, secret_content_reason, secret_file_reason

# Unique, shaped like the real thing, and never anything but test data.
GITHUB = "ghp_" + "Zq7Xw2Lm9Pv4Rt8Yk3Nb6Hc1Jd5Fg0Sa7Ue2Wi"
AWS = "AKIA" + "Q7ZX2LM9PV4RT8YK"
SLACK = "xoxb-" + "48151623420-ZqXwLmPvRtYk"
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiJtZW1jYXN0bGUtdGVzdCJ9" + ".Zq7Xw2Lm9Pv4Rt8Yk3Nb6Hc1Jd5Fg0Sa"
OPENAI = "sk-proj-" + "Zq7Xw2Lm9Pv4Rt8Yk3Nb6Hc1Jd5"
ANTHROPIC = "sk-ant-api03-" + "zq7xw2lm9pv4rt8yk3nb6hc1jd5"
GITLAB = "glpat-" + "Zq7Xw2Lm9Pv4Rt8Yk3Nb6"
URL_PASSWORD = "UrlPw" + "4815162342"
CONFIG_PASSWORD = "cfg-" + "pw-4815162342"
IGNORED_PASSWORD = "hunter2-" + "4815162342"
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAA" + "Zq7Xw2Lm9Pv4Rt8Yk3Nb6Hc1"
FRONT_MATTER_KEY = "fm-" + "key-4815162342"
ENV_TOKEN = "envtok" + "4815162342"
IGNORED_TEXT = "ignored-" + "phrase-4815162342"
SECRETS = (
    GITHUB,
    AWS,
    SLACK,
    JWT,
    OPENAI,
    ANTHROPIC,
    GITLAB,
    URL_PASSWORD,
    CONFIG_PASSWORD,
    IGNORED_PASSWORD,
    KEY_BODY,
    FRONT_MATTER_KEY,
    ENV_TOKEN,
    IGNORED_TEXT,
)
PRIVATE_KEY = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----\n"
ORDINARY_CODE = 'password = request.form["password"]\ntoken = tokenizer.next()\nmax_tokens: int = 100\n'


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class Tree:
    project: Path
    notes: Path
    sessions: Path


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    """A project, a notes vault and a Claude Code session, each holding every case once."""
    project = tmp_path / "work" / "shop"
    (project / ".git").mkdir(parents=True)
    write(project / ".gitignore", "id_ed25519\nconfig.local.yaml\nlogs/\n")
    write(project / "id_ed25519", PRIVATE_KEY)
    write(project / "config.local.yaml", f"password: {IGNORED_PASSWORD}\n")
    write(project / "logs" / "debug.txt", IGNORED_TEXT)
    write(project / "src" / ".gitignore", "*.local.py\n")
    write(project / "src" / "settings.local.py", f"SECRET = '{IGNORED_TEXT}'\n")
    write(project / "src" / "app.py", f'GITHUB = "{GITHUB}"\n{ORDINARY_CODE}AWS_KEY = "{AWS}"\n')
    write(project / "config.yaml", f"db:\n  host: db.internal\n  password: {CONFIG_PASSWORD}\n  token: ${{TOKEN}}\n")
    write(project / "README.md", f"Slack: {SLACK}\nCall with {JWT}\nDB at postgresql://shop:{URL_PASSWORD}@db/shop\n")
    write(project / "deploy.txt", "the deploy key:\n" + PRIVATE_KEY)
    for name in ("server.key", "cert.pem", "credentials.json", "release.jks", "prod.env"):
        write(project / name, f"{IGNORED_TEXT}\n")
    write(project / ".memcastleignore", "private/\n")
    write(project / "private" / "diary.md", IGNORED_TEXT)

    notes = tmp_path / "work" / "vault"
    write(notes / ".memcastleignore", "drafts/\n")
    write(notes / "drafts" / "unfinished.md", f"# Draft\n{IGNORED_TEXT}\n")
    write(notes / "ops.md", f"---\ntitle: Ops\napi_key: {FRONT_MATTER_KEY}\n---\n# Ops\nThe key is {ANTHROPIC}.\n")

    sessions = tmp_path / "work" / "claude" / "-home-alex-shop"
    sessions.mkdir(parents=True)
    lines = [
        _turn("user", f"my key is {OPENAI}, and export GITHUB_TOKEN={ENV_TOKEN} before running", 1),
        _turn("assistant", f"Do not paste tokens like {GITLAB} into chats; rotate it.", 2),
    ]
    (sessions / "0d6d0c34-1f0e-4a57-9a57-4b0c8bb3e0f1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Tree(project=project, notes=notes, sessions=sessions.parent)


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
    job, _ = palace.services.mining.submit_mine(connector, str(locator), {}, wing="secrets")
    done = wait_until(lambda: (j := palace.services.jobs.get_job(job.id)).is_finished and j, what="the mine")
    assert done.status.value == "completed", done.error
    return dict(done.result)


def settled(palace: Palace) -> bool:
    active = [j for j in palace.services.jobs.list_jobs(None, None, 200) if j.status.value in ("queued", "running")]
    status = palace.services.status.status()
    assert status["embeddings"]["provider"] == "builtin"
    return not active and status["embeddings"]["pending"] == 0 and not status["extraction"].get("pending")


def test_no_planted_secret_reaches_any_file_of_the_palace(
    tree: Tree, embedding_palace: Palace, palace_dir: Path
) -> None:
    files = mined(embedding_palace, "directory", tree.project)
    notes = mined(embedding_palace, "notes", tree.notes)
    chats = mined(embedding_palace, "claude", tree.sessions)
    wait_until(lambda: settled(embedding_palace), what="embedding and extraction to finish")
    embedding_palace.stop()

    skipped = {s["document"]: s["reason"] for s in files["skipped_documents"]}
    for name in ("server.key", "cert.pem", "credentials.json", "release.jks", "prod.env", "deploy.txt"):
        assert skipped[name].startswith("secret file"), skipped
    for ignored in ("id_ed25519", "config.local.yaml", "logs/debug.txt", "src/settings.local.py", "private/diary.md"):
        assert ignored not in skipped
    assert files["redacted_by_kind"] == {
        "aws-access-key": 1,
        "github-token": 1,
        "jwt": 1,
        "password": 1,
        "slack-token": 1,
        "url-password": 1,
    }
    assert files["redacted"] == 6
    assert notes["redacted_by_kind"] == {"anthropic-key": 1, "password": 1} and notes["documents"] == 1
    assert chats["redacted_by_kind"] == {"env-secret": 1, "gitlab-token": 1, "openai-key": 1}

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
    assert sorted(texts) == ["README.md", "config.yaml", "src/app.py"]
    assert (
        texts["src/app.py"]
        == f'GITHUB = "[redacted:github-token]"\n{ORDINARY_CODE}AWS_KEY = "[redacted:aws-access-key]"\n'
    )
    assert "password: [redacted:password]\n  token: ${TOKEN}" in texts["config.yaml"]
    assert "postgresql://shop:[redacted:url-password]@db/shop" in texts["README.md"]


def test_a_re_mine_of_unchanged_redacted_files_changes_nothing(tree: Tree, palace: Palace) -> None:
    mined(palace, "directory", tree.project)
    again = mined(palace, "directory", tree.project)
    assert again["unchanged"] == 3 and again["created"] == again["superseded"] == 0


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
    drawer, _ = palace.services.drawers.save_note(f"deploy with {GITHUB}", wing="secrets")
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
