"""`python -m bench.without_otel ARGS`: Celery's command line (`celery ARGS`) as the build
without the `otel` extra runs it, for the tracing benchmark. What the extra installs
(OpenTelemetry's SDK, exporters and instrumentations) cannot be imported; the OpenTelemetry
API stays, as FastAPI and MCP require it anyway."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

EXTRA = ("opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.instrumentation")


class _NotInstalled(MetaPathFinder):
    """Answers an import of the extra's packages as a missing package does."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if any(name == package or name.startswith(package + ".") for package in EXTRA):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def main() -> None:
    sys.meta_path.insert(0, _NotInstalled())
    from celery.__main__ import main as celery

    sys.argv = ["celery", *sys.argv[1:]]
    celery()


if __name__ == "__main__":
    main()
