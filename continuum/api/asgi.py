"""ASGI entry point for process managers (`uvicorn continuum.api.asgi:app --workers N`).
The body limit comes from CONTINUUM_API_MAX_BODY_BYTES (default 1 MiB)."""

import os

from continuum.api import create_app
from continuum.api.limits import DEFAULT_MAX_BODY_BYTES

app = create_app(int(os.environ.get("CONTINUUM_API_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)))
