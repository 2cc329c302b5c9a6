"""Sealed cron reports (R47): an encrypted tenant's `cron_reports.summary` is sealed, so its
words cannot be indexed; the row brings its keyed terms (`tsv_keyed`, HMACs of its lexemes,
as messages and memories do since 0012) and the search index covers
`coalesce(tsv_keyed, to_tsvector('english', summary))`, the expression the listing matches
(`continuum.recall.listings.cron_reports`), instead of the plain words alone (0014).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

from alembic import op

from continuum.store.models import TSV_CRON_REPORTS

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE cron_reports ADD COLUMN tsv_keyed tsvector")
    op.execute("DROP INDEX cron_reports_tsv")
    op.execute(f"CREATE INDEX cron_reports_tsv ON cron_reports USING gin (({TSV_CRON_REPORTS}))")


def downgrade() -> None:
    op.execute("DROP INDEX cron_reports_tsv")
    op.execute("ALTER TABLE cron_reports DROP COLUMN tsv_keyed")
    op.execute(
        "CREATE INDEX cron_reports_tsv ON cron_reports"
        " USING gin (to_tsvector('english'::regconfig, summary))"
    )
