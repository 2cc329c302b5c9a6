"""`continuum workspace show`: a tenant's narrative files (R15) as written, an encrypted
tenant's sealed entries opened (R47): the activity log, a daily note, `MEMORY.md`."""

from __future__ import annotations

import sys

import typer

from continuum.cli.common import NamespaceOption, fail

app = typer.Typer()
workspace_app = typer.Typer(help="The narrative files of a tenant's workspace.")
app.add_typer(workspace_app, name="workspace")


@workspace_app.command("show")
def workspace_show(
    file: str = typer.Argument(
        "activity-log.md", help="activity-log.md, MEMORY.md or memory/YYYY-MM-DD.md"
    ),
    namespace: str = NamespaceOption,
) -> None:
    """Print one narrative file of the tenant, its sealed entries opened."""
    from continuum.config import get_settings
    from continuum.pipeline.narrative import workspace
    from continuum.sealing.entries import open_file

    try:
        get_settings().check_namespace(namespace)
    except ValueError as exc:
        fail(str(exc))
    root = workspace(namespace).resolve()
    path = (root / file).resolve()
    if root not in path.parents or not path.is_file():
        found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
        fail(
            f"no file {file!r} in the workspace of {namespace!r} ({root}); "
            f"it has: {', '.join(found) or 'none yet (written at session end and by maintenance)'}"
        )
    sys.stdout.write(open_file(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix()))
