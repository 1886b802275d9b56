"""The settings of a command or HTTP provider, checked the one way for embeddings and extraction: a model name, a
timeout (positive, finite), the command's argv or the endpoint's URL, and its API key."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memcastle.errors import ConfigError


@dataclass(frozen=True)
class RemoteSettings:
    """What a `command` or `http` provider is built from."""

    model: str
    timeout: float
    command: tuple[str, ...] = ()
    url: str = ""
    api_key: str | None = None


def model_name(section: str, config: Mapping[str, Any]) -> str:
    """The `model` setting: a string (empty when not set)."""
    model = config.get("model") or ""
    if not isinstance(model, str):
        raise ConfigError(f"must be a string, got {model!r}", key=f"{section}.model")
    return model


def remote_settings(section: str, kind: str, config: Mapping[str, Any], default_timeout: float) -> RemoteSettings:
    """The settings of the `kind` ("command" or "http") provider of `section` ("embeddings", "extraction"), each
    refused by its key when malformed. A model is required: it names what embedded or read a drawer, so a change of
    model is noticed."""
    model = model_name(section, config)
    if not model:
        raise ConfigError(f"the {kind} provider needs a model name", key=f"{section}.model")
    timeout = config.get("timeout")
    if timeout is None:
        timeout = default_timeout
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
        raise ConfigError(f"must be a positive number of seconds, got {timeout!r}", key=f"{section}.timeout")
    if kind == "command":
        command = config.get("command")
        if not isinstance(command, (list, tuple)):
            raise ConfigError(f"must be a list of strings (argv, no shell), got {command!r}", key=f"{section}.command")
        return RemoteSettings(model, float(timeout), command=tuple(command))
    url = config.get("url") or ""
    if not isinstance(url, str) or not url:
        raise ConfigError("the http provider needs the endpoint's base URL", key=f"{section}.url")
    api_key = config.get("api_key") or None
    if api_key is not None and not isinstance(api_key, str):
        raise ConfigError("must be a string", key=f"{section}.api_key")
    return RemoteSettings(model, float(timeout), url=url, api_key=api_key)
