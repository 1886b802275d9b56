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
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from memcastle.connectors.contract import CanonicalDocument, RawDocument
from memcastle.errors import InvalidRequest

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
    ("*.ppk", "PuTTY private key"),
)
# All of them as one expression: most names match none, and one match says so (the loop below then names which).
_ANY_SECRET_NAME = re.compile("|".join(fnmatch.translate(pattern) for pattern, _ in _SECRET_NAMES))
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_PUTTY_KEY = re.compile(r"PuTTY-User-Key-File-\d+: .*?(?:Private-MAC: [0-9a-fA-F]+|\Z)", re.DOTALL)
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
        ".npmrc",
        ".pypirc",
        ".kubeconfig",
    }
)
# Files that are configuration whatever their suffix: `env.production`, a kubeconfig, an `.npmrc`.
_CONFIG_NAMES = re.compile(r"^(?:\.?env(?:\..*)?|.*\.env\..*|kubeconfig.*|config|\.?npmrc|\.?pypirc|\.?netrc)$")
# A key that names a secret ends with one of these words: `db_password`, `client_secret`, `api_key`, `auth_token`,
# `client-key-data` (but not `max_tokens` or `tokenizer`).
_SECRET_KEY_WORDS = (
    r"[\w.-]*?(?:password|passwd|passphrase|secret|secret[_-]?key|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|master[_-]?key|key[_-]?data|token)"
)
_PLACEHOLDER = re.compile(
    r"^(?:\$\{?[\w.]+\}?|<[^>]*>|\{\{.*\}\}|%\(?\w+\)?s?|\*+|x+|-?\d+(?:\.\d+)?|null|none|nil|true|false|\[redacted:[\w-]+\])$",
    re.IGNORECASE,
)
# A format template with nothing of its own ("%s:%s", "{user}:{password}"): each part starts with its own character,
# so the possessive repetition never backtracks.
_TEMPLATE = re.compile(r"(?=[^%{]*+[%{])(?:%(?:\(\w+\))?[sdr]|\{\w*\}|[:@/_.,;| -])*+")


def _is_placeholder(value: str) -> bool:
    return _PLACEHOLDER.match(value) is not None or _TEMPLATE.fullmatch(value) is not None


# The name of an upper-case variable holding a secret: `DB_PASSWORD`, `GITHUB_TOKEN`, `RAILS_MASTER_KEY`.
_SECRET_NAME = re.compile(
    r"PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|ACCESS_KEY|PRIVATE_KEY|MASTER_KEY|SIGNING_KEY|"
    r"ENCRYPTION_KEY|AUTH_KEY|CLIENT_KEY|ACCOUNT_KEY"
)


def secret_file_reason(relative: str) -> str | None:
    """Why a file is a secret by its name alone, or None."""
    name = PurePosixPath(relative).name.lower()
    if not _ANY_SECRET_NAME.match(name):
        return None
    for pattern, what in _SECRET_NAMES:
        if fnmatch.fnmatchcase(name, pattern):
            return f"secret file ({what}: {pattern})"
    return None


def secret_content_reason(text: str) -> str | None:
    """Why a file is a secret by what it holds (a private-key block, a PuTTY key), or None."""
    if "PRIVATE KEY" in text and _PRIVATE_KEY.search(text):
        return "secret file (holds a private-key block)"
    if "PuTTY-User-Key-File-" in text:
        return "secret file (a PuTTY private key)"
    return None


@dataclass(frozen=True)
class Rule:
    """A credential shape. The pattern runs only on text holding one of `needles` (compared case-folded when
    `fold`), a cheap substring test that keeps redaction at tens of MB/s. When the pattern has a `value` group
    (or `dq`/`sq`), only that part is replaced, so the key of an assignment stays readable. `accept`, when given,
    decides on the whole match whether it is a credential (a token shape needing a digit and a capital; a variable
    whose name says secret).

    Every pattern runs in time linear in its input (tested up to the size limit, `tests/mining/test_redaction_cost.py`):
    a token is matched only where a run of token characters starts (a look-behind, so a run is tried once, not from
    every position inside it), repetitions that a later part cannot give back to are possessive (`*+`, `{n,}+`), and
    what would need a look-ahead over the whole run is checked on the match instead (`accept`)."""

    kind: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...] = ()
    fold: bool = False
    config_only: bool = False
    accept: Callable[[re.Match[str]], bool] | None = None


def _has_digit_and_capital(match: re.Match[str]) -> bool:
    text = match.group(0)
    return any(c.isdigit() for c in text) and any(c.isupper() for c in text)


def _secret_key(match: re.Match[str]) -> bool:
    return _SECRET_KEY.fullmatch(match.group("key")) is not None


def _named_secret(match: re.Match[str]) -> bool:
    return _SECRET_NAME.search(match.group("name")) is not None


