"""The repository explains itself: every requirement id cited in code, tests or docs is in
docs/design.md's requirement list, and nothing points at documents outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("continuum", "workers", "tasks", "tests", "bench", "docs", "docker")
REQUIREMENT = re.compile(r"\bR(\d{1,3})\b")


def scanned_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "beat_schedule.py", ROOT / "Makefile"]
    for folder in SCANNED:
        files += [
            path
            for path in (ROOT / folder).rglob("*")
            if path.is_file()
            and path.suffix in {".py", ".md", ".js", ".html", ".yml", ".sh", ".toml"}
            and "fixtures" not in path.parts
        ]
    return files


def defined_requirements() -> set[str]:
    design = (ROOT / "docs" / "design.md").read_text()
    requirements = design[design.index("## Requirements") :]
    return {f"R{number}" for number in REQUIREMENT.findall(requirements)}


def test_every_cited_requirement_is_in_the_design() -> None:
    defined = defined_requirements()
    assert {"R1", "R26", "R45", "R95"} <= defined
    missing = {
        f"{path.relative_to(ROOT)}: R{number}"
        for path in scanned_files()
        if path.name != "design.md"
        for number in REQUIREMENT.findall(path.read_text(errors="replace"))
        if f"R{number}" not in defined
    }
    assert not missing, sorted(missing)


def test_nothing_cites_documents_outside_the_repository() -> None:
    outside = re.compile(r"DESIGN\.md|REQUIREMENTS\.md")
    cited = [
        str(path.relative_to(ROOT))
        for path in scanned_files()
        if path != Path(__file__) and outside.search(path.read_text(errors="replace"))
    ]
    assert not cited
