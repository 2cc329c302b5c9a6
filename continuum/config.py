"""Settings: every knob comes from `CONTINUUM_*` environment variables (or a `.env` file).

Server URLs fall back to what `continuum dev up` wrote into `<home>/servers.json`, so every
command (CLI, worker, beat, tests) finds the embedded servers without extra flags.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

NAMESPACE_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
SERVERS_FILE = "servers.json"


class ConfigError(RuntimeError):
    """A setting is missing or wrong; the message says what to do."""


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone `name` (`Europe/Paris`, `UTC`); ValueError saying what to give."""
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):  # ValueError: an empty or malformed key
        raise ValueError(
            f"unknown time zone {name!r}: give an IANA name such as Europe/Paris, "
            "America/New_York or UTC"
        ) from None


def usable_cpus(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The CPUs this process may use: those it may run on (its affinity, e.g. a container's
    cpuset), capped by its cgroup's CPU quota rounded up (a container's `--cpus`).
    `os.cpu_count()` counts the host's, which in a container can be many times more."""
    affinity = getattr(os, "sched_getaffinity", None)  # absent on macOS and Windows
    cpus = len(affinity(0)) if affinity else os.cpu_count() or 1
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):  # no cgroup v2 quota to read
        pass
    return max(cpus, 1)


def _tenant_map(value: object, parse: Callable[[str], Any], error: str, form: str) -> object:
    """A per-tenant setting given as `tenant=value,…` (a mapping passes through): each tenant
    name checked, each value read by `parse` (ValueError: refused, `error` saying why)."""
    if not isinstance(value, str):
        return value
    mapping = {}
    for part in filter(None, (part.strip() for part in value.split(","))):
        tenant, _, given = (side.strip() for side in part.partition("="))
        try:
            if not NAMESPACE_PATTERN.fullmatch(tenant) or not given:
                raise ValueError(f"{part!r} is not {form}")
            mapping[tenant] = parse(given)
        except ValueError as exc:
            raise ConfigError(error.format(problem=exc)) from None
    return mapping


def _retention_days(given: str) -> int | None:
    """Whole days (at least 1), or None for `forever`."""
    if given.lower() == "forever":
        return None
    if not (given.isdigit() and int(given) >= 1):
        raise ValueError(f"{given!r} is not a number of days")
    return int(given)