def _ends_in_a_secret_name(match: re.Match[str]) -> bool:
    """`DB_PASSWORD`, `API_TOKEN2`, but not `TOKEN_TYPE` or `PASSWORD_RESET_URL`: in code, a constant whose name
    only mentions a secret usually holds something else."""
    name = match.group("name").rstrip("0123456789_")
    found = _SECRET_NAME.search(name)
    while found is not None and found.end() != len(name):
        found = _SECRET_NAME.search(name, found.start() + 1)
    return found is not None


_START = r"(?<![A-Za-z0-9_\-])"  # where a run of token characters starts
_ENV_WORDS = ("PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "_KEY", "APIKEY")
RULES: tuple[Rule, ...] = (
    Rule("private-key", _PRIVATE_KEY, ("PRIVATE KEY",)),
    Rule("private-key", _PUTTY_KEY, ("PuTTY-User-Key-File-",)),
    Rule("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"), ("AKIA", "ASIA", "ABIA", "ACCA")),
    Rule(
        "aws-secret-key",
        re.compile(
            r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*+[:=]\s*+[\"']?(?P<value>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        ("secret",),
        fold=True,
    ),
    Rule("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b"), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    Rule("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b"), ("github_pat_",)),
    Rule(
        "gitlab-token",
        re.compile(_START + r"gl(?:pat|dt|ptt|rt)-[A-Za-z0-9_\-]{20,}+"),
        ("glpat-", "gldt-", "glptt-", "glrt-"),
    ),
    Rule("slack-token", re.compile(_START + r"xox[abposre]-[A-Za-z0-9-]{10,}+"), ("xox",)),
    Rule(
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/services/T[A-Za-z0-9]++/B[A-Za-z0-9]++/[A-Za-z0-9]++"),
        ("hooks.slack.com",),
    ),
    Rule("anthropic-key", re.compile(_START + r"sk-ant-[A-Za-z0-9_\-]{20,}+"), ("sk-ant-",)),
    Rule(
        "openai-key",
        re.compile(_START + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}+"),
        ("sk-",),
        accept=_has_digit_and_capital,
    ),
    Rule("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), ("AIza",)),
    Rule("stripe-key", re.compile(_START + r"[sr]k_(?:live|test)_[0-9a-zA-Z]{20,}+"), ("k_live_", "k_test_")),
    Rule("stripe-key", re.compile(_START + r"whsec_[A-Za-z0-9+/=]{20,}+"), ("whsec_",)),
    Rule("huggingface-token", re.compile(_START + r"hf_[A-Za-z0-9]{30,}+"), ("hf_",)),
    Rule("npm-token", re.compile(_START + r"npm_[A-Za-z0-9]{36,}+"), ("npm_",)),
    Rule("sendgrid-key", re.compile(_START + r"SG\.[A-Za-z0-9_\-]{16,}+\.[A-Za-z0-9_\-]{16,}+"), ("SG.",)),
    Rule(
        "jwt",
        re.compile(_START + r"eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+"),
        ("eyJ",),
    ),
    Rule(
        "azure-key",
        # A storage or service-bus connection string: `AccountKey=…;`, `SharedAccessKey=…`.
        re.compile(r"(?i)\b(?:Account|SharedAccess)Key=(?P<value>[A-Za-z0-9+/=]{20,}+)"),
        ("accountkey=", "sharedaccesskey="),
        fold=True,
    ),
    Rule(
        "docker-auth",
        # `~/.docker/config.json`: `"auth": "<base64 of user:password>"`.
        re.compile(r"\"auth\"\s*+:\s*+\"(?P<value>[A-Za-z0-9+/]{12,}+={0,2})\""),
        ('"auth"',),
    ),
    # `scheme://user:password@host` and `scheme://:password@host` (redis): the pattern starts at the literal `://`,
    # which the regex engine finds fast; the user and the password cannot hold `/`, so a try ends at the next `://`.
    # Its needle is the `@` it needs, not the `://`: every file's own `file://` address holds the latter.
    Rule("url-password", re.compile(r"://[^\s/:@\"'<>]*+:(?P<value>[^\s/@\"'<>]+)@"), ("@",)),
    Rule(
        "env-secret",
        # `export API_TOKEN=…` / `RAILS_MASTER_KEY=…` in shells, transcripts and notes: an upper-case name, no
        # spaces; the name is taken whole and then asked whether it says secret.
        re.compile(
            r"\b(?P<name>[A-Z][A-Z0-9_]*+)="
            r"(?P<value>[\"']?[^\s\"'$`(){}\[\]<>;|&]{6,}[\"']?)(?![\w(\[])"
        ),
        _ENV_WORDS,
        accept=_named_secret,
    ),
    Rule(
        "code-secret",
        # `DB_PASSWORD = "…"` in code: an upper-case constant named like a secret, given a quoted literal.
        re.compile(
            r"\b(?P<name>[A-Z][A-Z0-9_]*+)[ \t]*+(?::[ \t]*+\w++[ \t]*+)?=[ \t]*+"
            r"(?:\"(?P<dq>[^\"\n]{4,}+)\"|'(?P<sq>[^'\n]{4,}+)')"
        ),
        _ENV_WORDS,
        accept=_ends_in_a_secret_name,
    ),
    Rule(
        "password",
        # A line `key: value` / `key = value` whose key names a secret: the key is taken whole, then asked.
        re.compile(
            r"(?m)^[ \t]*+[\"']?(?P<key>[\w.-]++)[\"']?[ \t]*+[:=][ \t]*+"
            r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<value>[^\s#;,\"'][^\s#;,]*+))"
        ),
        ("pass", "secret", "key", "token"),
        fold=True,
        config_only=True,
        accept=_secret_key,
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
    """Whether a file is configuration, where `key = value` assigns a value (not code, where it is an expression)."""
    if not name:
        return False
    path = PurePosixPath(name.lower())
    return path.suffix in _CONFIG_SUFFIXES or _CONFIG_NAMES.match(path.name) is not None


class RedactionTooCostly(InvalidRequest):
    """A text took longer than its budget to be checked for credentials: it is refused (a note) or skipped (a mined
    document), never stored unchecked."""

    def __init__(self, seconds: float, chars: int) -> None:
        super().__init__(
            f"checking {chars} characters for credentials took more than {seconds:g} s of CPU; nothing was stored",
            field="content",
            help="split the text into smaller pieces",
        )
        self.reason = f"checking it for credentials took more than {seconds:g} s of CPU"


# CPU seconds one text may take to redact. Every rule is linear (about 0.3 s for the worst 1 MB found), so only a
# text far past the size limits — or a machine that is not running this thread — meets it.
REDACTION_BUDGET_SECONDS = 2.0


class Redactor:
    """Replaces credentials with `[redacted:<kind>]`, collecting what it replaced in `replaced` when given; a text
    whose rules take more than `budget` seconds of this thread's CPU raises `RedactionTooCostly`."""

    def __init__(self, rules: tuple[Rule, ...] = RULES, *, budget: float = REDACTION_BUDGET_SECONDS) -> None:
        self.rules = rules
        self.budget = budget
        # Every needle is looked for once per text, not once per rule that names it.
        self._needles = tuple({n for rule in rules if not rule.fold for n in rule.needles})
        self._folded_needles = tuple({n for rule in rules if rule.fold for n in rule.needles})
        self._all_need_needles = all(rule.needles for rule in rules)
        # The needles of the rules that apply to ordinary text (False) and to a configuration file (True).
        self._applying = {
            config: (
                tuple({n for r in rules if not r.fold and (config or not r.config_only) for n in r.needles}),
                tuple({n for r in rules if r.fold and (config or not r.config_only) for n in r.needles}),
            )
            for config in (False, True)
        }

    def needles_in(self, text: str) -> frozenset[str]:
        """The needles of every rule found in `text` (one look per needle; the folded ones in its lower case)."""
        present = {needle for needle in self._needles if needle in text}
        if self._folded_needles:
            folded = text.lower()
            present.update(needle for needle in self._folded_needles if needle in folded)
        return frozenset(present)

    def clean(self, text: str, *, config: bool = False, present: frozenset[str] | None = None) -> bool:
        """Whether no rule that applies (`config`: the configuration-only ones too) can match anywhere in `text`:
        none of their needles is in it (`present`: the text's `needles_in`, when the caller has it already)."""
        if not self._all_need_needles:
            return False
        plain, folded_needles = self._applying[config]
        if present is not None:
            return present.isdisjoint(plain) and present.isdisjoint(folded_needles)
        if any(needle in text for needle in plain):
            return False
        if folded_needles:
            folded = text.lower()
            return not any(needle in folded for needle in folded_needles)
        return True

    def text(
        self,
        text: str,
        *,
        config: bool = False,
        replaced: set[tuple[str, str]] | None = None,
        present: frozenset[str] | None = None,
    ) -> Redaction:
        """`text` with credentials redacted (`present`: its `needles_in`, when the caller has it already)."""
        replaced = set() if replaced is None else replaced
        started = time.thread_time()
        if present is None:
            present = self.needles_in(text)
        if not present and self._all_need_needles:
            return Redaction(text, replaced)  # most metadata values, and much ordinary text: no rule can match
        for rule in self.rules:
            if (rule.config_only and not config) or (rule.needles and present.isdisjoint(rule.needles)):
                continue
            text = rule.pattern.sub(functools.partial(_replace, rule=rule, replaced=replaced), text)
            if time.thread_time() - started > self.budget:
                raise RedactionTooCostly(self.budget, len(text))
        return Redaction(text, replaced)

    def value(self, value: Any, replaced: set[tuple[str, str]], *, key: str = "") -> Any:
        """A metadata value with credentials redacted; a string under a secret-looking key is replaced whole."""
        if isinstance(value, str):
            if key and _SECRET_KEY.fullmatch(key) and value.strip() and not _is_placeholder(value.strip()):
                replaced.add(("password", value))
                return MARKER.format("password")
            return self.text(value, replaced=replaced).text
        if isinstance(value, Mapping):
            return {k: self.value(v, replaced, key=str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v, replaced, key=key) for v in value]
        return value


_SECRET_KEY = re.compile(rf"(?i){_SECRET_KEY_WORDS}")


def _replace(match: re.Match[str], rule: Rule, replaced: set[tuple[str, str]]) -> str:
    if rule.accept is not None and not rule.accept(match):
        return match.group(0)
    kind = rule.kind
    groups = match.groupdict()
    for group in ("value", "dq", "sq"):
        if groups.get(group) is not None:
            secret = groups[group]
            if _is_placeholder(secret.strip("\"'")) or secret.startswith("[redacted:"):
                return match.group(0)
            replaced.add((kind, secret))
            start, end = match.span(group)
            whole = match.group(0)
            offset = match.start()
            return whole[: start - offset] + _marker(kind, secret) + whole[end - offset :]
    replaced.add((kind, match.group(0)))
    return _marker(kind, match.group(0))


def _metadata_strings(value: Any) -> list[str]:
    """Every string of a metadata snapshot, keys and values, at any depth."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for k, v in value.items() for text in (str(k), *_metadata_strings(v))]
    if isinstance(value, list | tuple):
        return [text for v in value for text in _metadata_strings(v)]
    return []


def _secret_keyed(value: Any, key: str = "") -> bool:
    """Whether a metadata snapshot holds a string under a secret-looking key (which `Redactor.value` replaces whole
    whatever it looks like)."""
    if isinstance(value, str):
        return bool(key) and bool(_SECRET_KEY.fullmatch(key)) and bool(value.strip())
    if isinstance(value, Mapping):
        return any(_secret_keyed(v, str(k)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_secret_keyed(v, key) for v in value)
    return False


def _marker(kind: str, secret: str) -> str:
    """What stands in for a secret: its kind, then as many line breaks as it spanned, so every line after it keeps
    its number (a hit's line range points into the file as it is)."""
    return MARKER.format(kind) + "\n" * secret.count("\n")


def redact_document(
    redactor: Redactor, raw: RawDocument, document: CanonicalDocument
) -> tuple[RawDocument, CanonicalDocument, Counter[str]]:
    """The document with credentials redacted in its text, title, name, tags, uri and metadata snapshot, and what
    was replaced."""
    # Most documents hold no needle of any rule in any field: one look over each text, and one over the short fields
    # joined by a character no needle holds, tells so. What is looked for once is not looked for again.
    config = is_config_name(document.name or raw.external_id)
    found = [redactor.needles_in(segment) for segment in document.segments]
    segments_clean = all(
        redactor.clean(s, config=config, present=p) for s, p in zip(document.segments, found, strict=True)
    )
    fields = [document.title or "", document.name or "", *document.tags, document.uri or "", raw.uri or ""]
    fields_clean = not _secret_keyed(raw.metadata) and redactor.clean(
        "\x00".join([*fields, *_metadata_strings(raw.metadata)])
    )
    if segments_clean and fields_clean:
        return raw, document, Counter()
    replaced: set[tuple[str, str]] = set()
    segments = tuple(
        redactor.text(segment, config=config, replaced=replaced, present=p).text
        for segment, p in zip(document.segments, found, strict=True)
    )
    title, name, tags, uri = document.title, document.name, document.tags, document.uri
    raw_uri, metadata = raw.uri, dict(raw.metadata)
    if not fields_clean:
        title = redactor.text(document.title, replaced=replaced).text if document.title else document.title
        name = redactor.text(document.name, replaced=replaced).text if document.name else document.name
        tags = tuple(dict.fromkeys(redactor.text(tag, replaced=replaced).text for tag in document.tags))
        uri = redactor.text(document.uri, replaced=replaced).text if document.uri else document.uri
        raw_uri = redactor.text(raw.uri, replaced=replaced).text if raw.uri else raw.uri
        metadata = redactor.value(dict(raw.metadata), replaced)
    if not replaced:
        return raw, document, Counter()
    return (
        replace(raw, metadata=metadata, title=title, uri=raw_uri),
        replace(document, segments=segments, title=title, name=name, tags=tags, uri=uri),
        Redaction("", replaced).found,
    )
