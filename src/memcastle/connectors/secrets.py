"""What a source may hold that must never be kept: secret files (by name or content) and credentials inside text.

`secret_file_reason` names why a file is a secret (a private key, an `.env` file, a keystore…) so the mine skips it
with that reason. `Redactor` replaces recognisable credentials inside ordinary text with `[redacted:<kind>]` before
anything is stored, indexed or embedded, and counts what it replaced. The rules are deliberately specific — a
credential has a shape (a prefix, a length, a block) — so ordinary code and prose pass through untouched; the
`password = …` rule applies only to configuration files, where such an assignment is a value and not code.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from memcastle.connectors.contract import CanonicalDocument, RawDocument

MARKER = "[redacted:{}]"

# Names that are secrets whatever they contain. Public halves (`id_ed25519.pub`) are not secrets.
_SECRET_NAMES: tuple[tuple[str, str], ...] = (
    (".env", "environment file"),
    (".env.*", "environment file"),
    ("*.env", "environment file"),
    ("*.pem", "PEM key or certificate bundle"),
    ("*.key", "key file"),
    ("id_rsa", "SSH private key"),
    ("id_dsa", "SSH private key"),
    ("id_ecdsa", "SSH private key"),
    ("id_ecdsa_sk", "SSH private key"),
    ("id_ed25519", "SSH private key"),
    ("id_ed25519_sk", "SSH private key"),
    ("credentials*.json", "credentials file"),
    ("credentials", "credentials file"),
    ("*.p12", "keystore"),
    ("*.pfx", "keystore"),
    ("*.jks", "keystore"),
    ("*.keystore", "keystore"),
    ("*.kdbx", "password database"),
    (".netrc", "credentials file"),
    (".pgpass", "credentials file"),
    (".htpasswd", "credentials file"),
    ("*.gpg", "encrypted file"),
    ("*.asc", "armored key"),
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_CONFIG_SUFFIXES = frozenset(
    {
        ".ini",
        ".cfg",
        ".conf",
        ".config",
        ".cnf",
        ".toml",
        ".yaml",
        ".yml",
        ".properties",
        ".json",
        ".tfvars",
        ".env",
        ".xml",
        ".plist",
    }
)
# A key that names a secret ends with one of these words: `db_password`, `client_secret`, `api_key`, `auth_token`
# (but not `max_tokens` or `tokenizer`).
_SECRET_KEY_WORDS = (
    r"[\w.-]*?(?:password|passwd|passphrase|secret|secret[_-]?key|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|token)"
)
_PLACEHOLDER = re.compile(
    r"^(?:\$\{?[\w.]+\}?|<[^>]*>|\{\{.*\}\}|%\(?\w+\)?s?|\*+|x+|-?\d+(?:\.\d+)?|null|none|nil|true|false|\[redacted:[\w-]+\])$",
    re.IGNORECASE,
)


def secret_file_reason(relative: str) -> str | None:
    """Why a file is a secret by its name alone, or None."""
    name = PurePosixPath(relative).name.lower()
    for pattern, what in _SECRET_NAMES:
        if fnmatch.fnmatchcase(name, pattern):
            return f"secret file ({what}: {pattern})"
    return None


def secret_content_reason(text: str) -> str | None:
    """Why a file is a secret by what it holds (a private-key block), or None."""
    if "PRIVATE KEY" in text and _PRIVATE_KEY.search(text):
        return "secret file (holds a private-key block)"
    return None


@dataclass(frozen=True)
class Rule:
    """A credential shape. The pattern runs only on text holding one of `needles` (compared case-folded when
    `fold`), a cheap substring test that keeps redaction at tens of MB/s. When the pattern has a `value` group
    (or `dq`/`sq`), only that part is replaced, so the key of an assignment stays readable."""

    kind: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...] = ()
    fold: bool = False
    config_only: bool = False

    def may_match(self, text: str, folded: str) -> bool:
        haystack = folded if self.fold else text
        return not self.needles or any(needle in haystack for needle in self.needles)


_ENV_WORDS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "API_KEY", "APIKEY", "ACCESS_KEY")
RULES: tuple[Rule, ...] = (
    Rule("private-key", _PRIVATE_KEY, ("PRIVATE KEY",)),
    Rule("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"), ("AKIA", "ASIA", "ABIA", "ACCA")),
    Rule(
        "aws-secret-key",
        re.compile(
            r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?(?P<value>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        ("secret",),
        fold=True,
    ),
    Rule("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b"), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    Rule("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b"), ("github_pat_",)),
    Rule(
        "gitlab-token",
        re.compile(r"\bgl(?:pat|dt|ptt|rt)-[A-Za-z0-9_\-]{20,}\b"),
        ("glpat-", "gldt-", "glptt-", "glrt-"),
    ),
    Rule("slack-token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}\b"), ("xox",)),
    Rule(
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+"),
        ("hooks.slack.com",),
    ),
    Rule("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), ("sk-ant-",)),
    Rule(
        "openai-key",
        re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?(?=[\w-]*\d)(?=[\w-]*[A-Z])[A-Za-z0-9_\-]{20,}"),
        ("sk-",),
    ),
    Rule("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), ("AIza",)),
    Rule("stripe-key", re.compile(r"\b[sr]k_live_[0-9a-zA-Z]{20,}\b"), ("k_live_",)),
    Rule("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), ("eyJ",)),
    # `scheme://user:password@host`: the pattern starts at the literal `://`, which the regex engine finds fast.
    Rule("url-password", re.compile(r"://[^\s/:@\"'<>]+:(?P<value>[^\s/@\"'<>]{3,})@"), ("://",)),
    Rule(
        "env-secret",
        # `export API_TOKEN=…` / `DB_PASSWORD=…` in shells, transcripts and notes: an upper-case name, no spaces.
        re.compile(
            r"\b[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY)[A-Z0-9_]*="
            r"(?P<value>[\"']?[^\s\"'$`(){}\[\]<>;|&]{6,}[\"']?)(?![\w(\[])"
        ),
        _ENV_WORDS,
    ),
    Rule(
        "password",
        re.compile(
            rf"(?im)^[ \t]*[\"']?{_SECRET_KEY_WORDS}[\"']?[ \t]*[:=][ \t]*"
            r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<value>[^\s#;,\"'][^\s#;,]*))"
        ),
        ("pass", "secret", "key", "token"),
        fold=True,
        config_only=True,
    ),
)


@dataclass
class Redaction:
    """Redacted text and the distinct credentials replaced, as (kind, value) pairs — the values live only in memory,
    so one key pasted twice, or a first prompt that is also the session's title, counts once."""

    text: str
    replaced: set[tuple[str, str]]

    @property
    def found(self) -> Counter[str]:
        return Counter(kind for kind, _ in self.replaced)


