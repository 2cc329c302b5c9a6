"""The kind registry is the one list of memory kinds: `MemoryKind` names exactly its rows, and
every consumer — the LLM and tool schemas, explicit writes, digests, context sections,
MEMORY.md, maintenance rules, tasks, Mission Control — takes its kinds from it.
(Database-backed consumers are checked kind by kind in tests/recall, tests/maintenance,
tests/pipeline, tests/api and tests/browser.)"""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from continuum.api.routes.ui import STATIC_DIR
from continuum.domain.kinds import (
    KIND_SPECS,
    KINDS,
    ContextSection,
    KindSpec,
    MemoryKind,
    MemoryMdSection,
    kind_names,
)
from continuum.domain.memory import MemoryCandidate
from continuum.inference.prompts.chunk import LLMMemory
from continuum.maintenance.rules import KIND_PARAMS, MaintenanceConfig
from continuum.maintenance.workspace import MD_SECTIONS
from continuum.memory.tool_schemas import StoreMemoryArgs, tool_definitions
from continuum.memory.user_tasks import TASK_KINDS
from continuum.memory.writer import explicit_candidate
from continuum.recall.items import SECTIONS

ALL = [spec.name for spec in KINDS]


def test_the_literal_names_exactly_the_registry_rows_in_order() -> None:
    assert get_args(MemoryKind) == tuple(ALL)
    assert len(KIND_SPECS) == len(KINDS)  # no kind listed twice
    assert all(spec.description.strip() for spec in KINDS)


def test_llm_extraction_offers_exactly_the_extractable_kinds() -> None:
    extractable = list(kind_names(lambda spec: spec.llm_extracts))
    assert LLMMemory.model_json_schema()["properties"]["kind"]["enum"] == extractable
    memory = {"content": "Something worth keeping.", "importance": 6, "lines": [0]}
    for name in ALL:
        if name in extractable:
            assert LLMMemory.model_validate({**memory, "kind": name}).kind == name
        else:
            with pytest.raises(ValidationError):
                LLMMemory.model_validate({**memory, "kind": name})


def test_memory_tools_accept_exactly_the_storable_kinds() -> None:
    storable = list(kind_names(lambda spec: spec.tool_storable))
    schemas = {d["name"]: d["input_schema"] for d in tool_definitions("anthropic")}
    for tool in ("store_memory", "update_memory", "list_memories"):
        assert schemas[tool]["properties"]["memory_type"]["enum"] == storable, tool
    for name in ALL:
        args = {"memory_type": name, "key": "k", "value": "v"}
        if name in storable:
            assert StoreMemoryArgs.model_validate(args).memory_type == name
        else:
            with pytest.raises(ValidationError):
                StoreMemoryArgs.model_validate(args)


@pytest.mark.parametrize("spec", KINDS, ids=ALL)
def test_explicit_writes_take_importance_and_claim_from_the_kind(spec: KindSpec) -> None:
    candidate = explicit_candidate(
        spec.name, "favorite_tea", "Earl Grey", confidence=0.9, provenance="system", source_id="t"
    )
    assert candidate.importance == spec.explicit_importance
    assert (candidate.claim is not None) == spec.explicit_claim


@pytest.mark.parametrize("spec", KINDS, ids=ALL)
def test_only_digests_may_hold_several_items(spec: KindSpec) -> None:
    fields = {"kind": spec.name, "importance": 5, "confidence": 0.8, "provenance": "system"}
    fields |= {"content": "x" * 900, "source_message_ids": ["m1"]}
    if spec.digest:
        assert MemoryCandidate.model_validate(fields).kind == spec.name
    else:
        with pytest.raises(ValidationError):
            MemoryCandidate.model_validate(fields)


def test_every_section_a_kind_names_exists() -> None:
    assert set(get_args(ContextSection)) <= set(SECTIONS)
    assert [title for title, _ in MD_SECTIONS] == list(get_args(MemoryMdSection))
    listed = [kind for _, kinds in MD_SECTIONS for kind in kinds]
    assert sorted(listed) == sorted(kind_names(lambda spec: spec.memory_md is not None))
    assert all(KIND_SPECS[k].memory_md == title for title, kinds in MD_SECTIONS for k in kinds)


def test_maintenance_and_tasks_follow_the_registry() -> None:
    assert MaintenanceConfig().cluster_kinds == kind_names(lambda spec: spec.compressible)
    assert {
        "decay_kept": list(kind_names(lambda spec: not spec.pruned_when_decayed)),
        "slow_decay": list(kind_names(lambda spec: spec.slow_decay)),
        "archived_kinds": list(kind_names(lambda spec: spec.archived_when_old)),
    } == KIND_PARAMS
    assert set(kind_names(lambda spec: spec.becomes_task)) == TASK_KINDS


def test_mission_control_hard_codes_no_kind() -> None:
    html = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    assert '<select id="kind"><option value="">any</option></select>' in html
    assert not [name for name in ALL if f"<option>{name}</option>" in html]


def test_no_block_channel_reads_a_turns_index_by_recency_or_importance() -> None:
    from continuum.recall.candidates import memory_channels
    from continuum.recall.items import RecallConfig

    indexes = set(kind_names(lambda spec: spec.indexes_turn))
    assert indexes == {"statement"}
    for channel in memory_channels(RecallConfig()):
        assert not indexes & set(channel.kinds), channel.name
