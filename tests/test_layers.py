"""The layer contract of docs/design.md, as `lint-imports` checks it (pyproject.toml): every
part of the code is in a layer, and an import that runs back up is refused."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    return [name.strip() for layer in contract["layers"] for name in layer.split("|")]


def test_every_package_and_module_of_continuum_is_in_a_layer() -> None:
    named = set(_layers())
    parts = {
        f"continuum.{path.stem}"
        for path in (ROOT / "continuum").iterdir()
        if (path.is_dir() and (path / "__init__.py").exists())
        or (path.suffix == ".py" and path.name != "__init__.py")
    }
    assert parts, "found no part of continuum"
    assert parts - named == set(), "parts no layer names escape the check"
    assert {"tasks", "workers"} <= named


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=tree, env=env, capture_output=True, text=True
    )


def test_the_contract_holds_and_an_upward_import_breaks_it(tmp_path: Path) -> None:
    for package in ("continuum", "workers", "tasks"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("static"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    kept = _lint(tmp_path)
    assert kept.returncode == 0, kept.stdout
    # the store reaching up into the read plane
    (tmp_path / "continuum" / "store" / "upward.py").write_text(
        "from continuum.recall import search  # noqa: F401\n"
    )
    broken = _lint(tmp_path)
    assert broken.returncode != 0
    assert "continuum.store.upward -> continuum.recall.search" in broken.stdout
