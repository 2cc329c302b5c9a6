"""Open sessions: the sessions not ended yet, by last activity, for the sweep that ends
evented sessions which never sent `session_end` (`continuum.pipeline.ending`, every
minute) without reading every session the tenants ever had.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX sessions_open ON sessions (last_activity_at) WHERE status <> 'ended'")


def downgrade() -> None:
    op.execute("DROP INDEX sessions_open")
