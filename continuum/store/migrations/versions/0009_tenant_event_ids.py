"""Event ids are unique per tenant, not globally: a tenant that reused another tenant's
event id had its event silently taken for a duplicate and dropped.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE processed_events DROP CONSTRAINT processed_events_pkey")
    op.execute("ALTER TABLE processed_events ADD PRIMARY KEY (namespace, event_id)")


def downgrade() -> None:
    op.execute("ALTER TABLE processed_events DROP CONSTRAINT processed_events_pkey")
    op.execute("ALTER TABLE processed_events ADD PRIMARY KEY (event_id)")
