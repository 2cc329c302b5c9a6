"""Sync problems: one row per bad line, event or source the transcript sync found, where it
is and when it was seen, so bad input can be found again after the run (it was only
counted, with a few samples, in the run's summary).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE sync_problems (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            source_path text NOT NULL,
            location text NOT NULL,
            kind text NOT NULL,
            detail text NOT NULL,
            line_no bigint,
            byte_offset bigint,
            session_id text,
            seq bigint,
            run_id text NOT NULL,
            first_seen_at timestamptz NOT NULL DEFAULT now(),
            last_seen_at timestamptz NOT NULL DEFAULT now(),
            resolved_at timestamptz,
            UNIQUE (source_path, location, kind)
        )
        """
    )
    op.execute("CREATE INDEX sync_problems_open ON sync_problems (last_seen_at DESC)")


def downgrade() -> None:
    op.execute("DROP TABLE sync_problems")
