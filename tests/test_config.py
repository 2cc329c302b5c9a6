"""Defaults read from the machine: the CPUs a process may use, container limits included."""

from __future__ import annotations

import os
from pathlib import Path

from continuum.config import usable_cpus


def test_usable_cpus_follow_the_affinity_and_a_cgroup_quota(tmp_path: Path) -> None:
    allowed = len(os.sched_getaffinity(0))
    quota = tmp_path / "cpu.max"
    assert usable_cpus(tmp_path) == allowed  # no quota file
    quota.write_text("max 100000\n")
    assert usable_cpus(tmp_path) == allowed  # no quota
    quota.write_text("100000 100000\n")
    assert usable_cpus(tmp_path) == 1  # one CPU's worth
    quota.write_text("150000 100000\n")
    assert usable_cpus(tmp_path) == min(2, allowed)  # 1.5 CPUs rounds up
    quota.write_text("1000 100000\n")
    assert usable_cpus(tmp_path) == 1  # never none
    quota.write_text("garbled\n")
    assert usable_cpus(tmp_path) == allowed
