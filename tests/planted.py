"""Fifty-one planted credentials: every kind the redactor covers, in every position a palace stores text.

Each is unique, shaped like the real thing and never anything but test data. `value` is the secret itself (what must
never reach a byte of the palace); `context` is how it is written where it is planted; `where` names the place
(`tests/mining/test_secrets.py` builds the tree and makes the writes). `config` marks a value only a configuration
file's `key: value` makes a secret.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _token(seed: int, length: int, alphabet: str = _ALPHABET) -> str:
    """A fixed, random-looking body with at least one digit and one capital (as real keys have)."""
    rng = random.Random(seed)
    body = "".join(rng.choice(alphabet) for _ in range(length - 2))
    return body + rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") + rng.choice("0123456789")


def _hex(seed: int, length: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("0123456789abcdef") for _ in range(length))


def _b64(seed: int, raw_bytes: int) -> str:
    rng = random.Random(seed)
    return base64.b64encode(bytes(rng.randrange(256) for _ in range(raw_bytes))).decode()


@dataclass(frozen=True)
class Planted:
    kind: str  # the marker it becomes: [redacted:<kind>], or "secret file" for a file skipped whole
    value: str
    context: str
    where: str
    config: bool = False


def _p(kind: str, value: str, context: str, where: str, *, config: bool = False) -> Planted:
    assert value in context, (kind, where)
    return Planted(kind, value, context, where, config)


GITHUB = "ghp_" + _token(1, 36)
GITHUB_PAT = "github_pat_11A" + _token(2, 40, _ALPHABET + "_")
AWS = "AKIA" + _token(3, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
AWS_SESSION = "ASIA" + _token(4, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
AWS_SECRET = _token(5, 40, _ALPHABET + "/+")
SLACK = "xoxb-48151623420-" + _token(6, 24)
SLACK_TITLE = "xoxp-48151623421-" + _token(7, 24)
SLACK_TAG = "xoxb-48151623422-" + _token(8, 20)
SLACK_HOOK = "https://hooks.slack.com/services/T0" + _token(9, 8) + "/B0" + _token(10, 8) + "/" + _token(11, 24)
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtZW1jYXN0bGUtdGVzdCJ9." + _token(12, 43, _ALPHABET + "_-")
JWT_TITLE = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJtZW1jYXN0bGUifQ." + _token(13, 43, _ALPHABET + "_-")
JWT_REASON = "eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiJwYWxhY2UifQ." + _token(14, 43, _ALPHABET + "_-")
OPENAI = "sk-proj-" + _token(15, 48, _ALPHABET + "_-")
OPENAI_NOTE = "sk-svcacct-" + _token(16, 48)
OPENAI_ENV = "sk-" + _token(17, 48)
ANTHROPIC = "sk-ant-api03-" + _token(18, 90, _ALPHABET + "_-")
ANTHROPIC_NEW = "sk-ant-api03-" + _token(19, 90, _ALPHABET + "_-")
GITLAB = "glpat-" + _token(20, 20)
GITLAB_COMMIT = "glpat-" + _token(21, 20)
GOOGLE = "AIza" + _token(22, 35, _ALPHABET + "_-")
STRIPE_LIVE = "sk_live_" + _token(23, 24)
STRIPE_TEST = "sk_test_" + _token(24, 24)
STRIPE_CHAT = "rk_live_" + _token(25, 24)
STRIPE_WEBHOOK = "whsec_" + _token(26, 32)
HUGGINGFACE = "hf_" + _token(27, 34)
HUGGINGFACE_NAME = "hf_" + _token(28, 34)
NPM = "npm_" + _token(29, 36)
NPM_TAG = "npm_" + _token(30, 36)
SENDGRID = "SG." + _token(31, 22, _ALPHABET + "_-") + "." + _token(32, 43, _ALPHABET + "_-")
SENDGRID_CHECKPOINT = "SG." + _token(33, 22) + "." + _token(34, 43)
AZURE = _b64(35, 64)
DOCKER = base64.b64encode(("ci-bot:" + _token(36, 24)).encode()).decode()
URL_PASSWORD = "UrlPw" + _token(37, 14)
REDIS_PASSWORD = "RedisPw" + _token(38, 14)
REMOTE_PASSWORD = "RemotePw" + _token(39, 14)
FACT_URL_PASSWORD = "FactPw" + _token(40, 14)
CHECKPOINT_URL_PASSWORD = "CkptPw" + _token(41, 14)
CONFIG_PASSWORD = "cfg-pw-" + _token(42, 14)
FRONT_MATTER_KEY = "fm-key-" + _token(43, 14)
KUBE_CLIENT_KEY = _b64(44, 96)
KUBE_TOKEN = _token(45, 40)
RAILS_MASTER_KEY = _hex(46, 32)
ENV_TOKEN = "envtok" + _token(47, 14)
DB_PASSWORD = "dbpw-" + _token(48, 16)
API_TOKEN = "apitok-" + _token(56, 20)
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAA" + _token(49, 40)
TRANSCRIPT_KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEF" + _token(50, 40)
PUTTY_BODY = "AAAAB3NzaC1yc2EAAAABJQAAAQEA" + _token(51, 40)

PRIVATE_KEY = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----\n"
TRANSCRIPT_KEY = f"-----BEGIN PRIVATE KEY-----\n{TRANSCRIPT_KEY_BODY}\n-----END PRIVATE KEY-----"
PUTTY_KEY = (
    "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\nAAAAB3NzaC1yc2E\n"
    f"Private-Lines: 1\n{PUTTY_BODY}\nPrivate-MAC: {_hex(52, 64)}\n"
)
AZURE_CONNECTION = (
    f"DefaultEndpointsProtocol=https;AccountName=shopfiles;AccountKey={AZURE};EndpointSuffix=core.windows.net"
)

PLANTED: tuple[Planted, ...] = (
    # --- a project folder, mined with `directory` ---------------------------------------------------------------
    _p("github-token", GITHUB, f'GITHUB = "{GITHUB}"', "project src/app.py"),
    _p("aws-access-key", AWS, f'AWS_KEY = "{AWS}"', "project src/app.py"),
    _p("slack-token", SLACK, f"Slack: {SLACK}", "project README.md"),
    _p("jwt", JWT, f"Call with {JWT}", "project README.md"),
    _p("url-password", URL_PASSWORD, f"postgresql://shop:{URL_PASSWORD}@db/shop", "project README.md"),
    _p("password", CONFIG_PASSWORD, f"  password: {CONFIG_PASSWORD}", "project config.yaml", config=True),
    _p("secret file", KEY_BODY, PRIVATE_KEY, "project deploy.txt"),
    _p("aws-secret-key", AWS_SECRET, f"aws_secret_access_key = {AWS_SECRET}", "project aws.ini"),
    _p("google-api-key", GOOGLE, f'const MAPS = "{GOOGLE}";', "project web/maps.js"),
    _p("stripe-key", STRIPE_LIVE, f"live key {STRIPE_LIVE}", "project billing.md"),
    _p("stripe-key", STRIPE_TEST, f"test key {STRIPE_TEST}", "project billing.md"),
    _p("stripe-key", STRIPE_WEBHOOK, f"webhook secret {STRIPE_WEBHOOK}", "project billing.md"),
    _p("slack-webhook", SLACK_HOOK, f"alerts go to {SLACK_HOOK}", "project ops.md"),
    _p("huggingface-token", HUGGINGFACE, f'HF = "{HUGGINGFACE}"', "project ml.py"),
    _p("sendgrid-key", SENDGRID, f"mail through {SENDGRID}", "project mail.md"),
    _p("azure-key", AZURE, f'CONN = "{AZURE_CONNECTION}"', "project storage.py"),
    _p("docker-auth", DOCKER, f'{{"auths": {{"ghcr.io": {{"auth": "{DOCKER}"}}}}}}', "project docker/config.json"),
    _p("url-password", REDIS_PASSWORD, f"cache at redis://:{REDIS_PASSWORD}@cache:6379/0", "project cache.md"),
    _p("env-secret", RAILS_MASTER_KEY, f"RAILS_MASTER_KEY={RAILS_MASTER_KEY}", "project env.production"),
    _p("password", KUBE_CLIENT_KEY, f"    client-key-data: {KUBE_CLIENT_KEY}", "project kubeconfig", config=True),
    _p("password", KUBE_TOKEN, f"    token: {KUBE_TOKEN}", "project kubeconfig", config=True),
    _p("npm-token", NPM, f"//registry.npmjs.org/:_authToken={NPM}", "project npmrc"),
    _p("secret file", PUTTY_BODY, PUTTY_KEY, "project deploy.ppk"),
    _p("code-secret", DB_PASSWORD, f'DB_PASSWORD = "{DB_PASSWORD}"', "project settings.py"),
    _p("code-secret", API_TOKEN, f"API_TOKEN: str = '{API_TOKEN}'", "project client.py"),
    _p("github-token", GITHUB_PAT, f"{GITHUB_PAT}.txt", "project file name tokens/<value>.txt"),
    # --- a repository's history, mined with `git` ----------------------------------------------------------------
    _p("gitlab-token", GITLAB_COMMIT, f"Rotate the deploy token {GITLAB_COMMIT}", "git commit message"),
    _p("url-password", REMOTE_PASSWORD, f"https://ci:{REMOTE_PASSWORD}@git.example.com/shop.git", "git remote url"),
    # --- a notes vault, mined with `notes` -----------------------------------------------------------------------
    _p("anthropic-key", ANTHROPIC, f"The key is {ANTHROPIC}.", "notes ops.md body"),
    _p("password", FRONT_MATTER_KEY, f"api_key: {FRONT_MATTER_KEY}", "notes ops.md front matter"),
    _p("slack-token", SLACK_TITLE, f"title: rotate {SLACK_TITLE}", "notes ops.md front matter title"),
    _p("openai-key", OPENAI_NOTE, f"tags: [infra, {OPENAI_NOTE}]", "notes ops.md front matter tags"),
    _p("aws-access-key", AWS_SESSION, f"session key {AWS_SESSION} expires", "notes aws.md body"),
    # --- agent transcripts ----------------------------------------------------------------------------------------
    _p("openai-key", OPENAI, f"my key is {OPENAI}", "claude session user turn"),
    _p("env-secret", ENV_TOKEN, f"export GITHUB_TOKEN={ENV_TOKEN} before running", "claude session user turn"),
    _p("gitlab-token", GITLAB, f"Do not paste tokens like {GITLAB} into chats", "claude session assistant turn"),
    _p("private-key", TRANSCRIPT_KEY_BODY, TRANSCRIPT_KEY, "claude session assistant turn"),
    _p("openai-key", OPENAI_ENV, f"export OPENAI_API_KEY={OPENAI_ENV}", "codex session shell call"),
    _p("jwt", JWT_TITLE, f"why is {JWT_TITLE} rejected", "chatgpt conversation title"),
    _p("stripe-key", STRIPE_CHAT, f"the restricted key {STRIPE_CHAT} works", "chatgpt message"),
    # --- what agents and people write through the API --------------------------------------------------------------
    _p("github-token", "ghp_" + _token(53, 36), "deploy with ghp_" + _token(53, 36), "note content"),
    _p("slack-token", SLACK_TAG, SLACK_TAG, "note tag"),
    _p("github-token", "ghp_" + _token(54, 36), "ghp_" + _token(54, 36), "note name"),
    _p(
        "aws-access-key",
        "AKIA" + _token(55, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
        "used AKIA" + _token(55, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
        "diary entry",
    ),  # fmt: skip
    _p("sendgrid-key", SENDGRID_CHECKPOINT, f"mail key {SENDGRID_CHECKPOINT}", "checkpoint item content"),
    _p("huggingface-token", HUGGINGFACE_NAME, HUGGINGFACE_NAME, "checkpoint item name"),
    _p("npm-token", NPM_TAG, NPM_TAG, "checkpoint item tag"),
    _p("url-password", CHECKPOINT_URL_PASSWORD, f"postgres://app:{CHECKPOINT_URL_PASSWORD}@db", "checkpoint fact"),
    _p("url-password", FACT_URL_PASSWORD, f"postgres://admin:{FACT_URL_PASSWORD}@db", "explicit fact object"),
    _p("anthropic-key", ANTHROPIC_NEW, f"rotated; the new key is {ANTHROPIC_NEW}", "drawer supersession"),
    _p("jwt", JWT_REASON, f"the old session {JWT_REASON} is void", "fact invalidation reason"),
)
assert len(PLANTED) == 51 and len({p.value for p in PLANTED}) == 51
