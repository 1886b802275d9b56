"""`memcastle daemon …`: the palace's daemon in the background — start, stop, restart, status — and as a per-user
service started at login (install, uninstall)."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

import click

from memcastle.cli.command_line import EXIT_ERROR, EXIT_NO_DAEMON, Invocation, app, group, pass_invocation
from memcastle.errors import InvalidRequest

daemon_app = group("daemon", app, "Run the palace's daemon in the background, or as a service started at login.")

_timeout = click.option("--timeout", type=float, default=60.0, show_default=True, help="seconds to wait for the daemon")


def _start(inv: Invocation, host: str | None, port: int | None, timeout: float) -> dict[str, Any]:
    from memcastle.runtime.daemons import state_dir
    from memcastle.runtime.launcher import start_daemon

    settings = inv.settings()  # a malformed config fails here, in the foreground, not in a log nobody reads
    started = start_daemon(
        state_dir(), settings.palace, config_file=inv.config, host=host, port=port, timeout=timeout, verbose=inv.verbose
    )
    entry = started.entry
    return {
        "started": not started.already,
        "pid": entry.pid,
        "address": entry.address,
        "palace": entry.palace,
        "version": entry.version,
        "log": str(started.log),
        "message": (
            f"already running: pid {entry.pid} at {entry.address}"
            if started.already
            else f"started: pid {entry.pid} at {entry.address}"
        ),
    }


def _stop(inv: Invocation, timeout: float, force: bool) -> dict[str, Any]:
    from memcastle.cli.client import DaemonClient
    from memcastle.runtime.daemons import state_dir
    from memcastle.runtime.launcher import stop_daemon

    settings = inv.settings()
    try:
        stopped = stop_daemon(
            state_dir(),
            settings.palace,
            lambda _: DaemonClient(settings).post("/shutdown"),
            timeout=timeout,
            force=force,
        )
    except TimeoutError as exc:
        raise InvalidRequest(str(exc)) from None
    if stopped.pid is None:
        return {"stopped": False, "pid": None, "address": None, "message": f"not running ({stopped.why})"}
    how = "terminated" if stopped.forced else "drained and stopped"
    return {
        "stopped": True,
        "pid": stopped.pid,
        "address": stopped.address,
        "seconds": round(stopped.seconds, 2),
        "forced": stopped.forced,
        "message": f"{how}: pid {stopped.pid} in {stopped.seconds:.1f} s",
    }


def _say(inv: Invocation, data: dict[str, Any]) -> None:
    def show(data: Any) -> None:
        click.echo(data["message"])
        if data.get("log"):
            click.echo(f"log      {data['log']}")

    inv.emit(data, show)


@daemon_app.command("start")
@click.option("--host", help="address to bind (default: server.host)")
@click.option("--port", type=int, help="port to bind; 0 picks a free one (default: server.port)")
@_timeout
@pass_invocation
def daemon_start(inv: Invocation, host: str | None, port: int | None, timeout: float) -> None:
    """Start the palace's daemon in the background; returns once it answers, with its address and log file. A
    daemon already serving the palace is left as it is."""
    _say(inv, _start(inv, host, port, timeout))


@daemon_app.command("stop")
@_timeout
@click.option("--force", is_flag=True, help="if it has not exited after --timeout, send SIGTERM and wait again")
@pass_invocation
def daemon_stop(inv: Invocation, timeout: float, force: bool) -> None:
    """Ask the daemon to drain its jobs (running ones are requeued, not lost) and wait until it has exited."""
    _say(inv, _stop(inv, timeout, force))


@daemon_app.command("restart")
@click.option("--host", help="address to bind (default: server.host)")
@click.option("--port", type=int, help="port to bind; 0 picks a free one (default: server.port)")
@_timeout
@click.option("--force", is_flag=True, help="if it has not exited after --timeout, send SIGTERM and wait again")
@pass_invocation
def daemon_restart(inv: Invocation, host: str | None, port: int | None, timeout: float, force: bool) -> None:
    """Stop the daemon (draining it), then start it again in the background."""
    stopped = _stop(inv, timeout, force)
    if stopped["address"] and host is None and port is None:
        # The same address again, even one a `--port 0` start picked: clients that found it keep finding it.
        parts = urlsplit(stopped["address"])
        host, port = parts.hostname, parts.port
    started = _start(inv, host, port, timeout)
    _say(inv, {**started, "stopped": stopped, "message": f"{stopped['message']}; {started['message']}"})


@daemon_app.command("status")
@click.pass_context
def daemon_status(ctx: click.Context) -> None:
    """Is a daemon running for the palace: pid, address, since when, log file, installed service. Exit 0 running,
    1 registered but not answering, 3 not running (a stale registry entry is removed and said so)."""
    from memcastle.runtime.daemons import find_daemon, state_dir
    from memcastle.runtime.launcher import is_healthy, log_file, log_tail
    from memcastle.runtime.service_unit import default_platform, service_unit

    inv = ctx.find_object(Invocation)
    assert inv is not None
    settings = inv.settings()
    states = state_dir()
    entry, why = find_daemon(states, settings.palace)
    log = log_file(states, settings.palace)
    unit = service_unit(default_platform(), states, settings.palace, [], log)
    data: dict[str, Any] = {
        "running": entry is not None,
        "palace": str(settings.palace),
        "log": str(log) if log.exists() else None,
        "service": {"name": unit.name, "path": str(unit.path), "installed": unit.path.exists()},
    }
    if entry is None:
        data["why"] = why
    else:
        healthy = is_healthy(entry.address)
        data.update(
            pid=entry.pid, address=entry.address, version=entry.version, started_at=entry.started_at, healthy=healthy
        )
        if not healthy:
            data["log_tail"] = list(log_tail(log, 5))

    def show(data: Any) -> None:
        if not data["running"]:
            click.echo(f"{click.style('not running', fg='yellow')} — {data['why']}")
        else:
            state = click.style("running", fg="green") if data["healthy"] else click.style("not answering", fg="red")
            click.echo(f"{state}  pid {data['pid']} at {data['address']} since {data['started_at']}")
        click.echo(f"palace   {data['palace']}")
        if data["log"]:
            click.echo(f"log      {data['log']}")
        for line in data.get("log_tail", []):
            click.echo(f"         {line}")
        service = data["service"]
        installed = "installed" if service["installed"] else "not installed (memcastle daemon install)"
        click.echo(f"service  {service['name']} — {installed}")

    inv.emit(data, show)
    ctx.exit(0 if entry is not None and data["healthy"] else EXIT_ERROR if entry is not None else EXIT_NO_DAEMON)


@daemon_app.command("install")
@click.option(
    "--platform",
    type=click.Choice(["systemd", "launchd"]),
    help="the service manager (default: launchd on macOS, systemd elsewhere)",
)
@click.option("--no-enable", is_flag=True, help="write the service file only; do not load or start it")
@click.option("--print", "print_only", is_flag=True, help="print the service file; write nothing")
@pass_invocation
def daemon_install(inv: Invocation, platform: str | None, no_enable: bool, print_only: bool) -> None:
    """Install a per-user service that starts the palace's daemon at login (a systemd user unit, or a launchd
    agent on macOS) and restarts it after a crash; then load and start it, unless --no-enable."""
    from memcastle.runtime.daemons import state_dir
    from memcastle.runtime.launcher import log_file, serve_command
    from memcastle.runtime.service_unit import carried_environment, default_platform, run_commands, service_unit

    settings = inv.settings()
    states = state_dir()
    command = serve_command(settings.palace, config_file=inv.config)
    log = log_file(states, settings.palace)
    environment = carried_environment(os.environ)
    unit = service_unit(platform or default_platform(), states, settings.palace, command, log, environment=environment)
    if print_only:
        click.echo(unit.text, nl=False)
        return
    unit.path.parent.mkdir(parents=True, exist_ok=True)
    temporary = unit.path.with_suffix(unit.path.suffix + ".tmp")
    temporary.write_text(unit.text, encoding="utf-8")
    os.replace(temporary, unit.path)
    loaded, why = (False, "--no-enable") if no_enable else run_commands(unit.load)
    data = {
        "service": unit.name,
        "path": str(unit.path),
        "platform": unit.platform,
        "command": command,
        "enabled": loaded,
        "why_not_enabled": None if loaded else why,
        "enable_with": [" ".join(c) for c in unit.load],
    }

    def show(data: Any) -> None:
        click.echo(f"wrote {data['path']}")
        if data["enabled"]:
            click.echo(f"enabled and started {data['service']}: it starts at login")
        else:
            click.echo(f"not enabled ({data['why_not_enabled']}); enable it with:")
            for line in data["enable_with"]:
                click.echo(f"  {line}")

    inv.emit(data, show)


@daemon_app.command("uninstall")
@click.option(
    "--platform",
    type=click.Choice(["systemd", "launchd"]),
    help="the service manager (default: launchd on macOS, systemd elsewhere)",
)
@pass_invocation
def daemon_uninstall(inv: Invocation, platform: str | None) -> None:
    """Stop and remove the per-user service of the palace (a running daemon it started is stopped by its manager;
    stop any other with memcastle daemon stop)."""
    from memcastle.runtime.daemons import state_dir
    from memcastle.runtime.launcher import log_file
    from memcastle.runtime.service_unit import default_platform, run_commands, service_unit

    settings = inv.settings()
    states = state_dir()
    unit = service_unit(platform or default_platform(), states, settings.palace, [], log_file(states, settings.palace))
    if not unit.path.exists():
        raise InvalidRequest(f"no service is installed for palace {settings.palace} (looked for {unit.path})")
    unloaded, why = run_commands(unit.unload[:1])
    unit.path.unlink()
    if unit.platform == "systemd" and unloaded:
        run_commands(unit.unload[1:])
    data = {"service": unit.name, "path": str(unit.path), "removed": True, "unloaded": unloaded, "why": why or None}

    def show(data: Any) -> None:
        click.echo(f"removed {data['path']}")
        if not data["unloaded"]:
            click.echo(f"(the service manager was not told: {data['why']})")

    inv.emit(data, show)
