"""What every `continuum` command shares: the consoles, the error exit, JSON output, date
arguments and the options many commands take.

Light on purpose (the CLI's startup time is every `continuum ...` call's): rich is imported
when a console is first used, so commands that print only JSON (`emit`) never load it.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import cache
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from rich.console import Console

NamespaceOption = typer.Option(..., "--namespace", "-n", help="Tenant (instance).")
UserOption = typer.Option(None, "--user", help="The user: their items and unowned ones.")
ChannelOption = typer.Option(None, "--channel", help="Only this channel.")
JsonOption = typer.Option(False, "--json", help="Print JSON.")
TzOption = typer.Option(
    None,
    "--tz",
    help="IANA time zone of days, times and time phrases ('yesterday'), e.g. Europe/Paris; "
    "default: the tenant's (CONTINUUM_TENANT_TIMEZONES, CONTINUUM_TIMEZONE).",
)
_DURATION = re.compile(r"(?P<n>\d+)(?P<unit>[smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


@cache
def console() -> Console:
    """The stdout console: tables, progress and human-readable output."""
    from rich.console import Console

    return Console()


@cache
def err_console() -> Console:
    """The stderr console: errors."""
    from rich.console import Console

    return Console(stderr=True)


def escape(text: str) -> str:
    """`text` for a rich console: markup in it (`[/bold]`) is printed as is, never parsed.
    Everything stored (messages, memories, channels, topics) goes through it."""
    from rich.markup import escape as escape_markup

    return escape_markup(text)


def print_error(message: str) -> None:
    """`error: message` on stderr; rich markup in `message` is printed as is."""
    err_console().print(f"[red]error:[/] {escape(message)}")


def fail(message: str, code: int = 2) -> NoReturn:
    """Print the error and end the command with exit code `code`."""
    print_error(message)
    raise typer.Exit(code)


def read_stdin() -> str:
    """Standard input as text. Bytes that are not UTF-8 are refused here, naming the first:
    read as text, Python turns them into unpaired surrogates, which the event checks then
    report as if the producer had sent one."""
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(
            f"input is not valid UTF-8: byte {exc.start} is 0x{data[exc.start]:02x} ({exc.reason}); "
            "send UTF-8 (convert with `iconv -t UTF-8`)"
        )


def print_json(data: Any) -> None:
    """One line of JSON on stdout (dates and other objects as strings, UTF-8 as is)."""
    sys.stdout.write(json.dumps(data, default=str, ensure_ascii=False) + "\n")


def parse_day(day: str) -> date:
    """A YYYY-MM-DD argument, or exit 2 saying what is expected."""
    try:
        return date.fromisoformat(day)
    except ValueError:
        fail(f"{day!r} is not a date; use YYYY-MM-DD")


def local_zone(namespace: str, tz: str | None) -> tzinfo:
    """The zone a command shows `namespace`'s days in: `--tz`, else the tenant's; an unknown
    `--tz` exits 2 saying what to give."""
    from continuum.config import get_settings, time_zone

    if tz is None:
        return get_settings().zone_for(namespace)
    try:
        return time_zone(tz)
    except ValueError as exc:
        fail(f"--tz: {exc}")


def parse_since(value: str) -> datetime:
    """`24h`, `30m`, `7d`, `90s` (ago), or an ISO date or time (UTC unless it says)."""
    duration = _DURATION.fullmatch(value.strip())
    if duration:
        amount = int(duration.group("n"))
        return datetime.now(UTC) - timedelta(**{_UNITS[duration.group("unit")]: amount})
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        fail(f"{value!r} is not a time; use e.g. 24h, 7d, 2026-03-01 or 2026-03-01T12:00")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
