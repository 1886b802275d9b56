"""The CLI reference: every command's `--help`, as the terminal prints it, for docs/cli-reference.md (generated there
with cog: `cog -r docs/cli-reference.md`; `cog --check` in CI fails when a command's help changed without it)."""

from __future__ import annotations

import click

WIDTH = 110  # columns the help is laid out in (the CLI's own `max_content_width`), whatever terminal regenerates it


def help_pages(group: click.Group, name: str = "memcastle") -> str:
    """Each command under `group` (loaded: a lazy group lists its commands on demand) with its help, depth first in
    the order `--help` lists them."""
    return "\n".join(_pages(group, name, None))


def _pages(command: click.Command, name: str, parent: click.Context | None) -> list[str]:
    settings = {"terminal_width": WIDTH, **command.context_settings}
    context = click.Context(command, info_name=name, parent=parent, **settings)
    pages = [f"## {context.command_path}\n", "```", command.get_help(context).rstrip(), "```\n"]
    if isinstance(command, click.Group):
        for sub_name in command.list_commands(context):
            sub = command.get_command(context, sub_name)
            if sub is not None and not sub.hidden:
                pages += _pages(sub, sub_name, context)
    return pages
