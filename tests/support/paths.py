"""Paths the tests share: the repository, its fixture trees, the test run's home and where
browser screenshots go. Imports nothing of Continuum (the root conftest reads it first)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
# CONTINUUM_TEST_SLOT gives concurrent test runs (several checkouts or developers on one
# machine) their own embedded servers: .continuum-test-<slot>/.
SLOT = os.environ.get("CONTINUUM_TEST_SLOT", "")
TEST_HOME = ROOT / (f".continuum-test-{SLOT}" if SLOT else ".continuum-test")
ARTIFACTS = ROOT / "test-artifacts"  # screenshots of the browser tests
