"""Tenant admin pages: keys shown once and revoked (with their console sessions), keys
with an expiry, their last use, rotated with an overlap and paged, sessions ended by an
admin, a policy decision tested, privacy patterns tried and saved,
knowledge bases created, documents uploaded and re-indexed."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.console.support import csrf_of, session_csrf, signed_in, token_of

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
async def tenant(make_tenant):
    return await make_tenant()


async def test_a_new_key_is_shown_once_works_and_revoking_it_ends_its_sessions(client, tenant):
    # A creator key names a registered creator.
    studio = {"external_id": "studio-1"}
    assert (await client.post("/v1/creators", json=studio, headers=tenant.admin)).status_code == 201
    admin = await signed_in(client, token_of(tenant.admin))
    created = await admin.post(
        "/console/admin/keys",
        data={
            "_csrf": await session_csrf(admin),
            "role": "creator",
            "subject": "studio-1",
            "name": "Studio 1 的密钥",
        },
    )
    assert created.status_code == 201
    token = re.search(r'id="new-token">\s*(tth_[\w-]+)', created.text).group(1)
    headers = {"Authorization": f"Bearer {token}"}
    assert (await client.get("/v1/personas", headers=headers)).status_code == 200
    listing = await admin.get("/console/admin/keys")
    assert token not in listing.text
    assert "Studio 1 的密钥" in listing.text
    creator = await signed_in(client, token)
    assert (await creator.get("/console/personas")).status_code == 200
    key_id = re.search(r'data-key="([\w-]+)"[^>]*><td[^>]*>Studio 1', listing.text).group(1)
    revoked = await admin.post(
        f"/console/admin/keys/{key_id}/revoke", data={"_csrf": csrf_of(listing.text)}
    )
    assert revoked.status_code == 303
    assert "revoked=1" in revoked.headers["location"]
    assert (await client.get("/v1/personas", headers=headers)).status_code == 401
    assert (await creator.get("/console/personas")).status_code == 303


def _row(html: str, key_id: str) -> str:
    found = re.search(rf'<tr data-key="{key_id}".*?</tr>', html, re.S)
    assert found, f"key {key_id} is not listed"
    return found.group(0)


def _new_token(html: str) -> str:
    return re.search(r'id="new-token">\s*(tth_[\w-]+)', html).group(1)


async def test_a_key_with_an_expiry_shows_its_end_and_last_use_and_a_past_one_is_refused(
    client, tenant
):
    admin = await signed_in(client, token_of(tenant.admin))
    csrf = await session_csrf(admin)
    ends = (datetime.now(UTC) + timedelta(days=30)).replace(second=0, microsecond=0)
    created = await admin.post(
        "/console/admin/keys",
        data={
            "_csrf": csrf,
            "role": "gateway",
            "name": "网关 <script>alert(1)</script>",
            "expires_at": ends.strftime("%Y-%m-%dT%H:%M"),  # a datetime-local field, UTC
        },
    )
    assert created.status_code == 201
    token = _new_token(created.text)
    keys = (await client.get("/v1/api-keys", headers=tenant.admin)).json()["items"]
    [key] = [k for k in keys if k["name"].startswith("网关")]
    assert datetime.fromisoformat(key["expires_at"]) == ends  # the API's own field
    listing = await admin.get("/console/admin/keys")
    row = _row(listing.text, key["id"])
    assert ends.strftime("%Y-%m-%d %H:%M:%S UTC") in row
    assert "not yet" in row  # never used
    assert "<script>alert(1)</script>" not in listing.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in row
    used = await client.get("/v1/personas", headers={"Authorization": f"Bearer {token}"})
    assert used.status_code == 200
    deadline = time.monotonic() + 15  # last use is written in batches, seconds later
    while "not yet" in _row((await admin.get("/console/admin/keys")).text, key["id"]):
        assert time.monotonic() < deadline, "the last use never showed"
        await asyncio.sleep(0.5)
    past = await admin.post(
        "/console/admin/keys",
        data={"_csrf": csrf, "role": "gateway", "name": "late", "expires_at": "2020-01-01T00:00"},
    )
    assert past.status_code == 422
    assert 'id="key-error"' in past.text
    assert "must be in the future" in past.text
    assert 'value="late"' in past.text  # the form keeps what was typed
    assert not [
        k
        for k in (await client.get("/v1/api-keys", headers=tenant.admin)).json()["items"]
        if k["name"] == "late"
    ]


async def test_a_key_is_rotated_with_an_overlap_and_the_new_secret_shown_once(client, tenant):
    admin = await signed_in(client, token_of(tenant.admin))
    issued = await client.post(
        "/v1/api-keys", json={"role": "compliance", "name": "审计 A"}, headers=tenant.admin
    )
    old = issued.json()
    old_headers = {"Authorization": f"Bearer {old['token']}"}
    key_id = old["key"]["id"]
    confirm = await admin.get(f"/console/admin/keys/{key_id}/rotate")
    assert confirm.status_code == 200
    assert 'id="overlap_minutes"' in confirm.text
    assert 'value="60"' in confirm.text  # TETHER_ACCESS__ROTATION_OVERLAP_SECONDS, in minutes
    assert old["token"] not in confirm.text
    too_long = await admin.post(
        f"/console/admin/keys/{key_id}/rotate",
        data={"_csrf": csrf_of(confirm.text), "overlap_minutes": str(31 * 24 * 60)},
    )
    assert too_long.status_code in (400, 422)
    assert 'id="key-error"' in too_long.text
    rotated = await admin.post(
        f"/console/admin/keys/{key_id}/rotate",
        data={"_csrf": csrf_of(confirm.text), "overlap_minutes": "10"},
    )
    assert rotated.status_code == 201
    token = _new_token(rotated.text)
    assert token != old["token"]
    assert 'id="rotated-note"' in rotated.text
    new_headers = {"Authorization": f"Bearer {token}"}
    assert (await client.get("/v1/audit", headers=new_headers)).status_code == 200
    assert (await client.get("/v1/audit", headers=old_headers)).status_code == 200  # overlap
    keys = {
        k["id"]: k for k in (await client.get("/v1/api-keys", headers=tenant.admin)).json()["items"]
    }
    ends = datetime.fromisoformat(keys[key_id]["expires_at"])
    assert timedelta(minutes=9) < ends - datetime.now(UTC) <= timedelta(minutes=10)
    new_id = keys[key_id]["replaced_by"]
    assert keys[new_id]["name"] == "审计 A"
    listing = await admin.get("/console/admin/keys")
    assert 'data-state="rotated"' in _row(listing.text, key_id)
    assert f"/console/admin/keys/{key_id}/rotate" not in listing.text  # rotated once
    assert token not in listing.text
    again = await admin.get(f"/console/admin/keys/{key_id}/rotate")
    assert again.status_code == 409
    assert 'id="error-title"' in again.text
    # No overlap: the old secret stops at once.
    page = await admin.get(f"/console/admin/keys/{new_id}/rotate")
    now = await admin.post(
        f"/console/admin/keys/{new_id}/rotate",
        data={"_csrf": csrf_of(page.text), "overlap_minutes": "0"},
    )
    assert now.status_code == 201
    assert (await client.get("/v1/audit", headers=new_headers)).status_code == 401
    rotations = await client.get("/v1/audit?action=key.rotate", headers=tenant.admin)
    assert len(rotations.json()["items"]) >= 2  # audited like the API's rotations


async def test_another_tenants_key_is_missing_and_a_forged_rotation_is_refused(
    client, tenant, make_tenant
):
    other = await make_tenant()
    foreign = (
        await client.post("/v1/api-keys", json={"role": "gateway"}, headers=other.admin)
    ).json()["key"]["id"]
    admin = await signed_in(client, token_of(tenant.admin))
    missing = await admin.get(f"/console/admin/keys/{foreign}/rotate")
    assert missing.status_code == 404
    assert 'id="error-title"' in missing.text
    csrf = await session_csrf(admin)
    posted = await admin.post(
        f"/console/admin/keys/{foreign}/rotate", data={"_csrf": csrf, "overlap_minutes": "5"}
    )
    assert posted.status_code == 404
    forged = await admin.post(
        f"/console/admin/keys/{foreign}/rotate", data={"overlap_minutes": "5"}
    )
    assert forged.status_code == 403  # no CSRF token
    keys = (await client.get("/v1/api-keys", headers=other.admin)).json()["items"]
    assert all(k["replaced_by"] is None for k in keys)


async def test_keys_are_paged(client, make_tenant):
    fresh = await make_tenant()
    for n in range(50):
        answer = await client.post(
            "/v1/api-keys", json={"role": "gateway", "name": f"k{n:02d}"}, headers=fresh.admin
        )
        assert answer.status_code == 201
    admin = await signed_in(client, token_of(fresh.admin))
    first = await admin.get("/console/admin/keys")
    assert first.text.count("<tr data-key=") == 50
    more = re.search(r'href="\?cursor=([\w-]+)"', first.text)
    assert more, "a full page links to the next one"
    second = await admin.get(f"/console/admin/keys?cursor={more.group(1)}")
    assert second.text.count("<tr data-key=") == 1  # the tenant's admin key, then 50
    assert "k49" in second.text
    bad = await admin.get("/console/admin/keys?cursor=%3Cscript%3E")
    assert bad.status_code in (400, 422)


async def test_an_admin_ends_another_console_session(client, tenant):
    admin = await signed_in(client, token_of(tenant.admin))
    other = await signed_in(client, token_of(tenant.admin))
    page = await admin.get("/console/admin/keys")
    hashes = re.findall(r"/console/admin/sessions/(\w+)/revoke", page.text)
    assert hashes, "the other session is listed with an end button"
    for id_hash in hashes:
        await admin.post(
            f"/console/admin/sessions/{id_hash}/revoke", data={"_csrf": csrf_of(page.text)}
        )
    assert (await other.get("/console/")).status_code == 303
    assert (await admin.get("/console/")).status_code == 200  # its own is not offered


async def test_policies_are_listed_and_a_request_tested(client, tenant):
    admin = await signed_in(client, token_of(tenant.admin))
    page = await admin.get("/console/admin/policies")
    assert 'id="file-rules"' in page.text
    assert "relationship_memory:private" in page.text
    decided = await admin.post(
        "/console/admin/policies/check",
        data={
            "_csrf": csrf_of(page.text),
            "role": "operator",
            "object": "relationship_memory:private",
            "action": "read",
        },
    )
    assert 'id="policy-decision"' in decided.text
    assert "Denied" in decided.text


async def test_privacy_patterns_are_tried_then_saved(client, tenant):
    admin = await signed_in(client, token_of(tenant.admin))
    page = await admin.get("/console/admin/privacy")
    csrf = csrf_of(page.text)
    tried = await admin.post(
        "/console/admin/privacy/test",
        data={
            "_csrf": csrf,
            "patterns": r"ORDER ORD-\d{6}",
            "sample": "订单 ORD-123456, call 13812345678",
        },
    )
    masked = re.search(r'<pre id="masked">(.*?)</pre>', tried.text, re.S).group(1)
    assert "[ORDER]" in masked
    assert "ORD-123456" not in masked
    assert "13812345678" not in masked
    bad = await admin.post(
        "/console/admin/privacy/test",
        data={"_csrf": csrf, "patterns": "BAD (?<=a)b", "sample": "x"},
    )
    assert "flash error" in bad.text
    saved = await admin.post(
        "/console/admin/privacy", data={"_csrf": csrf, "patterns": r"ORDER ORD-\d{6}"}
    )
    assert saved.status_code == 303
    stored = (await client.get("/v1/tenant/privacy-patterns", headers=tenant.admin)).json()
    assert stored["patterns"] == [{"tag": "ORDER", "pattern": r"ORD-\d{6}"}]


async def test_a_knowledge_base_is_created_and_a_document_uploaded_and_reindexed(client, tenant):
    admin = await signed_in(client, token_of(tenant.admin))
    page = await admin.get("/console/admin/knowledge")
    assert "No knowledge bases yet." in page.text  # the empty state
    created = await admin.post(
        "/console/admin/knowledge", data={"_csrf": csrf_of(page.text), "name": "Manuals 说明书"}
    )
    assert created.status_code == 303
    base_page = await admin.get(created.headers["location"])
    uploaded = await admin.post(
        created.headers["location"] + "/documents",
        data={"_csrf": csrf_of(base_page.text)},
        files={"file": ("care.md", "# Care\nWater daily. 每天浇水。".encode())},
    )
    assert uploaded.status_code == 303
    listed = await admin.get(created.headers["location"])
    assert "care.md" in listed.text
    assert 'hx-trigger="every 2s"' in listed.text
    document = re.search(r'data-document="([\w-]+)"', listed.text).group(1)
    again = await admin.post(
        f"{created.headers['location']}/documents/{document}/reindex",
        data={"_csrf": csrf_of(listed.text)},
    )
    assert again.status_code == 303


async def test_the_settings_page_shows_the_tenant(client, tenant):
    admin = await signed_in(client, token_of(tenant.admin))
    page = await admin.get("/console/admin/settings")
    assert page.status_code == 200
    assert tenant.id in page.text


async def test_a_refused_llm_provider_is_shown_next_to_its_field(client, tenant):
    admin = await signed_in(client, token_of(tenant.admin))
    version = (await client.get("/v1/tenant/settings", headers=tenant.admin)).json()["version"]
    form = {
        "_csrf": await session_csrf(admin),
        "version": str(version),
        "extraction.llm_enabled": "on",
        "extraction.llm_provider": "not-offered",
    }
    refused = await admin.post("/console/admin/settings/extraction", data=form)
    assert refused.status_code == 422
    assert "not-offered" in refused.text
    after = (await client.get("/v1/tenant/settings", headers=tenant.admin)).json()
    assert after["version"] == version  # nothing was stored
