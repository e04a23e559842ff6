"""The chart wires up: every Deployment's and Job's environment, as rendered for every
values file, names only settings our settings model reads, and loads into it with the
databases set (issue 37: the chart once exported provider keys under names no setting
read). The names come from the model itself, so a renamed setting fails here."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from typing import Any

import helm_python as helm
import pytest
from pydantic import BaseModel

from tests.charts.test_chart import CHART, VALUE_SETS, _parse, _values
from tether.cli import build_parser
from tether.core.settings import Settings

Manifest = dict[str, Any]
PREFIX = "TETHER_"
# Placeholders for what the chart takes from Secrets by reference.
SECRET_VALUES = {
    "TETHER_DATABASE_URL": "postgresql://tether_app:x@postgres:5432/tether",
    "TETHER_DB__OWNER_URL": "postgresql://tether:x@postgres:5432/tether",
    "TETHER_REDIS_URL": "redis://redis:6379/0",
    "TETHER_HOT_REDIS_URL": "redis://hot-redis:6379/0",
}


def setting_names(model: type[BaseModel] = Settings, prefix: str = PREFIX) -> set[str]:
    """Every environment variable the settings model reads (nested with ``__``)."""
    names = set()
    for name, field in model.model_fields.items():
        env = f"{prefix}{name.upper()}"
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            names |= setting_names(kind, f"{env}__")
        else:
            names.add(env)
    return names


KNOWN = setting_names()


@pytest.fixture(scope="module")
def renders() -> Iterator[dict[str, list[Manifest]]]:
    with helm.Chart.load(CHART) as chart:
        yield {
            name: _parse(chart.render(_values(name), name=f"tether-{name}", namespace="tether"))
            for name in VALUE_SETS
        }


def _workloads(manifests: list[Manifest]) -> Iterator[tuple[str, Manifest]]:
    for m in manifests:
        if m["kind"] in {"Deployment", "Job"}:
            for container in m["spec"]["template"]["spec"]["containers"]:
                yield m["metadata"]["labels"]["app.kubernetes.io/component"], container


def container_env(manifests: list[Manifest], container: Manifest) -> dict[str, str]:
    """The environment the container starts with: its ConfigMaps, then its own entries
    (secret references as placeholders)."""
    maps = {m["metadata"]["name"]: m["data"] for m in manifests if m["kind"] == "ConfigMap"}
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(maps[source["configMapRef"]["name"]])
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = str(entry["value"])
        else:
            env[entry["name"]] = SECRET_VALUES.get(entry["name"], "secret-from-a-secret")
    return env


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_every_tether_variable_is_a_setting_and_loads(
    renders: dict[str, list[Manifest]], value_set: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifests = renders[value_set]
    for component, container in _workloads(manifests):
        env = container_env(manifests, container)
        ours = {name for name in env if name.startswith(PREFIX)}
        assert ours - KNOWN == set(), f"{value_set}/{component}: no setting reads these"
        for name in [n for n in os.environ if n.startswith(PREFIX)]:
            monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        settings = Settings(_env_file=None)  # type: ignore[call-arg]
        # Not embedded: a pod must never start its own Postgres and Redis (the migration
        # Job needs only Postgres).
        embedded = settings.database_url is None if component == "migrate" else settings.is_embedded
        assert not embedded, f"{value_set}/{component}: database URLs missing"
        assert settings.region == env["TETHER_REGION"]


def test_provider_keys_reach_the_provider_settings(
    renders: dict[str, list[Manifest]], monkeypatch: pytest.MonkeyPatch
) -> None:
    manifests = renders["eu-west"]
    (api,) = [c for component, c in _workloads(manifests) if component == "api"]
    for name, value in container_env(manifests, api).items():
        monkeypatch.setenv(name, value)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.llm.api_key is not None
    assert settings.embedding.api_key is not None


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_every_command_is_one_the_image_runs(
    renders: dict[str, list[Manifest]], value_set: str
) -> None:
    manifests = renders[value_set]
    for _component, container in _workloads(manifests):
        command = container["command"]
        env = container_env(manifests, container)
        if command[0] == "tether":
            build_parser().parse_args(command[1:])  # exits on an unknown subcommand
        elif command[:3] == ["python", "-m", "uvicorn"]:
            assert "tether.asgi:create" in command
            assert command[command.index("--port") + 1] == env["TETHER_PORT"]
        else:
            assert command[:3] == ["python", "-m", "celery"], shlex.join(command)
            assert command[command.index("-A") + 1] == "workers.app"


def test_every_documented_variable_is_a_setting() -> None:
    documented = set(re.findall(r"\bTETHER_[A-Z0-9_]+", (CHART / "values.yaml").read_text()))
    assert documented - KNOWN == set()


def test_ingress_body_size_follows_the_upload_limit(renders: dict[str, list[Manifest]]) -> None:
    for name in ("eu-west", "cn-north"):
        manifests = renders[name]
        (ingress,) = [m for m in manifests if m["kind"] == "Ingress"]
        body = ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-body-size"]
        (settings,) = [
            m["data"]
            for m in manifests
            if m["kind"] == "ConfigMap" and "TETHER_REGION" in m["data"]
        ]
        upload = int(settings["TETHER_KNOWLEDGE__MAX_UPLOAD_BYTES"])
        assert int(body.removesuffix("m")) * 2**20 > upload
