"""`sentinel://` URLs: read once (continuum.redis_client) and handed to every client the same
way: redis-py's Sentinel for our clients, kombu's sentinel transport for producers, workers
and beat. No server is asked."""

from __future__ import annotations

import pytest
from kombu.transport.redis import SentinelTransport

from continuum.config import ConfigError, Settings
from continuum.contract.client import producer_app
from continuum.redis_client import SentinelURL, kombu_broker, parse_sentinel_url, redacted

URL = (
    "sentinel://:s3cret@10.0.0.1:26379;sentinel://10.0.0.2;sentinel://10.0.0.3:26380/2"
    "?master=mymaster&sentinel_password=sent%21pw"
)


def test_a_sentinel_url_names_every_sentinel_the_master_its_database_and_both_passwords() -> None:
    assert parse_sentinel_url(URL) == SentinelURL(
        sentinels=(("10.0.0.1", 26379), ("10.0.0.2", 26379), ("10.0.0.3", 26380)),
        master="mymaster",
        db=2,
        password="s3cret",
        sentinel_password="sent!pw",
    )
    assert parse_sentinel_url("redis://127.0.0.1:6379/0") is None
    # The credentials and options may stand on any one sentinel, or the same on several.
    same = "sentinel://h1/0?master=m;sentinel://:pw@h2:5/0?master=m"
    assert parse_sentinel_url(same) == SentinelURL((("h1", 26379), ("h2", 5)), "m", 0, None, "pw")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sentinel://h1:26379;sentinel://h2", "name the master"),
        ("sentinel://h1/0?master=a;sentinel://h2/1?master=a", "two different databases"),
        ("sentinel://:a@h1;sentinel://:b@h2?master=m", "two different passwords"),
        ("sentinel://h1;redis://h2?master=m", "every sentinel is sentinel://HOST"),
        ("sentinel://h1/zero?master=m", "the database is a number"),
        ("sentinel://h1?master_name=m", "unknown option 'master_name'"),
        ("sentinel://h1:port?master=m", "the form is sentinel://"),
    ],
)
def test_a_malformed_sentinel_url_is_refused_with_the_form_to_use(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        parse_sentinel_url(url)
    assert "sentinel://[:PASSWORD@]HOST" in str(refused.value)


def test_passwords_never_reach_a_log_line() -> None:
    shown = redacted(URL)
    assert "s3cret" not in shown and "pw" not in shown
    assert shown.startswith("sentinel://:***@10.0.0.1:26379;sentinel://10.0.0.2;")
    assert shown.endswith("/2?master=mymaster&sentinel_password=***")
    assert redacted("redis://:pw@h:6379/1") == "redis://:***@h:6379/1"
    assert redacted("redis://h:6379/1") == "redis://h:6379/1"


def test_kombu_gets_its_own_form_and_the_sentinel_options() -> None:
    url, options = kombu_broker(URL)
    assert url == (
        "sentinel://:s3cret@10.0.0.1:26379/2;sentinel://:s3cret@10.0.0.2:26379/2;"
        "sentinel://:s3cret@10.0.0.3:26380/2"
    )
    assert options["master_name"] == "mymaster"
    assert options["sentinel_kwargs"]["password"] == "sent!pw"
    assert kombu_broker("redis://h:6379/0") == ("redis://h:6379/0", {})


def test_workers_beat_and_producers_reach_the_broker_through_the_sentinels(servers: object) -> None:
    from workers.config import celery_config  # importing workers builds the app: servers first

    config = celery_config(Settings(broker_url=URL, redis_url=URL))
    assert config["broker_url"] == kombu_broker(URL)[0]
    assert config["broker_transport_options"]["master_name"] == "mymaster"
    assert config["broker_transport_options"]["visibility_timeout"] == 10  # ours, kept
    assert config["beat_scheduler"] == "workers.beat:LockedScheduler"

    app = producer_app(URL)
    with app.connection_for_write() as connection:  # built, not connected
        assert isinstance(connection.transport, SentinelTransport)
        assert connection.virtual_host == "2" and connection.password == "s3cret"
        assert connection.transport_options["sentinel_kwargs"]["password"] == "sent!pw"
        assert [alt.split("@")[1] for alt in connection.alt] == [
            "10.0.0.1:26379/2",
            "10.0.0.2:26379/2",
            "10.0.0.3:26380/2",
        ]


PATIENCE = (
    "import sys; from celery import signals; import workers.app; "
    "from continuum.redis_client import wait_s; before = wait_s(); "
    "getattr(signals, sys.argv[1]).send(sender=None); print(before, wait_s())"
)


@pytest.mark.parametrize("started", ["worker_init", "beat_init"])
def test_a_process_that_imports_the_worker_app_is_a_producer_until_a_worker_or_beat_starts(
    started: str,
) -> None:
    """A producer gives up on Redis after CONTINUUM_REDIS_WAIT_S, a worker or beat waits out
    an outage for CONTINUUM_WORKER_REDIS_WAIT_S. Importing the app (to publish, or in a test)
    once made any process a worker: a fault test's producer then waited 75 s on a failover."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "CONTINUUM_REDIS_WAIT_S": "5", "CONTINUUM_WORKER_REDIS_WAIT_S": "75"}
    out = subprocess.run(
        [sys.executable, "-c", PATIENCE, started], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["5.0", "75.0"]
