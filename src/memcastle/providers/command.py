"""Running a provider command: argv without a shell, JSON on stdin, JSON on stdout, a timeout that kills its group.

Shared by the `command` embedding and extraction providers. The child never sees MEMCASTLE_* variables, which may
hold secrets such as API keys.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from memcastle.errors import ProviderError

TAIL_CHARS = 400


def child_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment minus MEMCASTLE_* variables."""
    source = os.environ if environ is None else environ
    return {key: value for key, value in source.items() if not key.upper().startswith("MEMCASTLE_")}


def tail(raw: bytes | str) -> str:
    """The end of a provider's output, for an error message."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = text.strip()
    if not text:
        return "(nothing)"
    return text if len(text) <= TAIL_CHARS else "…" + text[-TAIL_CHARS:]


def ask_command(argv: Sequence[str], request: Any, *, timeout: float, who: str) -> Any:
    """Send `request` as JSON, return the parsed JSON answer; every failure is a `ProviderError` naming `who`."""
    payload = json.dumps(request).encode("utf-8")
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_environment(),
            # Its own process group, so a timeout also ends whatever the command started.
            start_new_session=True,
        )
    except OSError as exc:
        raise ProviderError(f"{who} could not start: {exc}") from exc
    try:
        out, err = process.communicate(payload, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        raise ProviderError(f"{who} gave no answer within {timeout:g} s") from None
    if process.returncode != 0:
        raise ProviderError(f"{who} exited with status {process.returncode}; stderr: {tail(err)}")
    try:
        return json.loads(out)
    except ValueError:
        raise ProviderError(f"{who} did not print JSON; stdout: {tail(out)}; stderr: {tail(err)}") from None


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except (ProcessLookupError, PermissionError):
        process.kill()
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        # Something escaped the process group and still holds the pipes; stop waiting for it.
        process.kill()
        process.wait()
