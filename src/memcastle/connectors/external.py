"""Out-of-process connectors: an executable in any language, declared by a manifest, speaking JSON lines.

The protocol (docs/connectors.md, "Writing a connector in any language"): MemCastle starts the program once per call
with no shell, writes one JSON request line to its standard input and reads its standard output:

- `{"op": "list", "locator", "options", "cursor"}` → one line per document, `{"id", "cursor"?}`, in order;
- `{"op": "read", "locator", "options", "id"}` → one line, `{"body", "title"?, "uri"?, "occurred_at"?,
  "metadata"?}`.

The manifest (`connector.toml`) names the program, its options, the folders it may read (`paths`), the hosts it may
reach (`hosts`) and the metadata keys it emits. MemCastle runs it with: the locator checked against both the declared
`paths` and `mining.roots` (as every connector's is), an environment of `PATH`, `HOME`, `LANG` and
`MEMCASTLE_CONNECTOR_PATHS` only, its own folder as the working folder, `timeout` seconds and `max_output_bytes` of
output per call. A malformed line, a hang, a crash or output past the bound fails that document (a read) or the
listing (and so the job, filing nothing) with the reason; what was filed before stays. Metadata keys the manifest does
not declare are dropped, with a warning. Network access is declared, shown when the connector is added, and not
enforced: this process has no sandbox for a child's sockets.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcastle.clock import parse_instant
from memcastle.connectors.contract import (
    Candidate,
    CanonicalDocument,
    ConnectorBase,
    OptionSpec,
    RawDocument,
    SkipDocument,
    SourceSpec,
    identify_source,
    local_path,
)
from memcastle.connectors.transcript import identity_options
from memcastle.errors import ConfigError, InvalidRequest

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_OUTPUT = 16 << 20
_KINDS = ("file", "note", "transcript", "commit", "other")


@dataclass(frozen=True)
class Manifest:
    """What a connector declares about itself, read from its `connector.toml`."""

    name: str
    description: str
    command: tuple[str, ...]
    folder: Path
    options: Mapping[str, str] = field(default_factory=dict)
    paths: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    metadata: tuple[str, ...] = ()
    kind: str = "other"
    timeout: float = DEFAULT_TIMEOUT
    max_output_bytes: int = DEFAULT_MAX_OUTPUT

    def permissions(self) -> list[str]:
        """What adding the connector grants, said plainly (what `memcastle connector add` asks consent to)."""
        folders = ", ".join(self.paths) or "no folder"
        hosts = ", ".join(self.hosts) or "no host"
        return [
            f"run {' '.join(self.command)} (in {self.folder}), without a shell",
            f"read inside {folders} (and only where mining.roots allows too)",
            f"reach {hosts} (declared; not enforced by a sandbox)",
            f"file drawers of kind {self.kind} with the metadata {', '.join(self.metadata) or '(none)'}",
        ]

    def fingerprint(self) -> str:
        """SHA-256 over the manifest and every file of the connector's folder its command names (the program, or
        the script an interpreter runs): a change to any needs consent again."""
        digest = hashlib.sha256((self.folder / "connector.toml").read_bytes())
        for part in self.command:
            named = self.folder / part
            if named.is_file():
                digest.update(part.encode() + b"\0" + named.read_bytes())
        return digest.hexdigest()


def read_manifest(path: Path) -> Manifest:
    """A `connector.toml`, checked; every error names the file and the key."""
    path = path.expanduser().resolve()
    if path.is_dir():
        path = path / "connector.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the connector manifest: {exc}", file=str(path)) from None
    table = data.get("connector")

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(message, file=str(path), key=f"connector.{key}")

    if not isinstance(table, dict):
        raise ConfigError("needs a [connector] table", file=str(path), key="connector")
    allowed = {"name", "description", "command", "options", "paths", "hosts", "metadata", "kind", "timeout",
               "max_output_bytes"}  # fmt: skip
    for key in table:
        if key not in allowed:
            raise fail(key, f"unknown key; allowed: {', '.join(sorted(allowed))}")
    name = table.get("name")
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum() or not name.islower():
        raise fail("name", "required: lowercase letters, digits, - and _")
    command = table.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(p, str) and p for p in command):
        raise fail("command", "required: the program and its arguments, a list of strings (no shell)")
    options = table.get("options", {})
    if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
        raise fail("options", "a table of option name = description")
    lists = {}
    for key in ("paths", "hosts", "metadata"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise fail(key, "a list of strings")
        lists[key] = tuple(value)
    kind = table.get("kind", "other")
    if kind not in _KINDS:
        raise fail("kind", f"one of {', '.join(_KINDS)}")
    timeout = table.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(timeout, int | float) or not 0 < timeout <= 3600:
        raise fail("timeout", "seconds, more than 0 and at most 3600")
    bound = table.get("max_output_bytes", DEFAULT_MAX_OUTPUT)
    if not isinstance(bound, int) or not 1024 <= bound <= 256 << 20:
        raise fail("max_output_bytes", "bytes, from 1024 to 268435456")
    return Manifest(
        name=name,
        description=str(table.get("description") or ""),
        command=tuple(command),
        folder=path.parent,
        options=dict(options),
        paths=lists["paths"],
        hosts=lists["hosts"],
        metadata=lists["metadata"],
        kind=kind,
        timeout=float(timeout),
        max_output_bytes=bound,
    )


class ExternalConnector(ConnectorBase):
    """A connector that is a program: the protocol above, the bounds its manifest sets."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.name = manifest.name
        self.source_kind = manifest.kind
        self.options: Mapping[str, OptionSpec] = {
            key: OptionSpec("string", description) for key, description in manifest.options.items()
        }

    def identify(self, source: SourceSpec) -> str:
        return identify_source(self.name, source.locator.strip(), identity_options(self.options, source.options))

    def default_wing(self, source: SourceSpec) -> str:
        return self.name

    def local_paths(self, source: SourceSpec) -> tuple[Path, ...]:
        return (local_path(source),) if source.locator.strip() else ()

    def check(self, source: SourceSpec) -> None:
        """A locator outside the folders the manifest declares is refused, naming it (mining.roots applies too)."""
        if not source.locator.strip():
            return
        where = local_path(source)
        declared = [Path(p).expanduser().resolve() for p in self.manifest.paths]
        if not any(where == folder or where.is_relative_to(folder) for folder in declared):
            raise InvalidRequest(
                f"{where} is outside the folders connector {self.name!r} declared ({', '.join(self.manifest.paths)})",
                field="locator",
            )

    def discover(self, source: SourceSpec, cursor: str | None) -> list[Candidate]:
        lines = self._call({"op": "list", "cursor": cursor}, source)
        found = []
        for number, item in enumerate(lines, start=1):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
                raise SkipDocument(f"connector {self.name!r}: listing line {number} has no id")
            after = item.get("cursor")
            found.append(Candidate(item["id"], cursor_after=str(after) if after is not None else None))
        return found

    def read(self, source: SourceSpec, candidate: Candidate) -> RawDocument:
        lines = self._call({"op": "read", "id": candidate.external_id}, source)
        if len(lines) != 1 or not isinstance(lines[0], dict) or not isinstance(lines[0].get("body"), str):
            raise SkipDocument(f'connector {self.name!r} answered a read with no {{"body"}} line')
        answer = lines[0]
        given = answer.get("metadata")
        metadata: dict[str, Any] = given if isinstance(given, dict) else {}
        kept = {k: v for k, v in metadata.items() if k in self.manifest.metadata}
        dropped = sorted(set(metadata) - set(kept))
        warnings = (f"metadata the manifest does not declare was dropped: {', '.join(dropped)}",) if dropped else ()
        occurred = answer.get("occurred_at")
        try:
            occurred_at = parse_instant(occurred, field="occurred_at") if isinstance(occurred, str) else None
        except InvalidRequest:
            occurred_at = None
        return RawDocument(
            external_id=candidate.external_id,
            body=answer["body"],
            metadata=kept,
            occurred_at=occurred_at,
            title=answer.get("title") if isinstance(answer.get("title"), str) else None,
            uri=answer.get("uri") if isinstance(answer.get("uri"), str) else None,
            warnings=warnings,
        )

    def normalize(self, raw: RawDocument) -> CanonicalDocument:
        return CanonicalDocument(kind=self.source_kind, segments=(raw.body,), title=raw.title, name=raw.external_id,
                                 uri=raw.uri)  # fmt: skip

    def _call(self, request: Mapping[str, Any], source: SourceSpec) -> list[Any]:
        """Run the program once; its JSON lines, or `SkipDocument` with why not."""
        manifest = self.manifest
        payload = json.dumps({**request, "locator": source.locator, "options": dict(source.options)}) + "\n"
        env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
        env["MEMCASTLE_CONNECTOR_PATHS"] = os.pathsep.join(manifest.paths)
        argv = [str(manifest.folder / manifest.command[0]) if (manifest.folder / manifest.command[0]).is_file()
                else manifest.command[0], *manifest.command[1:]]  # fmt: skip
        try:
            # A session of its own: on a timeout the whole group goes — a child the program started (`sleep` under
            # `sh`) would otherwise hold its output open, and the mine's worker with it, for as long as it lives.
            process = subprocess.Popen(
                argv, cwd=manifest.folder, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise SkipDocument(f"connector {self.name!r} could not be started: {exc}") from None
        try:
            out, err = process.communicate(payload.encode(), timeout=manifest.timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise SkipDocument(f"connector {self.name!r} did not answer within {manifest.timeout:g} s") from None
        if len(out) > manifest.max_output_bytes:
            raise SkipDocument(f"connector {self.name!r} wrote more than {manifest.max_output_bytes} bytes")
        if process.returncode != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()
            raise SkipDocument(
                f"connector {self.name!r} exited with {process.returncode}: {tail[-1] if tail else 'no message'}"
            )
        lines = []
        for number, line in enumerate(out.decode("utf-8", "replace").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SkipDocument(f"connector {self.name!r}: output line {number} is not JSON ({exc.msg})") from None
        return lines


def load_external(manifests: Sequence[Manifest]) -> dict[str, ExternalConnector]:
    return {manifest.name: ExternalConnector(manifest) for manifest in manifests}
