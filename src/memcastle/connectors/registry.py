"""The connector registry: the built-in connectors plus those installed under the `memcastle.connectors` group."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from memcastle.clock import parse_instant
from memcastle.connectors.contract import Connector, ConnectorCore, PathAccess, SourceSpec, with_defaults
from memcastle.errors import InvalidRequest, UnknownOption

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "memcastle.connectors"


class ConnectorRegistry:
    """Name → connector; validates a mine request's options against what the connector declares, and hands every
    source the boundary of what it may read (`access`)."""

    def __init__(self, connectors: Mapping[str, Connector], *, access: PathAccess | None = None) -> None:
        self._connectors = dict(connectors)
        self._access = access

    @property
    def names(self) -> list[str]:
        return sorted(self._connectors)

    def get(self, name: str) -> Connector:
        try:
            return self._connectors[name]
        except KeyError:
            raise InvalidRequest(
                f"no connector named {name!r}; available: {', '.join(self.names)}",
                field="connector",
                help="third-party connectors register under the entry-point group memcastle.connectors",
            ) from None

    def source_spec(self, name: str, locator: str, options: Mapping[str, Any]) -> SourceSpec:
        """Check options against the connector's declaration; dates are normalized, paths expanded."""
        connector = self.get(name)
        clean: dict[str, str] = {}
        for key, value in options.items():
            spec = connector.options.get(key)
            if spec is None:
                raise UnknownOption.of(key, list(connector.options), connector=name)
            if not isinstance(value, str) or not value.strip():
                raise InvalidRequest(f"option {key!r} must be a non-empty string", field=f"options.{key}")
            if spec.type == "date":
                clean[key] = parse_instant(value, field=f"options.{key}")
            else:
                clean[key] = value.strip()
        if not isinstance(locator, str):
            raise InvalidRequest("locator must be a string", field="locator")
        return SourceSpec(locator=locator.strip(), options=clean, access=self._access)

    def describe(self) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "source_kind": connector.source_kind,
                "options": {
                    k: {"type": o.type, "description": o.description, "identity": o.identity}
                    for k, o in connector.options.items()
                },
            }
            for name, connector in sorted(self._connectors.items())
        ]


def load_registry(builtins: Mapping[str, Connector], *, access: PathAccess | None = None) -> ConnectorRegistry:
    """Built-ins first; an installed connector may add a new name but never replace a built-in one."""
    connectors: dict[str, Connector] = dict(builtins)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            factory = entry.load()
            connector = factory()
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not stop the daemon
            log.error("connector entry point %s could not be loaded: %s", entry.value, exc)
            continue
        if not isinstance(connector, ConnectorCore):
            log.error(
                "entry point %s does not provide a connector (name, options, identify, discover, read, normalize)",
                entry.value,
            )
            continue
        if connector.name in builtins:
            log.warning(
                "entry point %s tried to replace the built-in connector %r; ignored", entry.value, connector.name
            )
            continue
        connectors[connector.name] = with_defaults(connector)
    return ConnectorRegistry(connectors, access=access)
