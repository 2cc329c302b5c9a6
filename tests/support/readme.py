"""README.md's code blocks, for the tests that run the examples it shows."""

from __future__ import annotations

import re

from tests.support.paths import ROOT


def readme_block(heading: str, language: str) -> str:
    """The first `language` code block after `heading` in README.md."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index(f"\n{heading}\n") :]
    found = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert found, f"no ```{language} block under {heading}"
    return found.group(1)
