"""The `tether` command line against real services."""

import json
import os
import subprocess
import sys

import pytest
from redis import Redis as SyncRedis

from tether.core import task_queues
from tether.core.settings import Settings
from tether.health.heartbeat import queue_key

pytestmark = pytest.mark.integration


def _tether(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        env=os.environ | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _env(settings: Settings) -> dict[str, str]:
    return {
        "TETHER_DATABASE_URL": settings.require_database_url(),
        "TETHER_DB__OWNER_URL": settings.require_owner_url(),
        "TETHER_REDIS_URL": settings.require_redis_url(),
        "TETHER_PORT": "0",
    }


def test_help_explains_every_subcommand() -> None:
    out = _tether("--help", env={}).stdout
    for command in ("serve", "worker", "migrate", "tenant", "doctor", "backup", "restore"):
        assert command in out


def test_tenant_create_prints_id_and_admin_key_once(settings: Settings) -> None:
    result = _tether("tenant", "create", "acme-cli", "--region", "eu-west", env=_env(settings))
    assert result.returncode == 0, result.stderr
    created = json.loads(result.stdout)
    assert created["region"] == "eu-west"
    assert created["admin_token"].startswith("tth_")


def test_duplicate_tenant_name_is_a_clear_error(settings: Settings) -> None:
    _tether("tenant", "create", "dup-cli", env=_env(settings))
    result = _tether("tenant", "create", "dup-cli", env=_env(settings))
    assert result.returncode != 0
    assert "already exists" in result.stderr


def test_doctor_says_what_to_do_without_workers_or_with_a_dead_provider(
    settings: Settings,
) -> None:
    # Before any worker of this module starts (celery_worker comes in the next test).
    redis = SyncRedis.from_url(settings.require_redis_url())
    redis.delete(*(queue_key(q) for q in task_queues.ALL))
    env = _env(settings) | {
        "TETHER_EMBEDDING__KIND": "openai",
        "TETHER_EMBEDDING__BASE_URL": "http://127.0.0.1:1/v1",
        "TETHER_EMBEDDING__MODEL": "m",
        "TETHER_EMBEDDING__DIMENSION": "8",
        "TETHER_LLM__ENABLED": "true",
        "TETHER_LLM__BASE_URL": "http://127.0.0.1:1/v1",
    }
    result = _tether("doctor", env=env)
    assert result.returncode == 1
    for check in ("workers", "embedding", "llm"):
        assert f"FAIL {check}" in result.stdout, result.stdout
    assert "start `tether worker`" in result.stdout
    assert "TETHER_EMBEDDING__BASE_URL" in result.stdout
    assert "TETHER_LLM__BASE_URL" in result.stdout


def test_doctor_reports_ok_against_live_services(settings: Settings, celery_worker) -> None:
    result = _tether("doctor", env=_env(settings))
    assert result.returncode == 0, result.stdout
    assert "pgvector" in result.stdout
    assert "as tether_app, which owns nothing" in result.stdout
    for check in ("migrations", "workers", "embedding", "llm"):
        assert f"ok   {check}" in result.stdout, result.stdout


def test_doctor_fails_a_service_that_would_run_past_row_security(settings: Settings) -> None:
    as_owner = _env(settings) | {"TETHER_DATABASE_URL": settings.require_owner_url()}
    result = _tether("doctor", env=as_owner)
    assert result.returncode == 1, result.stdout
    assert "FAIL row_security" in result.stdout
    assert "bypasses row-level security" in result.stdout
    # The owner switching to the application role works, and is named for what it is.
    legacy = _tether("doctor", env=as_owner | {"TETHER_DB__ROLE": "tether_app"})
    assert legacy.returncode == 0, legacy.stdout
    assert "which could switch back" in legacy.stdout


def test_doctor_names_the_fix_when_postgres_is_unreachable(settings: Settings) -> None:
    env = _env(settings) | {"TETHER_DATABASE_URL": "postgresql://x@127.0.0.1:1/none"}
    result = _tether("doctor", env=env)
    assert result.returncode == 1
    assert "FAIL postgres" in result.stdout
    assert "fix:" in result.stdout


def test_migrate_current_reports_head(settings: Settings) -> None:
    result = _tether("migrate", "current", env=_env(settings))
    assert result.returncode == 0, result.stderr
    state = json.loads(result.stdout)
    assert state["current"] == state["head"]


def test_worker_without_urls_refuses_with_a_fix(tmp_path) -> None:
    result = _tether("worker", env={"TETHER_DATA_DIR": str(tmp_path)})
    assert result.returncode == 1
    assert "Fix:" in result.stderr


def test_tenant_limits_shows_and_sets_the_allowance(settings: Settings) -> None:
    env = _env(settings)
    assert _tether("tenant", "create", "limits-cli", env=env).returncode == 0
    shown = _tether("tenant", "limits", "limits-cli", env=env)
    assert shown.returncode == 0, shown.stderr
    default = settings.limits.turns_per_day
    assert json.loads(shown.stdout)["limits"]["turns_per_day"]["allowance"] == default
    allowed = _tether(
        "tenant",
        "limits",
        "limits-cli",
        "--allow",
        "turns_per_day=7",
        "--allow",
        "memories=0",
        env=env,
    )
    assert allowed.returncode == 0, allowed.stderr
    limits = json.loads(allowed.stdout)["limits"]
    assert limits["turns_per_day"] == {"value": 7, "allowance": 7, "chosen": None}
    assert limits["memories"]["value"] == 0  # no limit
    for bad in (["nobody"], ["limits-cli", "--allow", "turns=5"]):
        refused = _tether("tenant", "limits", *bad, env=env)
        assert refused.returncode == 1
        assert "Fix:" in refused.stderr


def test_tenant_settings_shows_and_writes_a_new_version(settings: Settings, tmp_path) -> None:
    env = _env(settings)
    assert _tether("tenant", "create", "settings-cli", env=env).returncode == 0
    shown = _tether("tenant", "settings", "settings-cli", env=env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["version"] == 0
    change = tmp_path / "settings.json"
    change.write_text(
        json.dumps(
            {
                "context": {"default_max_tokens": 800},
                "extraction": {"llm_enabled": False},
                "reason": "夜间成本控制",
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    written = _tether("tenant", "settings", "settings-cli", "--set", str(change), env=env)
    assert written.returncode == 0, written.stderr
    body = json.loads(written.stdout)
    assert body["version"] == 1
    assert body["context"]["default_max_tokens"] == 800
    assert body["extraction"]["llm_enabled"] is False
    change.write_text(json.dumps({"knowledge": {"query_timeout_ms": 1}}), encoding="utf-8")
    refused = _tether("tenant", "settings", "settings-cli", "--set", str(change), env=env)
    assert refused.returncode == 1
    assert "invalid" in refused.stderr
    assert "Fix:" in refused.stderr
    again = json.loads(_tether("tenant", "settings", "settings-cli", env=env).stdout)
    assert again["version"] == 1  # nothing was written


def test_tenant_settings_cli_checks_the_llm_provider(settings: Settings, tmp_path) -> None:
    named = {"vllm-eu": {"base_url": "http://vllm.eu.test:8000/v1", "model": "qwen"}}
    env = _env(settings) | {
        "TETHER_PROVIDERS__LLM": json.dumps(named),
        "TETHER_PROVIDERS__ALLOWED_HOSTS": '["vllm.eu.test:8000"]',
    }
    assert _tether("tenant", "create", "provider-cli", env=env).returncode == 0
    change = tmp_path / "settings.json"
    outside = {"llm_provider": "vllm-eu", "llm_base_url": "http://metadata.test/v1"}
    change.write_text(json.dumps({"extraction": outside}), encoding="utf-8")
    refused = _tether("tenant", "settings", "provider-cli", "--set", str(change), env=env)
    assert refused.returncode == 1
    assert "extraction.llm_base_url" in refused.stderr
    chosen = {"llm_provider": "vllm-eu", "llm_model": "qwen-72b"}
    change.write_text(json.dumps({"extraction": chosen}), encoding="utf-8")
    written = _tether("tenant", "settings", "provider-cli", "--set", str(change), env=env)
    assert written.returncode == 0, written.stderr
    body = json.loads(written.stdout)
    assert body["version"] == 1
    assert body["extraction"]["llm_model"] == "qwen-72b"
