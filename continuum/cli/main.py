"""The `continuum` command: the Typer app with every command module mounted, and `main()`,
the console script.

Each module under `continuum.cli` owns one area and exposes a Typer `app` whose commands (and
command groups) join the top level here. Modules import only typer and `continuum.cli.common`
at load time; everything heavy loads inside the command that needs it, so `continuum --help`
and `continuum emit` start fast.
"""

from __future__ import annotations

import sys

import typer

from continuum.cli import (
    api,
    events,
    memory,
    messages,
    portability,
    processes,
    recall,
    runtimes,
    search,
    security,
    servers,
    sessions,
    status,
    sync,
    usage,
    workspace,
)
from continuum.cli.common import print_error

app = typer.Typer(help="Continuum: durable memory for AI agents.", no_args_is_help=True)
for module in (
    servers,
    events,
    processes,
    messages,
    search,
    sessions,
    sync,
    status,
    recall,
    memory,
    security,
    api,
    runtimes,
    usage,
    workspace,
    portability,
):
    app.add_typer(module.app)


def main() -> None:
    """Run the command line; a configuration error exits 2 with its message."""
    try:
        app()
    except Exception as exc:
        from continuum.config import ConfigError

        if not isinstance(exc, ConfigError):
            raise
        print_error(str(exc))
        sys.exit(2)


if __name__ == "__main__":
    main()
