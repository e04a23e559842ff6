"""Tenant admin pages: keys shown once and revoked (with their console sessions),
sessions ended by an admin, a policy decision tested, privacy patterns tried and saved,
knowledge bases created, documents uploaded and re-indexed."""

from __future__ import annotations

import re

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
    key_id = re.search(r'data-key="([\w-]+)"><td>Studio 1', listing.text).group(1)
    revoked = await admin.post(
        f"/console/admin/keys/{key_id}/revoke", data={"_csrf": csrf_of(listing.text)}
    )
    assert revoked.status_code == 303
    assert "revoked=1" in revoked.headers["location"]
    assert (await client.get("/v1/personas", headers=headers)).status_code == 401
    assert (await creator.get("/console/personas")).status_code == 303


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
