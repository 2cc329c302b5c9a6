"""Initial schema: sessions, messages, cron reports, cursors, memories, tasks, logs.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from alembic import op

from continuum.config import get_settings
from continuum.store.models import TSV_MEMORIES, TSV_MESSAGES

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    dim = get_settings().embedding_dim
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(
        """
        CREATE TABLE sessions (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            session_id text NOT NULL,
            channel text,
            user_id text,
            source text NOT NULL DEFAULT 'event',
            model text,
            started_at timestamptz,
            last_activity_at timestamptz,
            ended_at timestamptz,
            end_reason text,
            status text NOT NULL DEFAULT 'active',
            message_count integer NOT NULL DEFAULT 0,
            details jsonb NOT NULL DEFAULT '{}',
            created_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (namespace, session_id)
        )"""
    )
    op.execute("CREATE INDEX sessions_recent ON sessions (namespace, last_activity_at DESC)")
    op.execute(
        f"""
        CREATE TABLE messages (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            session_id text NOT NULL,
            message_id text NOT NULL,
            parent_id text,
            role text NOT NULL,
            content text NOT NULL,
            channel text,
            user_id text,
            sender text,
            source text NOT NULL DEFAULT 'event',
            created_at timestamptz NOT NULL,
            ingested_at timestamptz NOT NULL DEFAULT now(),
            event_id uuid,
            details jsonb NOT NULL DEFAULT '{{}}',
            tsv tsvector GENERATED ALWAYS AS ({TSV_MESSAGES}) STORED,
            embedding vector({dim}),
            UNIQUE (namespace, session_id, message_id)
        )"""
    )
    op.execute("CREATE INDEX messages_tsv ON messages USING gin (tsv)")
    op.execute("CREATE INDEX messages_recent ON messages (namespace, created_at DESC)")
    op.execute("CREATE INDEX messages_session ON messages (namespace, session_id, created_at)")
    op.execute("CREATE INDEX messages_outbox ON messages (id) WHERE embedding IS NULL")
    op.execute(
        "CREATE INDEX messages_embedding ON messages USING hnsw (embedding vector_cosine_ops)"
    )
    op.execute(
        """
        CREATE TABLE cron_reports (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            cron_name text NOT NULL,
            session_id text NOT NULL,
            summary text NOT NULL,
            run_started_at timestamptz,
            run_ended_at timestamptz,
            event_at timestamptz,
            created_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (namespace, session_id)
        )"""
    )
    op.execute("CREATE INDEX cron_reports_day ON cron_reports (namespace, event_at DESC)")
    op.execute(
        """
        CREATE TABLE transcript_cursors (
            source_path text PRIMARY KEY,
            namespace text NOT NULL,
            source_kind text NOT NULL,
            session_id text,
            inode bigint,
            size bigint NOT NULL DEFAULT 0,
            mtime double precision NOT NULL DEFAULT 0,
            byte_offset bigint NOT NULL DEFAULT 0,
            seq bigint NOT NULL DEFAULT 0,
            archived boolean NOT NULL DEFAULT false,
            details jsonb NOT NULL DEFAULT '{}',
            updated_at timestamptz NOT NULL DEFAULT now()
        )"""
    )
    op.execute(
        f"""
        CREATE TABLE memories (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            user_id text,
            kind text NOT NULL,
            key text,
            content text NOT NULL,
            details jsonb NOT NULL DEFAULT '{{}}',
            tags text[] NOT NULL DEFAULT '{{}}',
            importance smallint NOT NULL DEFAULT 5 CHECK (importance BETWEEN 1 AND 10),
            confidence real NOT NULL DEFAULT 0.7 CHECK (confidence BETWEEN 0 AND 1),
            provenance text NOT NULL DEFAULT 'inference',
            trust smallint NOT NULL DEFAULT 2,
            claim_subject text,
            claim_predicate text,
            claim_value text,
            claim_scope text,
            valid_from timestamptz,
            valid_until timestamptz,
            status text NOT NULL DEFAULT 'active',
            superseded_by bigint REFERENCES memories (id) ON DELETE SET NULL,
            private boolean NOT NULL DEFAULT false,
            version integer NOT NULL DEFAULT 1,
            corroboration integer NOT NULL DEFAULT 1,
            session_id text,
            channel text,
            source_message_ids text[] NOT NULL DEFAULT '{{}}',
            trigger text NOT NULL DEFAULT 'turn',
            idempotency_key text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            last_accessed_at timestamptz,
            access_count integer NOT NULL DEFAULT 0,
            tsv tsvector GENERATED ALWAYS AS ({TSV_MEMORIES}) STORED,
            embedding vector({dim}),
            UNIQUE (namespace, idempotency_key)
        )"""
    )
    op.execute("CREATE INDEX memories_tsv ON memories USING gin (tsv)")
    op.execute("CREATE INDEX memories_tags ON memories USING gin (tags)")
    op.execute(
        "CREATE INDEX memories_active ON memories (namespace, status, kind, created_at DESC)"
    )
    op.execute(
        "CREATE INDEX memories_key ON memories (namespace, lower(key)) WHERE key IS NOT NULL"
    )
    op.execute("CREATE INDEX memories_outbox ON memories (id) WHERE embedding IS NULL")
    op.execute(
        "CREATE INDEX memories_embedding ON memories USING hnsw (embedding vector_cosine_ops)"
    )
    op.execute(
        """
        CREATE TABLE tasks (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            task_id uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
            user_id text,
            title text NOT NULL,
            description text,
            status text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'in_progress', 'blocked', 'done', 'cancelled')),
            created_channel text,
            created_at timestamptz NOT NULL DEFAULT now(),
            due_at timestamptz,
            completed_at timestamptz,
            tags text[] NOT NULL DEFAULT '{}'
        )"""
    )
    op.execute("CREATE INDEX tasks_active ON tasks (namespace, status, created_at DESC)")
    op.execute(
        """
        CREATE TABLE memory_log (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            action text NOT NULL,
            memory_id bigint,
            trigger text,
            details jsonb NOT NULL DEFAULT '{}',
            created_at timestamptz NOT NULL DEFAULT now()
        )"""
    )
    op.execute("CREATE INDEX memory_log_recent ON memory_log (namespace, created_at DESC)")
    op.execute(
        """
        CREATE TABLE dead_letters (
            id bigserial PRIMARY KEY,
            namespace text,
            task_name text NOT NULL,
            task_id text,
            payload jsonb,
            reason text NOT NULL,
            error text,
            attempts integer NOT NULL DEFAULT 1,
            created_at timestamptz NOT NULL DEFAULT now()
        )"""
    )
    op.execute(
        """
        CREATE TABLE processed_events (
            event_id uuid PRIMARY KEY,
            namespace text NOT NULL,
            kind text NOT NULL,
            session_id text NOT NULL,
            ts timestamptz NOT NULL,
            processed_at timestamptz NOT NULL DEFAULT now()
        )"""
    )


def downgrade() -> None:
    for table in (
        "processed_events",
        "dead_letters",
        "memory_log",
        "tasks",
        "memories",
        "transcript_cursors",
        "cron_reports",
        "messages",
        "sessions",
    ):
        op.execute(f"DROP TABLE IF EXISTS {table}")
