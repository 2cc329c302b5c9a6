"""HTTP API and Mission Control: `create_app()` builds the FastAPI app (see docs/api.md)."""

from continuum.api.app import create_app

__all__ = ["create_app"]
