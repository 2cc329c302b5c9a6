"""The TypeScript client (sdk/typescript/): its committed OpenAPI document is the app's, its
generated types are from that document, the README shows its tested example, and its Node
test suite (`node --test`) passes against the real API served over HTTP (uvicorn), the real
servers and a real worker. The Node part is skipped, saying why, where `node` or `npm` is missing.

npm installs into sdk/typescript/node_modules once per package-lock.json (a stamp file records
which); later runs only compile (~2 s) and test."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from continuum.api.app import openapi_json
from continuum.security.tokens import create_token
from tests.support.live_api import serve_api
from tests.support.paths import ROOT
from tests.support.readme import readme_block

SDK = ROOT / "sdk" / "typescript"
NODE, NPM = shutil.which("node"), shutil.which("npm")
NO_NODE = "node and npm not found: the TypeScript client's tests need Node.js 18+ (apt-get install nodejs npm)"
REGENERATE = (
    "run `continuum openapi > sdk/typescript/openapi.json` and `npm run generate` in "
    "sdk/typescript, then commit both"
)
NAMESPACE, OTHER = "ts-sdk", "ts-sdk-other"
_STAMP = "node_modules/.continuum-installed"


def test_the_committed_openapi_document_is_the_apps() -> None:
    assert (SDK / "openapi.json").read_text() == openapi_json(), f"stale: {REGENERATE}"


def test_the_generated_types_come_from_the_committed_document() -> None:
    digest = hashlib.sha256((SDK / "openapi.json").read_bytes()).hexdigest()
    header = (SDK / "src" / "schema.ts").read_text().splitlines()[1]
    assert header == f"// openapi.json sha256: {digest}", f"stale types: {REGENERATE}"


def test_the_readme_shows_the_tested_example() -> None:
    assert readme_block("### TypeScript", "ts") == (SDK / "examples" / "quickstart.ts").read_text()


def _npm_phase(command: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=SDK, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{output[-6000:]}"
    return output


@pytest.fixture
def built_sdk() -> Iterator[Path]:
    """sdk/typescript installed (npm ci once per lock file), its types checked against
    openapi.json and compiled to dist/; held under a lock, concurrent runs share the tree."""
    assert NODE and NPM, NO_NODE
    lock_digest = hashlib.sha256((SDK / "package-lock.json").read_bytes()).hexdigest()
    with (SDK / ".build.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = SDK / _STAMP
        if not stamp.exists() or stamp.read_text() != lock_digest:
            _npm_phase([NPM, "ci", "--no-audit", "--no-fund"])
            stamp.write_text(lock_digest)
        _npm_phase([NODE, "scripts/generate.mjs", "--check"])
        shutil.rmtree(SDK / "dist", ignore_errors=True)
        _npm_phase([NODE, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json"])
        yield SDK / "dist"


@pytest.mark.skipif(not (NODE and NPM), reason=NO_NODE)
def test_the_typescript_client_passes_against_the_live_api(
    built_sdk: Path, db: Any, worker: Any
) -> None:
    token, _ = create_token([NAMESPACE], "ts-sdk")
    several, _ = create_token([NAMESPACE, OTHER], "ts-sdk-multi")
    tests = sorted(str(path.relative_to(SDK)) for path in (built_sdk / "test").glob("*.test.js"))
    assert len(tests) >= 3, tests
    with serve_api() as base:
        env = {**os.environ, "CONTINUUM_URL": base, "CONTINUUM_TOKEN": token,
               "CONTINUUM_TOKEN_MULTI": several, "CONTINUUM_NAMESPACE": NAMESPACE,
               "CONTINUUM_OTHER_NAMESPACE": OTHER}  # fmt: skip
        output = _npm_phase([str(NODE), "--test", "--test-reporter=tap", *tests], env)
    summary = dict(re.findall(r"^# (tests|pass|fail|skipped) (\d+)$", output, re.M))
    assert summary.get("fail") == "0" and summary.get("skipped") == "0", output[-6000:]
    assert int(summary["pass"]) >= 15, output[-6000:]
