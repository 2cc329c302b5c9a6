"""docker/compose.yml without Docker (CI has none): the file parses, each Continuum service
runs a role the image's entrypoint knows, each role's command line is one the `continuum`
CLI accepts, and the `ha` profile's sentinels are the ones docker/ha.env's URLs name."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from typer.core import TyperGroup
from typer.main import get_command

from continuum.cli.main import app
from continuum.redis_client import parse_sentinel_url
from tests.support.paths import ROOT

DOCKER = ROOT / "docker"


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yml").read_text())
    return data


def entrypoint_commands() -> dict[str, list[list[str]]]:
    """Each role of docker/entrypoint.sh and the `continuum` command lines it runs (the
    role's `case` branch), variables left as they are written."""
    script = (DOCKER / "entrypoint.sh").read_text()
    run = script[script.rindex('case "$role" in') :]
    roles: dict[str, list[list[str]]] = {}
    for branch in re.split(r"\n  (?=[a-z|]+\))", run)[1:]:
        names, _, body = branch.partition(")")
        lines = re.findall(r"continuum ([^;\n]+)", body)
        for name in names.split("|"):
            roles[name.strip()] = [line.replace('"', "").split() for line in lines]
    return roles


def continuum_services() -> dict[str, Any]:
    """The services built from the Continuum image (the `x-continuum` anchor)."""
    return {name: service for name, service in compose()["services"].items()
            if "build" in service}  # fmt: skip


def test_the_api_and_the_mcp_server_are_services_on_loopback() -> None:
    services = continuum_services()
    assert services["api"]["command"] == ["api"]
    assert services["mcp"]["command"] == ["mcp"]
    for name in ("api", "mcp", "flower"):
        assert all(port.startswith("127.0.0.1:") for port in services[name]["ports"]), name


@pytest.mark.parametrize("service", sorted(continuum_services()))
def test_each_service_runs_a_role_whose_commands_the_cli_accepts(service: str) -> None:
    role = continuum_services()[service]["command"][0]
    roles = entrypoint_commands()
    assert role in roles, f"{service}: the entrypoint has no role {role!r}"
    assert roles[role], f"role {role!r} runs no continuum command"
    for argv in roles[role]:
        parses(service, [arg if not arg.startswith("$") else "1" for arg in argv])


def parses(service: str, argv: list[str]) -> None:
    """`continuum ARGV` names a command (through its groups) that takes these options (a
    value from the environment given as `1`)."""
    command: Any = get_command(app)
    name, words = "continuum", list(argv)
    while isinstance(command, TyperGroup):
        found = command.get_command(command.make_context(name, [], resilient_parsing=True),
                                    words[0])  # fmt: skip
        assert found is not None, f"{service}: `continuum {' '.join(argv)}` is no command"
        command, name, words = found, words[0], words[1:]
    command.make_context(name, words)  # an unknown option or a missing value raises


def test_the_ha_profile_holds_a_replica_and_the_sentinels_the_urls_name() -> None:
    services = compose()["services"]
    ha = {name for name, service in services.items() if "ha" in service.get("profiles", [])}
    assert ha == {"redis-replica", "sentinel-1", "sentinel-2", "sentinel-3"}
    assert "--replicaof" in services["redis-replica"]["command"]
    env = dict(
        line.split("=", 1)
        for line in (DOCKER / "ha.env").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert env["COMPOSE_PROFILES"] == "ha"
    for name in ("CONTINUUM_BROKER_URL", "CONTINUUM_REDIS_URL"):
        url = parse_sentinel_url(env[name])
        assert url is not None and url.master == "continuum"
        assert {host for host, _ in url.sentinels} == {"sentinel-1", "sentinel-2", "sentinel-3"}
        assert compose()["x-continuum"]["environment"][name].startswith(f"${{{name}:-redis://")
    for sentinel in ("sentinel-1", "sentinel-2", "sentinel-3"):
        assert "sentinel monitor continuum redis 6379 2" in services[sentinel]["command"][0]
