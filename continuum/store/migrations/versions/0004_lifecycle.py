"""Memory lifecycle: weekly maintenance runs (plan, progress, report) and lookup indexes for
claims (supersession), task tags (tasks learned from conversation) and pruning.

Revision ID: 0004
Revises: 0002
Create Date: 2026-11-23
"""

from alembic import op

revision = "0004"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE maintenance_runs (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            week text NOT NULL,
            attempt integer NOT NULL DEFAULT 1,
            status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done')),
            plan jsonb NOT NULL DEFAULT '[]',
            applied integer NOT NULL DEFAULT 0,
            report jsonb NOT NULL DEFAULT '{}',
            started_at timestamptz NOT NULL DEFAULT now(),
            finished_at timestamptz,
            UNIQUE (namespace, week, attempt)
        )"""
    )
    op.execute(
        "CREATE INDEX memories_claim ON memories "
        "(namespace, lower(claim_subject), lower(claim_predicate)) "
        "WHERE claim_predicate IS NOT NULL AND status = 'active'"
    )
    op.execute("CREATE INDEX tasks_tags ON tasks USING gin (tags)")
    # Deleting a memory sets `superseded_by` of rows pointing at it to NULL, and scrubs its
    # log entries: without these, each pruned row costs a full scan of either table.
    op.execute(
        "CREATE INDEX memories_superseded_by ON memories (superseded_by) "
        "WHERE superseded_by IS NOT NULL"
    )
    op.execute(
        "CREATE INDEX memory_log_memory ON memory_log (memory_id) WHERE memory_id IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS memory_log_memory")
    op.execute("DROP INDEX IF EXISTS memories_superseded_by")
    op.execute("DROP INDEX IF EXISTS tasks_tags")
    op.execute("DROP INDEX IF EXISTS memories_claim")
    op.execute("DROP TABLE IF EXISTS maintenance_runs")
