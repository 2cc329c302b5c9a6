"""HTTP API and Mission Control: `create_app()` builds the FastAPI app (see docs/api.md).

The package itself imports nothing: FastAPI and the read plane load when `create_app` is
first looked up, so light modules such as `continuum.api.limits` import without them (the
command line reads its default body limit from there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from continuum.api.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from continuum.api.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
