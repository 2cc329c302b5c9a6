"""The process-wide Redis clients for ephemeral state, counters and locks, and the URLs they
(and the broker) take: `redis://` for one server, `sentinel://` for a master that Redis
Sentinel fails over (docs/deploy.md, "Redis HA")."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from continuum.config import ConfigError, get_settings

# redis-py types every command as returning `Awaitable[Any] | Any` (one signature for its sync
# and async clients), which makes every call site ambiguous to mypy. Our clients are
# synchronous, so they are typed as such: untyped results, used as plain values.
SyncRedis = Any

_clients: dict[tuple[int, str], SyncRedis] = {}
_sentinels: dict[tuple[int, SentinelURL], Sentinel] = {}
BACKOFF_BASE_S = 0.05
BACKOFF_CAP_S = 1.0
_worker_process = False

SENTINEL_SCHEME = "sentinel"
SENTINEL_PORT = 26379
# How long one sentinel may take to answer where the master is: a dead sentinel host costs
# this much before the next sentinel is asked.
SENTINEL_TIMEOUT_S = 2.0
URL_FORM = (
    "sentinel://[:PASSWORD@]HOST[:PORT][;sentinel://HOST[:PORT]...][/DB]"
    "?master=NAME[&sentinel_password=PASSWORD]"
)


@dataclass(frozen=True)
class SentinelURL:
    """A `sentinel://` URL, read: the sentinels to ask, the name of the master they watch,
    the database, and the passwords of the master (its replicas share it) and the sentinels."""

    sentinels: tuple[tuple[str, int], ...]
    master: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_password: str | None = None

    def sentinel_options(self) -> dict[str, Any]:
        """How to connect to the sentinels themselves (redis-py's `sentinel_kwargs`)."""
        options: dict[str, Any] = {
            "socket_connect_timeout": SENTINEL_TIMEOUT_S,
            "socket_timeout": SENTINEL_TIMEOUT_S,
        }
        if self.sentinel_password:
            options["password"] = self.sentinel_password
        return options


def _agree(found: dict[str, str], name: str, value: str | None, url: str) -> None:
    """Record `name` from one part of a sentinel URL; every part that gives it must agree."""
    if value is None or value == "":
        return
    if found.setdefault(name, value) != value:
        raise ConfigError(f"{redacted(url)}: two different {name}s; give it once, as in {URL_FORM}")


def parse_sentinel_url(url: str) -> SentinelURL | None:
    """Read a `sentinel://` URL (URL_FORM: the sentinels separated by `;`; the master's
    credentials, the database and the options given once, on any of them, or the same on
    several); None for any other URL. A malformed one is a ConfigError showing the form."""
    if not url.startswith(f"{SENTINEL_SCHEME}://"):
        return None
    found: dict[str, str] = {}
    sentinels: list[tuple[str, int]] = []
    for part in url.split(";"):
        try:
            split = urlsplit(part.strip())
            port = split.port or SENTINEL_PORT
        except ValueError as exc:
            raise ConfigError(f"{redacted(url)}: {exc}; the form is {URL_FORM}") from None
        if split.scheme != SENTINEL_SCHEME or not split.hostname:
            raise ConfigError(
                f"{redacted(url)}: every sentinel is sentinel://HOST[:PORT]; the form is {URL_FORM}"
            )
        sentinels.append((split.hostname, port))
        _agree(found, "username", unquote(split.username or ""), url)
        _agree(found, "password", unquote(split.password or ""), url)
        _agree(found, "database", split.path.strip("/"), url)
        for key, value in parse_qsl(split.query, keep_blank_values=True):
            if key not in ("master", "sentinel_password"):
                raise ConfigError(
                    f"{redacted(url)}: unknown option {key!r}; the form is {URL_FORM}"
                )
            _agree(found, key, value, url)
    if not found.get("master"):
        raise ConfigError(
            f"{redacted(url)}: name the master (?master=NAME); the form is {URL_FORM}"
        )
    if not found.get("database", "0").isdigit():
        raise ConfigError(f"{redacted(url)}: the database is a number (/0); the form is {URL_FORM}")
    return SentinelURL(
        sentinels=tuple(sentinels),
        master=found["master"],
        db=int(found.get("database", "0")),
        username=found.get("username"),
        password=found.get("password"),
        sentinel_password=found.get("sentinel_password"),
    )


def redacted(url: str) -> str:
    """`url` fit for a log or a status line: its passwords replaced by `***`."""
    parts = []
    for part in url.split(";"):
        try:
            split = urlsplit(part)
        except ValueError:
            return "<unreadable URL>"
        netloc = split.netloc
        if split.password is not None:
            netloc = f"{split.username or ''}:***@{netloc.rpartition('@')[2]}"
        query = "&".join(
            f"{key}={'***' if 'password' in key else quote(value)}"
            for key, value in parse_qsl(split.query, keep_blank_values=True)
        )
        parts.append(split._replace(netloc=netloc, query=query).geturl())
    return ";".join(parts)


def kombu_broker(url: str) -> tuple[str, dict[str, Any]]:
    """What kombu needs to reach the broker at `url`: its URL and the transport options to
    add. A sentinel URL becomes kombu's own form, each sentinel a `sentinel://` URL with the
    master's credentials and database (kombu reads them from the one it is on, and moves to
    the next when a connection fails), plus the options `master_name` and `sentinel_kwargs`;
    any other URL is kombu's as it is."""
    target = parse_sentinel_url(url)
    if target is None:
        return url, {}
    auth = ""
    if target.username or target.password:
        auth = f"{quote(target.username or '', safe='')}:{quote(target.password or '', safe='')}@"
    hosts = [
        f"{SENTINEL_SCHEME}://{auth}{host}:{port}/{target.db}" for host, port in target.sentinels
    ]
    options = {"master_name": target.master, "sentinel_kwargs": target.sentinel_options()}
    return ";".join(hosts), options


def _sentinel(target: SentinelURL) -> Sentinel:
    """The process's Sentinel manager for these sentinels: built once, as its connections to
    the sentinels stay open (redis-py before 8.1 cannot close them)."""
    key = (os.getpid(), target)
    manager = _sentinels.get(key)
    if manager is None:
        manager = Sentinel(list(target.sentinels), sentinel_kwargs=target.sentinel_options())
        _sentinels[key] = manager
    return manager


def client_for(url: str, **options: Any) -> SyncRedis:
    """A new client of the Redis at `url` with redis-py `options`. For a sentinel URL, a
    client of the master the sentinels name now: on a lost connection it asks them again, so
    it follows a failover without a restart (and drops a connection to a demoted master)."""
    target = parse_sentinel_url(url)
    if target is None:
        return redis.Redis.from_url(url, **options)
    return _sentinel(target).master_for(
        target.master,
        db=target.db,
        username=target.username,
        password=target.password,
        **options,
    )


def in_worker() -> None:
    """This process is a Celery worker: its Redis calls ride out an outage for
    CONTINUUM_WORKER_REDIS_WAIT_S (a task's work is not lost to a restart). Producers, the API
    and the CLI give up after CONTINUUM_REDIS_WAIT_S and say so."""
    global _worker_process
    _worker_process = True
    _clients.clear()


def wait_s() -> float:
    """How long a Redis call of this process keeps retrying while Redis is unreachable."""
    settings = get_settings()
    return settings.worker_redis_wait_s if _worker_process else settings.redis_wait_s


def retries_for(wait: float, base: float = BACKOFF_BASE_S, cap: float = BACKOFF_CAP_S) -> int:
    """How many retries of an exponential backoff (base, doubling, capped) add up to `wait`."""
    retries, spent = 0, 0.0
    while spent < wait:
        spent += min(cap, base * 2**retries)
        retries += 1
    return retries


def get_redis(url: str | None = None) -> SyncRedis:
    """A pooled client for `url` (default: the configured Redis), one pool per process."""
    url = url or get_settings().resolved_redis_url()
    key = (os.getpid(), url)
    client = _clients.get(key)
    if client is None:
        client = client_for(
            url,
            decode_responses=True,
            health_check_interval=10,
            socket_keepalive=True,
            socket_connect_timeout=5,
            socket_timeout=10,
            retry=Retry(
                ExponentialBackoff(cap=BACKOFF_CAP_S, base=BACKOFF_BASE_S), retries_for(wait_s())
            ),
            retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        )
        _clients[key] = client
    return client


def get_quick_redis(timeout_s: float, url: str | None = None) -> SyncRedis:
    """A client for `url` (default: the configured Redis) that gives up after `timeout_s`
    without retrying: for callers with a fallback when Redis is down."""
    url = url or get_settings().resolved_redis_url()
    return client_for(
        url,
        decode_responses=True,
        socket_connect_timeout=timeout_s,
        socket_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
    )


def get_broker_redis() -> SyncRedis:
    """A client of the broker's Redis database (the in-flight ledger lives there)."""
    return get_redis(get_settings().resolved_broker_url())
