"""Half-precision embeddings: vectors and their HNSW indexes stored as halfvec.

A 384-dimension vector takes 1,536 bytes as `vector` and 768 as `halfvec`; at a million
memories that halves the HNSW index (it then fits in shared buffers) and makes every
heap row much narrower, which the full-text ranking reads. Cosine similarities of
normalised embeddings move by about 1e-4, far below any ranking or duplicate threshold.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TABLES = ("messages", "memories")


def _retype(table: str, kind: str, ops: str) -> None:
    op.execute(f"DROP INDEX IF EXISTS {table}_embedding")
    op.execute(
        f"DO $$ DECLARE dim int; BEGIN "
        f"SELECT atttypmod INTO dim FROM pg_attribute "
        f"WHERE attrelid = '{table}'::regclass AND attname = 'embedding'; "
        f"EXECUTE format('ALTER TABLE {table} ALTER COLUMN embedding TYPE {kind}(%s) "
        f"USING embedding::{kind}(%s)', dim, dim); END $$"
    )
    op.execute(f"CREATE INDEX {table}_embedding ON {table} USING hnsw (embedding {ops})")


def upgrade() -> None:
    for table in TABLES:
        _retype(table, "halfvec", "halfvec_cosine_ops")


def downgrade() -> None:
    for table in TABLES:
        _retype(table, "vector", "vector_cosine_ops")
