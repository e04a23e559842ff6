"""Day-2 tenant operations from the CLI (issue 37): list, disable (keys get a 403
problem), enable again, and a new admin key; each change lands in the tenant's audit
chain. And ``tether migrate --check`` against the live database."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import httpx
import pytest

from tether.core.settings import Settings

pytestmark = pytest.mark.integration


def _tether(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "TETHER_DATABASE_URL": settings.require_database_url(),
        "TETHER_DB__OWNER_URL": settings.require_owner_url(),
        "TETHER_REDIS_URL": settings.require_redis_url(),
    }
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def _cli(settings: Settings, *args: str) -> dict | list:  # type: ignore[type-arg]
    result = await asyncio.to_thread(_tether, settings, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


async def test_a_disabled_tenants_keys_get_a_403_problem_until_enabled(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    created = await _cli(settings, "tenant", "create", "day-two-shop")
    other = await _cli(settings, "tenant", "create", "day-two-other")
    headers = {"Authorization": f"Bearer {created['admin_token']}"}
    assert (await client.get("/v1/api-keys", headers=headers)).status_code == 200

    shown = await _cli(settings, "tenant", "disable", "day-two-shop")
    assert shown["disabled"] is True
    await asyncio.sleep(settings.access.key_cache_seconds + 0.5)  # this process's cache
    refused = await client.get("/v1/api-keys", headers=headers)
    assert refused.status_code == 403
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["code"] == "tenant_disabled"
    # Another tenant is not touched.
    other_headers = {"Authorization": f"Bearer {other['admin_token']}"}
    assert (await client.get("/v1/api-keys", headers=other_headers)).status_code == 200

    listed = {t["name"]: t for t in await _cli(settings, "tenant", "list")}
    assert listed["day-two-shop"]["disabled"] is True
    assert listed["day-two-other"]["disabled"] is False

    assert (await _cli(settings, "tenant", "enable", "day-two-shop"))["disabled"] is False
    assert (await client.get("/v1/api-keys", headers=headers)).status_code == 200


async def test_a_new_admin_key_works_and_every_change_is_audited(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    await _cli(settings, "tenant", "create", "день-два-租户")
    issued = await _cli(settings, "tenant", "admin-key", "день-два-租户")
    headers = {"Authorization": f"Bearer {issued['admin_token']}"}
    keys = (await client.get("/v1/api-keys", headers=headers)).json()
    assert issued["admin_key_id"] in json.dumps(keys)
    await _cli(settings, "tenant", "disable", "день-два-租户")
    await _cli(settings, "tenant", "enable", "день-два-租户")
    await asyncio.sleep(settings.access.key_cache_seconds + 0.5)
    compliance = (
        await client.post(
            "/v1/api-keys", json={"role": "compliance", "name": "audit"}, headers=headers
        )
    ).json()
    audit_headers = {"Authorization": f"Bearer {compliance['token']}"}
    events = (await client.get("/v1/audit", headers=audit_headers)).json()
    actions = [e["action"] for e in events["items"]]
    assert {"tenant.disable", "tenant.enable"} <= set(actions)
    assert actions.count("key.issue") >= 2  # the first admin key and the operator's


def test_unknown_tenant_names_the_fix(settings: Settings) -> None:
    result = _tether(settings, "tenant", "disable", "nobody-here")
    assert result.returncode == 1
    assert "tether tenant list" in result.stderr


def test_migrate_check_at_head_reports_nothing_pending(settings: Settings) -> None:
    result = _tether(settings, "migrate", "--check")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["pending"] == []
    assert report["ok"] is True
    assert report["current"] == report["head"]
