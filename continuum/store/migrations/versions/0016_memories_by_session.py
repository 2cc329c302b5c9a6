"""Memories by session (R80): message retention finds, for the turns a step deleted, the
memories of their sessions that cite them (`continuum.maintenance.retention`), so it reads
the tenant's memories of those sessions instead of every memory of the table; session
listings (`/v1/memories?session_id=`) read it too.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX memories_session ON memories (namespace, session_id)")


def downgrade() -> None:
    op.execute("DROP INDEX memories_session")
