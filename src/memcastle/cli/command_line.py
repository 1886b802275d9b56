"""The `memcastle` command line: the click group, global options, the output rule, and errors → exit codes.

Commands live in `memcastle.cli.commands`, one module per group; `memcastle.cli.main` names which module holds each
top-level command, and a call imports only the module of the command it runs. The command line is a thin HTTP
client: it imports nothing of the server, and rich only when it prints to a terminal
(docs/adr/0014-a-light-command-line.md).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memcastle import __version__
from memcastle.cli import render
from memcastle.errors import DaemonNotRunning, InvalidRequest, MemCastleError
from memcastle.modes import MODES

if TYPE_CHECKING:
    from memcastle.cli.client import DaemonClient
    from memcastle.config import Settings

EXIT_ERROR = 1
EXIT_NO_DAEMON = DaemonNotRunning.exit_code  # status's 'not running'
# -v and -vv: the log level they set (`logging.level`) for this command, and for the daemon `serve` runs.
VERBOSITY = (None, "info", "debug")


@dataclass
class Invocation:
    """Global options, resolved into settings on first use."""

    palace: Path | None
    config: Path | None
    json: bool
    mode: str | None
    verbose: int = 0
    _settings: Settings | None = None

    def settings(self, **flags: Any) -> Settings:
        from memcastle.config import load_settings  # on use: `--help` reads no configuration

        if self._settings is None or flags:
            level = VERBOSITY[min(self.verbose, len(VERBOSITY) - 1)]
            base = {"palace": str(self.palace) if self.palace else None, "mode": self.mode, "logging.level": level}
            self._settings = load_settings(flags={**base, **flags}, config_file=self.config)
        return self._settings

    def client(self) -> DaemonClient:
        from memcastle.cli.client import DaemonClient

        return DaemonClient(self.settings())

    @property
    def as_json(self) -> bool:
        return render.wants_json(self.json)

    def emit(self, data: Any, show: Callable[[Any], None]) -> None:
        """The one output rule: JSON when piped or with --json, `show(data)` rendered on a terminal."""
        if self.as_json:
            render.print_json(data)
        else:
            show(data)


pass_invocation = click.make_pass_decorator(Invocation)


def group(name: str, parent: click.Group, help: str) -> click.Group:
    """A command group under `parent` (`memcastle drawer …`); without a subcommand it prints its help."""

    @parent.group(name, help=help, no_args_is_help=True)
    def command_group() -> None:
        pass

    return command_group


class LazyGroup(click.Group):
    """A group whose commands are registered by the modules that define them, imported when a call needs them: a
    command's name maps to the modules under `memcastle.cli.commands` that add to it (click's lazy-loading
    pattern)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.modules: Mapping[str, tuple[str, ...]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.modules})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        for module in self.modules.get(cmd_name, ()):
            importlib.import_module(f"memcastle.cli.commands.{module}")
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=LazyGroup,
    help="MemCastle: a local-first memory server for AI agents.",
    no_args_is_help=True,
    context_settings={"show_default": True, "max_content_width": 110},
)
@click.option("--palace", type=click.Path(path_type=Path), help="palace directory")
@click.option("--config", type=click.Path(path_type=Path), help="config file to read instead of the XDG one")
@click.option("--json", "json_output", is_flag=True, help="print JSON even on a terminal")
@click.option("--mode", help="memory mode: full, read_only, disabled")
@click.option("-v", "--verbose", count=True, help="log more: -v info, -vv debug (sets logging.level)")
@click.version_option(__version__, "--version", prog_name="memcastle", message="%(prog)s %(version)s")
@click.pass_context
def app(
    ctx: click.Context, palace: Path | None, config: Path | None, json_output: bool, mode: str | None, verbose: int
) -> None:
    if mode is not None and mode not in MODES:
        raise InvalidRequest(f"--mode must be one of {', '.join(MODES)}", field="mode")
    ctx.obj = Invocation(palace=palace, config=config, json=json_output, mode=mode, verbose=verbose)
    if verbose:
        import logging

        # This command's own log (the daemon configures its own from logging.level, which -v sets too).
        logging.basicConfig(level=("INFO", "DEBUG")[min(verbose, 2) - 1], format="%(levelname)s %(name)s: %(message)s")


def wait_option(help: str = "follow the job to its end") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--wait", is_flag=True, help=help)


def read_content(content: str) -> str:
    return sys.stdin.read() if content == "-" else content


def text_of(words: tuple[str, ...], from_file: Any, edit: bool) -> str:
    """A note's (or checkpoint's) text: WORDS as typed, --file, --edit in $EDITOR, or standard input (`-`, or piped
    with no words); an empty one is refused."""
    if from_file is not None and (words or edit):
        raise InvalidRequest("give the note as words, --file or --edit, not several", field="content")
    if from_file is not None:
        text = str(from_file.read())
    elif words == ("-",) or (not words and not edit and not sys.stdin.isatty()):
        text = sys.stdin.read()
    elif edit:
        text = click.edit(" ".join(words) + "\n", extension=".md") or ""
    else:
        text = " ".join(words)
    if not text.strip():
        raise InvalidRequest(
            "nothing to save: the note is empty",
            field="content",
            help="memcastle note some words, memcastle note --file notes.md, memcastle note --edit, or pipe text in",
        )
    return text


def request_sweep(inv: Invocation, path: str, wait: bool) -> None:
    """Queue a background sweep (or join the queued one); follow it when asked."""
    data = inv.client().post(path)
    job = data.get("job")
    if job is None:
        inv.emit(data, lambda data: render.console.print(data["message"]))
        return
    if wait:
        job = wait_for_job(inv, job)
    inv.emit({"job": job}, lambda data: render.show_job(job))


def wait_for_job(inv: Invocation, job: dict[str, Any]) -> dict[str, Any]:
    """Follow a job to its end through the event stream, with a progress bar on a terminal that says why it waits."""
    from memcastle.cli.follow import follow_job

    client = inv.client()
    if inv.as_json:
        return follow_job(client, job, lambda _: None)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=render.console, transient=True) as bar:
        task = bar.add_task(job["kind"], total=None)

        def show(job: dict[str, Any]) -> None:
            progress = job.get("progress") or {}
            bar.update(
                task,
                completed=progress.get("current", 0),
                total=progress.get("total"),
                description=f"{job['kind']} · {job.get('waiting') or progress.get('message') or job['status']}",
            )

        return follow_job(client, job, show)


def run() -> None:
    """Console-script entry point: one place turns errors into a message and an exit code."""
    try:
        # Standalone mode lets click handle usage errors (exit 2) and `ctx.exit` codes; our errors pass through.
        app.main(args=hoist_json_flag(sys.argv[1:]), prog_name="memcastle")
    except MemCastleError as exc:
        _report(exc)
        sys.exit(exc.exit_code)  # 1, or 3 when no daemon serves the palace (the error's class says)


def hoist_json_flag(args: list[str]) -> list[str]:
    """`--json` is a global option, but people type it after the command (`memcastle search x --json`): move it
    to the front. Nothing after a `--` is touched."""
    end = args.index("--") if "--" in args else len(args)
    if "--json" not in args[1:end]:
        return args
    return ["--json", *[a for i, a in enumerate(args) if not (a == "--json" and i < end)]]


def _report(exc: MemCastleError) -> None:
    from rich.markup import escape

    # Messages quote user data (paths, names, `[/socket/dir]` locations): printed as text, never as markup.
    render.errors.print(f"[red]error:[/red] {escape(exc.message)}")
    if exc.help:
        render.errors.print(f"[dim]hint: {escape(exc.help)}[/dim]")
