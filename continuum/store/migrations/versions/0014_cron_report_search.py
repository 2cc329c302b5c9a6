"""Cron report search (R70, R77): a full-text index over `cron_reports.summary`, on the very
expression the listing matches (`to_tsvector('english', summary) @@ websearch_to_tsquery(...)`,
`continuum.recall.listings.cron_reports`), so a search reads the index instead of parsing
every report of the table. Cron reports are not encrypted, so their words are indexed as
they are.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX cron_reports_tsv ON cron_reports"
        " USING gin (to_tsvector('english'::regconfig, summary))"
    )


def downgrade() -> None:
    op.execute("DROP INDEX cron_reports_tsv")
