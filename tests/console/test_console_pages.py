"""The console's pages do what the API does, through the same services: a profile saved
with If-Match (412 shows the merge view), history and restore; the memory timeline with
escaped content, edit, forget with preview and confirm, export; the playground equals
POST /v1/context; the chain verified in steps, a tampered row named; consent recorded."""

from __future__ import annotations

import html
import json
import re

import pytest
from sqlalchemy import text

from tests.authz_world import unique
from tests.console.support import csrf_of, session_csrf, signed_in, token_of
from tether.context import template

pytestmark = pytest.mark.integration

XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture(scope="module")
async def tenant(make_tenant):
    handle = await make_tenant()
    handle.gateway = await handle.key("gateway")
    handle.creator = await handle.key("creator", "studio-9")
    return handle


@pytest.fixture(scope="module")
async def relationship(client, tenant) -> dict[str, str]:
    resolved = await client.post(
        "/v1/resolve",
        json={
            "user": {"external_id": unique("u")},
            "persona": {"external_id": "luna", "creator_external_id": "studio-9"},
        },
        headers=tenant.gateway,
    )
    return resolved.json()


async def _memory(client, tenant, relationship, content: str) -> str:
    created = await client.post(
        f"/v1/relationships/{relationship['relationship_id']}/memories",
        json={"content": content, "memory_type": "preference"},
        headers=tenant.gateway,
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def test_two_editors_one_saves_the_other_gets_the_merge_view(client, tenant, relationship):
    persona = relationship["creator_persona_id"]
    first = await signed_in(client, token_of(tenant.creator))
    second = await signed_in(client, token_of(tenant.creator))
    form_a = (await first.get(f"/console/personas/{persona}")).text
    form_b = (await second.get(f"/console/personas/{persona}")).text
    version = re.search(r'name="version" value="(\d+)"', form_a).group(1)
    saved = await first.post(
        f"/console/personas/{persona}/profile",
        data={
            "_csrf": csrf_of(form_a),
            "version": version,
            "background": "A cheerful barista.",
            "tone": "warm 温暖",
            "taboos": "politics\n政治",
            "scripts": "",
            "notes": "",
        },
    )
    assert saved.status_code == 303
    stale = await second.post(
        f"/console/personas/{persona}/profile",
        data={
            "_csrf": csrf_of(form_b),
            "version": version,
            "background": "A night-shift nurse.",
            "tone": "calm",
            "taboos": "",
            "scripts": "晚安",
            "notes": "",
        },
    )
    assert stale.status_code == 412
    assert 'id="merge"' in stale.text
    assert "A cheerful barista." in stale.text
    assert "A night-shift nurse." in stale.text
    merged_version = re.search(r'id="merge-form".*?name="version" value="(\d+)"', stale.text, re.S)
    again = await second.post(
        f"/console/personas/{persona}/profile",
        data={
            "_csrf": csrf_of(stale.text),
            "version": merged_version.group(1),
            "background": "A cheerful barista who works nights.",
            "tone": "warm 温暖",
            "taboos": "politics\n政治",
            "scripts": "晚安",
            "notes": "",
        },
    )
    assert again.status_code == 303
    profile = (await client.get(f"/v1/personas/{persona}/profile", headers=tenant.creator)).json()
    assert profile["background"] == "A cheerful barista who works nights."
    assert profile["taboos"] == ["politics", "政治"]
    assert profile["scripts"] == ["晚安"]


async def test_the_preview_is_the_context_builders_persona_section(client, tenant, relationship):
    persona = relationship["creator_persona_id"]
    own = await signed_in(client, token_of(tenant.creator))
    preview = await own.post(
        f"/console/personas/{persona}/preview",
        data={
            "_csrf": await session_csrf(own),
            "background": 'Says "hi"\nthen <b>waves</b>',
            "tone": "",
            "taboos": "",
            "scripts": "",
            "notes": "",
        },
    )
    assert preview.status_code == 200
    section = html.unescape(
        re.search(r'<pre id="preview-text"[^>]*>(.*?)</pre>', preview.text, re.S).group(1)
    )
    assert section == template.render(
        {"profile": [template.profile_line("Background", 'Says "hi"\nthen <b>waves</b>')]}
    )
    assert "<b>waves" not in preview.text  # escaped on the page


async def test_history_shows_what_each_version_changed_and_restores_one(
    client, tenant, relationship
):
    persona = relationship["creator_persona_id"]
    own = await signed_in(client, token_of(tenant.creator))
    page = await own.get(f"/console/personas/{persona}/history")
    assert page.status_code == 200
    assert "<ins>" in page.text
    current = (await client.get(f"/v1/personas/{persona}/profile", headers=tenant.creator)).json()
    restored = await own.post(
        f"/console/personas/{persona}/restore",
        data={"_csrf": csrf_of(page.text), "version": "1", "current": str(current["version"])},
    )
    assert restored.status_code == 303
    after = (await client.get(f"/v1/personas/{persona}/profile", headers=tenant.creator)).json()
    assert after["version"] == current["version"] + 1
    assert after["background"] == "A cheerful barista."


async def test_memories_render_as_text_and_can_be_edited_forgotten_and_exported(
    client, tenant, relationship
):
    rid = relationship["relationship_id"]
    hostile = await _memory(client, tenant, relationship, XSS)
    cat = await _memory(client, tenant, relationship, "The user has a cat 用户养了一只猫")
    own = await signed_in(client, token_of(tenant.gateway))
    timeline = await own.get(f"/console/relationships/{rid}")
    assert timeline.status_code == 200
    assert "<script>alert" not in timeline.text
    assert "&lt;script&gt;alert" in timeline.text
    assert "<img src=x" not in timeline.text
    why = await own.get(f"/console/relationships/{rid}/memories/{cat}")
    assert 'id="origin">manual<' in why.text
    edited = await own.post(
        f"/console/relationships/{rid}/memories/{cat}",
        data={
            "_csrf": csrf_of(why.text),
            "content": "The user has two cats 两只猫",
            "memory_type": "fact",
            "importance": "0.8",
            "reason": "corrected",
        },
    )
    assert edited.status_code == 303
    history = (
        await client.get(f"/v1/relationships/{rid}/memories/{cat}/history", headers=tenant.gateway)
    ).json()
    assert any(v["reason"] == "corrected" for v in history["items"])
    preview = await own.post(
        f"/console/relationships/{rid}/forget",
        data={"_csrf": csrf_of(why.text), "memory_id": hostile, "query": ""},
    )
    assert preview.status_code == 200
    assert "&lt;script&gt;" in preview.text
    still = await client.get(f"/v1/relationships/{rid}/memories/{hostile}", headers=tenant.gateway)
    assert still.status_code == 200  # a preview changes nothing
    token = re.search(r'name="token" value="([^"]+)"', preview.text).group(1)
    confirmed = await own.post(
        f"/console/relationships/{rid}/forget/confirm",
        data={"_csrf": csrf_of(preview.text), "token": token},
    )
    assert confirmed.status_code == 303
    assert "forgotten=1" in confirmed.headers["location"]
    gone = await client.get(f"/v1/relationships/{rid}/memories/{hostile}", headers=tenant.gateway)
    assert gone.status_code == 404
    export = await own.get(f"/console/relationships/{rid}/export")
    lines = [json.loads(line) for line in export.text.splitlines()]
    assert lines[0]["kind"] == "export"
    assert lines[0]["relationship_id"] == rid
    assert {line["id"] for line in lines if line["kind"] == "memory"} >= {cat}


async def test_the_playground_shows_what_the_context_api_returns(client, tenant, relationship):
    rid = relationship["relationship_id"]
    await _memory(client, tenant, relationship, "The user loves hiking on weekends 周末喜欢爬山")
    own = await signed_in(client, token_of(tenant.gateway))
    form = await own.get(f"/console/playground?relationship_id={rid}")
    page = await own.post(
        "/console/playground",
        data={
            "_csrf": csrf_of(form.text),
            "relationship_id": rid,
            "query": "周末去哪儿玩 hiking?",
            "max_tokens": "2000",
            "recent_turns": "6",
        },
    )
    assert page.status_code == 200
    shown = html.unescape(
        re.search(r'<pre id="context-text">(.*?)</pre>', page.text, re.S).group(1)
    )
    api = await client.post(
        "/v1/context",
        json={"relationship_id": rid, "query": "周末去哪儿玩 hiking?"},
        headers=tenant.gateway,
    )
    assert shown == api.json()["context"]
    assert "hiking" in shown
    assert 'id="items"' in page.text


async def test_verify_shows_progress_then_names_a_tampered_row(client, tenant, superuser):
    own = await signed_in(client, token_of(tenant.admin))
    explorer = await own.get("/console/audit")
    assert explorer.status_code == 200
    assert 'id="audit-events"' in explorer.text

    async def verify() -> str:
        step = await own.post("/console/audit/verify", data={"_csrf": csrf_of(explorer.text)})
        while 'data-done="false"' in step.text:
            job = re.search(r'/console/audit/verify/([\w-]+)"', step.text).group(1)
            step = await own.post(
                f"/console/audit/verify/{job}", data={"_csrf": csrf_of(explorer.text)}
            )
        return step.text

    assert 'data-ok="true"' in await verify()
    events = (await client.get("/v1/audit", headers=tenant.admin)).json()["items"]
    target = events[2]["id"]
    async with superuser.connect() as conn:
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(
            text("UPDATE audit_events SET actor_subject = 'forged' WHERE id = :i"), {"i": target}
        )
        await conn.commit()
    broken = await verify()
    assert 'data-ok="false"' in broken
    assert re.search(r'id="first-bad">.*?<code>([\w-]+)</code>', broken, re.S).group(1) == target
    entry = await own.get(f"/console/audit/events/{target}")
    assert 'id="content-check"' in entry.text
    assert "badge bad" in entry.text


async def test_consent_granted_in_the_console_is_recorded_and_audited(client, tenant, relationship):
    user = relationship["global_user_id"]
    await client.put(
        f"/v1/users/{user}/profile/fields/language",
        json={"value": "zh-CN", "scope": "profile"},
        headers=tenant.admin,
    )
    own = await signed_in(client, token_of(tenant.admin))
    page = await own.get(f"/console/users/{user}")
    assert page.status_code == 200
    assert "language" in page.text
    saved = await own.post(
        f"/console/users/{user}/consent",
        data={
            "_csrf": csrf_of(page.text),
            "scope": ["profile", "preferences"],
            "source": "support call",
        },
    )
    assert saved.status_code == 303
    state = (await client.get(f"/v1/users/{user}/consent", headers=tenant.admin)).json()
    assert state["current"]["scopes"] == ["preferences", "profile"]
    assert state["current"]["source"] == "support call"
    audit = (await client.get("/v1/audit?action=consent.change", headers=tenant.admin)).json()
    assert any(e["global_user_id"] == user for e in audit["items"])
    matrix = (await own.get(f"/console/users/{user}")).text
    assert 'id="consent-matrix"' in matrix
    assert "luna" in matrix