class Settings(BaseSettings):
    """All Continuum settings. Field `foo_bar` is read from `CONTINUUM_FOO_BAR`."""

    model_config = SettingsConfigDict(
        env_prefix="CONTINUUM_", env_file=".env", extra="ignore", env_file_encoding="utf-8"
    )

    home: Path = Field(
        default=Path(".continuum"),
        description="Directory for embedded server data and servers.json.",
    )
    model_cache: Path = Field(
        default_factory=lambda: (
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "continuum"
        ),
        description="Models derived on this machine (the local model's ONNX graph for search "
        "queries), shared by every home and process of the machine.",
    )
    database_url: str | None = Field(default=None, description="SQLAlchemy URL of Postgres.")
    read_database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of a streaming standby the read plane (API, MCP, search, "
        "context, listings) reads from; writes and workers always use the primary. Set it on "
        "every process: a writer records what it wrote for read-your-writes only when it is set.",
    )
    redis_url: str | None = Field(default=None, description="Redis URL for ephemeral state.")
    broker_url: str | None = Field(
        default=None, description="Celery broker (defaults to redis_url)."
    )
    namespaces: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Allowed tenants (comma separated); empty allows any valid name.",
    )
    max_content_chars: int = Field(default=100_000, ge=1)
    max_batch_events: int = Field(default=1_000, ge=1)

    embedding_provider: Literal["local", "openai", "none"] = "local"
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_dim: int = Field(default=384, ge=1)
    embedding_url: str | None = None
    embedding_api_key: str | None = None
    embed_batch_size: int = Field(default=128, ge=1)
    query_embed_threads: int = Field(
        default=1,
        ge=1,
        description="CPU threads embedding one search query (the local model); more only "
        "fight the database for the cores of a small machine.",
    )

    api_workers: int = Field(
        default_factory=lambda: usable_cpus(),  # looked up when read: tests replace it
        ge=1,
        description="`continuum api` worker processes (default: one per CPU this process may "
        "use, container limits included).",
    )
    api_threads: int = Field(
        default=40,
        ge=1,
        description="Threads of each `continuum api` worker process running the synchronous "
        "routes (search, context, listings): requests beyond them wait their turn.",
    )
    recall_concurrency: int = Field(
        default=2,
        ge=1,
        description="Searches and context blocks one process runs at once; more wait their "
        "turn in arrival order, their query embeddings already under way (docs/api.md, "
        "Concurrency).",
    )
    db_pool_size: int = Field(
        default=5,
        ge=1,
        description="Postgres connections each process keeps open (plus as many again when busy).",
    )
    api_token_cache_s: float = Field(
        default=60.0,
        ge=0,
        description="How long an API process trusts a token it has checked without asking "
        "Postgres again (a revocation through `continuum tokens revoke` still counts at once; "
        "0: ask every request).",
    )

    llm_base_url: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_api_key: str | None = None
    llm_timeout_s: float = 30.0
    llm_response_format: Literal["auto", "json_schema", "json_object"] = Field(
        default="auto",
        description="How answers are constrained: json_schema, json_object, or auto "
        "(json_schema, then json_object if the endpoint refuses it).",
    )
    llm_daily_token_budget: int | None = Field(
        default=None,
        ge=1,
        description="Tokens a tenant may spend on the LLM per UTC day; past it, the "
        "deterministic path only. Unset: no budget.",
    )

    workspace_dir: Path = Field(default=Path(".continuum/workspace"))
    privacy_mode: bool = Field(default=False, description="Never persist raw turns.")
    redact_secrets: bool = Field(
        default=True,
        description="Replace API keys, tokens, passwords and private keys in messages and "
        "memories by [redacted:<type>] before they are stored.",
    )
    private_namespaces: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Tenants whose raw turns are never persisted."
    )
    confirm_tasks: bool = Field(
        default=False,
        description="A reminder or commitment capture finds becomes a suggested task the "
        "runtime confirms or dismisses, not a task (all tenants).",
    )
    confirm_tasks_tenants: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Tenants whose reminders and commitments wait for confirmation "
        "(comma separated); CONTINUUM_CONFIRM_TASKS covers every tenant.",
    )
    encryption_key: SecretStr | None = Field(
        default=None, description="Key-encryption key: 64 hex characters (AES-256)."
    )
    encryption_key_file: Path | None = Field(
        default=None, description="File holding the key-encryption key (64 hex characters)."
    )
    encryption_old_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description="Previous key-encryption keys (comma separated), read until "
        "`continuum keys rotate` has re-wrapped every data key under the current one.",
    )
    encryption_tenants: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Tenants encrypted at rest (comma separated); empty: all, once a key is set.",
    )
    no_vector_tenants: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Tenants whose rows are never embedded (no vectors stored, text search only).",
    )
    timezone: str = Field(
        default="UTC",
        description="IANA time zone tenants' days are read in (day queries, time phrases, "
        "the block's dates, daily notes), unless CONTINUUM_TENANT_TIMEZONES names theirs.",
    )
    tenant_timezones: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="Per-tenant time zones, e.g. `alpha=Europe/Paris,beta=America/New_York`.",
    )
    message_retention_days: int | None = Field(
        default=None,
        ge=1,
        description="Raw messages older than this many days (event time) are deleted by the "
        "weekly maintenance (R80); unset: kept forever.",
    )
    tenant_message_retention: Annotated[dict[str, int | None], NoDecode] = Field(
        default_factory=dict,
        description="Per-tenant message retention in days, e.g. `alpha=30,beta=365` "
        "(`forever`: kept), over CONTINUUM_MESSAGE_RETENTION_DAYS.",
    )
    idle_ms: int = Field(default=600_000, ge=1_000, description="Idle time before a snapshot.")
    min_session_s: float = Field(default=30.0, ge=0, description="Shorter sessions: no extraction.")
    session_end_wait_s: float = Field(
        default=60.0, ge=0, description="How long session end waits for its announced turns."
    )
    session_timeout_s: float = Field(
        default=3600.0,
        ge=60,
        description="An evented session with no event for this long that never sent "
        "session_end is finished as if it had (reason `idle`).",
    )

    task_time_limit_s: int = 300
    task_soft_time_limit_s: int = 240
    visibility_timeout_s: int = 10
    unacked_restore_interval_s: float = 2.0
    max_deliveries: int = Field(default=5, ge=1, description="Deliveries before dead-lettering.")
    retry_backoff_max_s: int = 120
    inflight_grace_s: float = Field(
        default=360.0, ge=1, description="Unsettled event batches older than this are resent."
    )
    restart_grace_s: float = Field(
        default=5.0,
        ge=0,
        description="After a broker restart, batches lost from the queue are resent this long "
        "after a worker noticed it (workers reconnect and touch what they hold meanwhile).",
    )
    broker_check_interval_s: float = Field(
        default=1.0, gt=0, description="How often each worker checks whether the broker restarted."
    )
    taken_check_interval_s: float = Field(
        default=2.0,
        gt=0,
        description="How often one worker looks for event batches taken off the queue by a "
        "worker lost before it recorded them (resent when found so twice in a row).",
    )

    sync_home: Path | None = Field(default=None, description="Home to discover runtimes in.")
    sync_roots: Annotated[list[Path], NoDecode] | None = Field(
        default=None, description="Explicit OpenClaw roots (comma separated) instead of discovery."
    )
    sync_include_claude: bool = True
    sync_include_codex: bool = True
    sync_max_line_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    sync_workers: int = Field(default=2, ge=1)
    sync_time_budget_s: float = Field(default=180.0, gt=0)
    sync_redis_timeout_s: float = Field(
        default=2.0,
        gt=0,
        description="How long sync waits for Redis (its run lock, the broker for capture) "
        "before it goes on without: Postgres per-source locks, no capture feed.",
    )
    sync_watch_debounce_ms: int = Field(
        default=500,
        ge=10,
        le=60_000,
        description="`continuum sync watch`: how long a burst of writes to transcripts must "
        "pause before the files it touched are synced.",
    )

    redis_wait_s: float = Field(
        default=5.0, ge=0, description="producers, the API and the CLI: how long Redis may be away"
    )
    worker_redis_wait_s: float = Field(
        default=75.0, ge=0, description="workers: how long a task rides out a Redis outage"
    )
    redis_wait_replicas: int = Field(
        default=0,
        ge=0,
        description="Events are accepted once this many replicas of the broker's Redis have "
        "them (WAIT after the publish and its ledger record), and workers' hand-offs to the "
        "next stage are confirmed the same way; 0: off, for a single Redis.",
    )
    redis_wait_timeout_ms: int = Field(
        default=1000,
        ge=1,
        le=5000,  # well under the clients' socket timeout (10 s)
        description="How long a producer waits for those replicas before it reports the "
        "events not accepted.",
    )
    beat_lock_ttl_s: float = Field(
        default=30.0,
        ge=3,
        description="The beat lock's lifetime: the beat holding it renews it every third of "
        "this; a standby beat takes over once it lapses.",
    )

    hook_namespace: str = Field(
        default="claude-code", description="Tenant `continuum hooks install` writes into hooks."
    )
    hook_user: str | None = Field(default=None, description="User the hooks' events belong to.")

    mcp_namespace: str | None = Field(
        default=None,
        description="Tenant of `continuum mcp` over stdio; over HTTP, which of a token's "
        "namespaces to use when it has several.",
    )
    mcp_user: str | None = Field(default=None, description="User of the MCP server's calls.")

    eval_locomo: Path = Field(
        default=Path("../shared/eval/locomo-dev/data/locomo-dev.json"),
        description="The LoCoMo dev split `make eval` scores retrieval on (absent: skipped).",
    )
    soak_minutes: float = Field(
        default=30.0, gt=0, description="How long `make soak` runs (`--minutes` overrides it)."
    )

    otel: bool = Field(
        default=False,
        description="Traces (OpenTelemetry, the `otel` extra), exported as the standard "
        "OTEL_* variables say; off: no OpenTelemetry code runs.",
    )

    flower_user: str = "admin"
    flower_password: str | None = None
    flower_port: int = 5555
    flower_address: str = "127.0.0.1"

    @field_validator(
        "namespaces",
        "private_namespaces",
        "sync_roots",
        "encryption_old_keys",
        "encryption_tenants",
        "no_vector_tenants",
        "confirm_tasks_tenants",
        mode="before",
    )
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str) -> str:
        try:
            return time_zone(value).key
        except ValueError as exc:  # a ConfigError is not wrapped by pydantic: it says it all
            raise ConfigError(f"CONTINUUM_TIMEZONE: {exc}") from None

    @field_validator("tenant_timezones", mode="before")
    @classmethod
    def _parse_tenant_timezones(cls, value: object) -> object:
        """`alpha=Europe/Paris,beta=America/New_York`, each tenant and zone checked."""
        return _tenant_map(
            value,
            lambda name: time_zone(name).key,
            "CONTINUUM_TENANT_TIMEZONES: {problem} (e.g. alpha=Europe/Paris,beta=UTC)",
            "tenant=Zone/Name",
        )

    @field_validator("tenant_message_retention", mode="before")
    @classmethod
    def _parse_tenant_retention(cls, value: object) -> object:
        """`alpha=30,beta=forever`: each tenant checked, each retention whole days or forever."""
        return _tenant_map(
            value,
            _retention_days,
            "CONTINUUM_TENANT_MESSAGE_RETENTION: {problem}; give tenant=days (whole days, at "
            "least 1, or `forever`; e.g. alpha=30,beta=365)",
            "tenant=days",
        )

    @property
    def servers_file(self) -> Path:
        return self.home / SERVERS_FILE

    def _embedded_servers(self) -> dict[str, str]:
        try:
            data = json.loads(self.servers_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def resolved_database_url(self) -> str:
        url = self.database_url or self._embedded_servers().get("database_url")
        if not url:
            raise ConfigError(
                "No database configured: set CONTINUUM_DATABASE_URL or run `continuum dev up`."
            )
        return url

    def resolved_redis_url(self) -> str:
        url = self.redis_url or self._embedded_servers().get("redis_url")
        if not url:
            raise ConfigError(
                "No Redis configured: set CONTINUUM_REDIS_URL or run `continuum dev up`."
            )
        return url

    def resolved_broker_url(self) -> str:
        return (
            self.broker_url
            or self._embedded_servers().get("broker_url")
            or self.resolved_redis_url()
        )

    def is_private(self, namespace: str) -> bool:
        """Privacy mode (R44/R45): raw turns of this tenant are never persisted."""
        return self.privacy_mode or namespace in self.private_namespaces

    def encryption_hex(self) -> str | None:
        """The key-encryption key as configured (hex), from the variable or the key file."""
        if self.encryption_key is not None:
            return self.encryption_key.get_secret_value().strip()
        if self.encryption_key_file is not None:
            try:
                return self.encryption_key_file.read_text().strip()
            except OSError as exc:
                raise ConfigError(
                    f"CONTINUUM_ENCRYPTION_KEY_FILE {self.encryption_key_file}: {exc.strerror}"
                ) from exc
        return None

    def is_encrypted(self, namespace: str) -> bool:
        """R47: this tenant's rows are encrypted at rest (a key is configured and the tenant
        is listed, or no list is given)."""
        if self.encryption_key is None and self.encryption_key_file is None:
            return False
        return not self.encryption_tenants or namespace in self.encryption_tenants

    def confirms_tasks(self, namespace: str) -> bool:
        """Whether this tenant's captured reminders and commitments wait, as suggested tasks,
        for the runtime to confirm them (CONTINUUM_CONFIRM_TASKS, _CONFIRM_TASKS_TENANTS)."""
        return self.confirm_tasks or namespace in self.confirm_tasks_tenants

    def stores_vectors(self, namespace: str) -> bool:
        """False for a tenant in no-vector mode: its rows are never embedded."""
        return namespace not in self.no_vector_tenants

    def zone_for(self, namespace: str, tz: str | tzinfo | None = None) -> tzinfo:
        """The time zone `namespace`'s days are read in: `tz` (a request's own, a name or a
        zone) if given, else the tenant's (CONTINUUM_TENANT_TIMEZONES), else
        CONTINUUM_TIMEZONE. An unknown name is a ValueError saying what to give."""
        if tz is None:
            return time_zone(self.tenant_timezones.get(namespace, self.timezone))
        if not isinstance(tz, str):
            return tz
        try:
            return time_zone(tz)
        except ValueError as exc:
            raise ValueError(f"tz: {exc}") from None

    def local_time(
        self, namespace: str, when: datetime | None = None, tz: str | tzinfo | None = None
    ) -> datetime:
        """`when` (default: now) on the wall clock of `zone_for(namespace, tz)`."""
        return (when or datetime.now(UTC)).astimezone(self.zone_for(namespace, tz))

    def message_retention(self, namespace: str) -> int | None:
        """Days `namespace`'s raw messages are kept (R80): its own setting
        (CONTINUUM_TENANT_MESSAGE_RETENTION), else CONTINUUM_MESSAGE_RETENTION_DAYS; None:
        forever."""
        return self.tenant_message_retention.get(namespace, self.message_retention_days)

    def check_namespace(self, namespace: str) -> None:
        """Raise ValueError unless `namespace` is a valid, allowed tenant name."""
        if not NAMESPACE_PATTERN.fullmatch(namespace):
            raise ValueError(
                f"invalid namespace {namespace!r}: use 1-64 of a-z 0-9 _ . - starting alphanumeric"
            )
        if self.namespaces and namespace not in self.namespaces:
            raise ValueError(
                f"unknown namespace {namespace!r}: allowed are {', '.join(self.namespaces)} "
                "(CONTINUUM_NAMESPACES)"
            )


def _variable(location: tuple[int | str, ...]) -> str:
    """The environment variable of a settings field's validation error."""
    return f"CONTINUUM_{str(location[0]).upper()}" if location else "settings"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached; call `get_settings.cache_clear()` after env changes).
    A value that does not parse is a ConfigError naming its variable, never echoing the value
    (it may be a secret)."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = [f"{_variable(error['loc'])}: {error['msg']}" for error in exc.errors()]
        raise ConfigError(
            f"{'; '.join(problems)} (fix or unset it; the README lists every setting)"
        ) from None
    except SettingsError as exc:  # a list or mapping setting that is not valid JSON
        raise ConfigError(f"{exc} (give JSON; the README lists every setting)") from None
