"""`memcastle doctor`: what a support request would ask, checked here, each finding with what to do; and
`memcastle tui`, the terminal console whose readiness view shows the same findings."""

from __future__ import annotations

import sys
from typing import Any

import click

from memcastle.cli.command_line import Invocation, app

STYLE = {"ok": "green", "info": "cyan", "warning": "yellow", "error": "red"}


@app.command("doctor")
@click.pass_context
def doctor(ctx: click.Context) -> None:
    """Check versions, the configuration and its layers, the palace (path, permissions, schema, disk), the
    embedding model, the daemon and its port, agent hooks and the service — without a daemon, changing nothing.
    Each finding says what to do. Exit 0 all well, 1 warnings, 2 errors."""
    from memcastle.doctor import diagnose, exit_code
    from memcastle.runtime.launcher import is_healthy

    inv = ctx.find_object(Invocation)
    assert inv is not None
    flags = {"palace": str(inv.palace) if inv.palace else None, "mode": inv.mode}
    _, findings = diagnose(flags=flags, config_file=inv.config, healthy=is_healthy)
    code = exit_code(findings)

    def show(data: Any) -> None:
        for f in data["findings"]:
            level = click.style(f"{f['level']:7}", fg=STYLE[f["level"]])
            click.echo(f"{level} {f['check']:14} {f['detail']}")
            if f["fix"] and f["level"] != "ok":
                click.echo(f"{'':23}→ {f['fix']}")

    inv.emit({"ok": code == 0, "exit_code": code, "findings": [f.to_json() for f in findings]}, show)
    ctx.exit(code)


@app.command("tui")
@click.pass_context
def tui(ctx: click.Context) -> None:
    """A terminal console for the running daemon: jobs (live, with pause, resume and cancel), a search test bench
    (query, ranking, and each hit's score, signals and preference), readiness (doctor's checks) and maintenance
    (audit and repair). Needs the `tui` extra: pip install 'memcastle[tui]'."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        from memcastle.errors import InvalidRequest

        raise InvalidRequest(
            "memcastle tui needs a terminal: its input or output is a pipe or a file",
            help="run it in a terminal; from a script: memcastle job list, memcastle search, memcastle doctor",
        )
    try:
        from memcastle.cli.tui import Console
    except ImportError as exc:
        from memcastle.errors import ConfigError

        raise ConfigError(
            f"the terminal console needs Textual, which is not installed ({exc.name})",
            help="pip install 'memcastle[tui]'",
        ) from None
    from memcastle.doctor import diagnose
    from memcastle.runtime.launcher import is_healthy

    inv = ctx.find_object(Invocation)
    assert inv is not None
    client = inv.client()
    flags = {"palace": str(inv.palace) if inv.palace else None, "mode": inv.mode}

    def checks() -> list[dict[str, str]]:
        return [f.to_json() for f in diagnose(flags=flags, config_file=inv.config, healthy=is_healthy)[1]]

    Console(client.call, checks, palace=str(inv.settings().palace)).run()
