"""Which out-of-process connectors a person has agreed to, and to exactly what: one JSON file of consents (the
manifest's path, its permissions as shown, and the fingerprint of manifest and program at that moment). A connector
whose manifest or program changed since is not loaded until it is agreed to again."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from memcastle.clock import utc_now
from memcastle.connectors.external import Manifest, read_manifest
from memcastle.errors import ConfigError, NotFound

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Consent:
    name: str
    manifest: str
    fingerprint: str
    permissions: tuple[str, ...]
    consented_at: str


class ConsentBook:
    def __init__(self, path: Path) -> None:
        self.path = path

    def consents(self) -> list[Consent]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise ConfigError(f"the connector consents cannot be read: {exc}", file=str(self.path)) from None
        return [Consent(**{**item, "permissions": tuple(item["permissions"])}) for item in data.get("connectors", [])]

    def add(self, manifest: Manifest) -> Consent:
        consent = Consent(
            name=manifest.name,
            manifest=str(manifest.folder / "connector.toml"),
            fingerprint=manifest.fingerprint(),
            permissions=tuple(manifest.permissions()),
            consented_at=utc_now(),
        )
        self._write([c for c in self.consents() if c.name != manifest.name] + [consent])
        return consent

    def remove(self, name: str) -> None:
        kept = [c for c in self.consents() if c.name != name]
        if len(kept) == len(self.consents()):
            raise NotFound(f"no connector named {name!r} was added")
        self._write(kept)

    def manifests(self, builtin: set[str]) -> list[Manifest]:
        """The agreed connectors whose manifest and program are as they were agreed to; the others are left out
        with a warning naming what to do."""
        loaded = []
        for consent in self.consents():
            try:
                manifest = read_manifest(Path(consent.manifest))
            except ConfigError as exc:
                log.warning("connector %s is not loaded: %s", consent.name, exc.message)
                continue
            if manifest.name in builtin:
                log.warning("connector %s is not loaded: a built-in connector has that name", manifest.name)
            elif manifest.fingerprint() != consent.fingerprint:
                log.warning(
                    "connector %s changed since it was added; agree to it again: memcastle connector add %s",
                    manifest.name,
                    consent.manifest,
                )
            else:
                loaded.append(manifest)
        return loaded

    def _write(self, consents: list[Consent]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"connectors": [asdict(c) for c in consents]}, indent=2), encoding="utf-8")
        os.replace(temporary, self.path)