def is_config_name(name: str | None) -> bool:
    if not name:
        return False
    path = PurePosixPath(name.lower())
    return path.suffix in _CONFIG_SUFFIXES or path.name.startswith(".env")


class Redactor:
    """Replaces credentials with `[redacted:<kind>]`, collecting what it replaced in `replaced` when given."""

    def __init__(self, rules: tuple[Rule, ...] = RULES) -> None:
        self.rules = rules

    def text(self, text: str, *, config: bool = False, replaced: set[tuple[str, str]] | None = None) -> Redaction:
        replaced = set() if replaced is None else replaced
        folded = text.lower()
        for rule in self.rules:
            if rule.config_only and not config:
                continue
            if not rule.may_match(text, folded):
                continue
            text = rule.pattern.sub(functools.partial(_replace, kind=rule.kind, replaced=replaced), text)
        return Redaction(text, replaced)

    def value(self, value: Any, replaced: set[tuple[str, str]], *, key: str = "") -> Any:
        """A metadata value with credentials redacted; a string under a secret-looking key is replaced whole."""
        if isinstance(value, str):
            if key and _SECRET_KEY.fullmatch(key) and value.strip() and not _PLACEHOLDER.match(value.strip()):
                replaced.add(("password", value))
                return MARKER.format("password")
            return self.text(value, replaced=replaced).text
        if isinstance(value, Mapping):
            return {k: self.value(v, replaced, key=str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v, replaced, key=key) for v in value]
        return value


_SECRET_KEY = re.compile(rf"(?i){_SECRET_KEY_WORDS}")


def _replace(match: re.Match[str], kind: str, replaced: set[tuple[str, str]]) -> str:
    groups = match.groupdict()
    for group in ("value", "dq", "sq"):
        if groups.get(group) is not None:
            secret = groups[group]
            if _PLACEHOLDER.match(secret.strip("\"'")) or secret.startswith("[redacted:"):
                return match.group(0)
            replaced.add((kind, secret))
            start, end = match.span(group)
            whole = match.group(0)
            offset = match.start()
            return whole[: start - offset] + _marker(kind, secret) + whole[end - offset :]
    replaced.add((kind, match.group(0)))
    return _marker(kind, match.group(0))


def _marker(kind: str, secret: str) -> str:
    """What stands in for a secret: its kind, then as many line breaks as it spanned, so every line after it keeps
    its number (a hit's line range points into the file as it is)."""
    return MARKER.format(kind) + "\n" * secret.count("\n")


def redact_document(
    redactor: Redactor, raw: RawDocument, document: CanonicalDocument
) -> tuple[RawDocument, CanonicalDocument, Counter[str]]:
    """The document with credentials redacted in its text, title and metadata snapshot, and what was replaced."""
    config = is_config_name(document.name or raw.external_id)
    replaced: set[tuple[str, str]] = set()
    segments = tuple(redactor.text(segment, config=config, replaced=replaced).text for segment in document.segments)
    title = redactor.text(document.title, replaced=replaced).text if document.title else document.title
    name = redactor.text(document.name, replaced=replaced).text if document.name else document.name
    metadata = redactor.value(dict(raw.metadata), replaced)
    if not replaced:
        return raw, document, Counter()
    return (
        replace(raw, metadata=metadata, title=title),
        replace(document, segments=segments, title=title, name=name),
        Redaction("", replaced).found,
    )
