"""LLM calls: one row per call to the LLM endpoint (tenant, model, prompt and version,
tokens, latency, outcome), for `continuum usage` and the per-tenant daily token budget.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE llm_calls (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            session_id text,
            model text NOT NULL,
            prompt text NOT NULL,
            prompt_version text NOT NULL,
            outcome text NOT NULL,
            requests smallint NOT NULL,
            prompt_tokens integer NOT NULL DEFAULT 0,
            completion_tokens integer NOT NULL DEFAULT 0,
            latency_ms integer NOT NULL,
            error text,
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute("CREATE INDEX llm_calls_namespace_time ON llm_calls (namespace, created_at)")
    op.execute("CREATE INDEX llm_calls_time ON llm_calls (created_at)")


def downgrade() -> None:
    op.execute("DROP TABLE llm_calls")
