"""Every console page, opened by every role on its own object, another creator's,
another operator's and another tenant's, against one table (the API matrix's codes):
a page, the 404 page (out of reach, exactly like a missing object) or the 403 page (the
role may not). A console route the table does not list fails."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.authz_world import ROLES, Side, Tenant, build_tenant
from tests.console.support import session_csrf, signed_in, token_of
from tests.integration.test_authorization_matrix import expected, side_for

pytestmark = pytest.mark.integration

R, P, U = (
    "/console/relationships/{relationship_id}",
    "/console/personas/{persona_id}",
    "/console/users/{user_id}",
)
KB = "/console/admin/knowledge/{knowledge_base_id}"

# (method, path) → codes per role (admin, gateway, creator, operator, compliance).
PAGES: dict[tuple[str, str], str] = {
    ("GET", "/console/personas"): "AAAAD",
    ("GET", P): "AAODD",
    ("GET", P + "/history"): "AAODD",
    ("POST", P + "/preview"): "AAODD",
    ("GET", "/console/relationships"): "DAAAD",
    ("GET", R): "DAOOD",
    ("GET", R + "/memories/{memory_id}"): "DAOOD",
    ("GET", R + "/export"): "AADDA",
    ("GET", R + "/sessions"): "DAOOD",
    ("GET", R + "/pool-inheritance"): "ADODD",
    ("GET", "/console/extract"): "DAAAD",
    ("POST", "/console/extract?relationship_id={relationship_id}"): "DAOOD",
    ("GET", "/console/playground"): "DAAAD",
    ("POST", "/console/playground?relationship_id={relationship_id}"): "DAOOD",
    ("GET", "/console/audit"): "ADDDA",
    ("GET", "/console/audit/access-report?global_user_id={user_id}"): "ADDDA",
    ("GET", "/console/audit/export"): "ADDDA",
    ("GET", "/console/audit/access"): "ADDDA",
    ("GET", "/console/audit/access?global_user_id={user_id}"): "ADDDA",
    ("GET", "/console/users"): "AADDD",
    ("GET", U): "AADDD",
    ("GET", "/console/admin/keys"): "ADDDD",
    ("GET", "/console/admin/policies"): "ADDDA",
    ("GET", "/console/admin/privacy"): "ADDDD",
    ("GET", "/console/admin/settings"): "ADDDD",
    ("GET", "/console/admin/session-defaults"): "ADDDD",
    ("GET", "/console/admin/retention"): "ADDDD",
    ("GET", "/console/admin/reembed-runs"): "ADDDD",
    ("GET", "/console/admin/knowledge"): "AAADD",
    ("GET", KB): "AAODD",
}
# Routes that change state, each tested by the named test (a route listed nowhere fails).
ELSEWHERE = {
    ("POST", "/console/sign-in"): "test_console_auth",
    ("GET", "/console/sign-in"): "test_console_auth",
    ("POST", "/console/sign-out"): "test_console_auth",
    ("GET", "/console/locale/{code:str}"): "test_console_auth",
    ("GET", "/console"): "test_console_auth",
    ("GET", "/console/{rest:path}"): "test_console_auth",
    ("POST", "/console/personas/{persona_id:uuid}/profile"): "test_console_pages",
    ("POST", "/console/personas/{persona_id:uuid}/restore"): "test_console_pages",
    (
        "POST",
        "/console/relationships/{relationship_id:uuid}/memories/{memory_id:uuid}",
    ): "test_console_pages",
    ("POST", "/console/relationships/{relationship_id:uuid}/forget"): "test_console_pages",
    ("POST", "/console/relationships/{relationship_id:uuid}/forget/confirm"): "test_console_pages",
    (
        "POST",
        "/console/relationships/{relationship_id:uuid}/memories/{memory_id:uuid}/resolve",
    ): "test_console_memory_pages",
    (
        "POST",
        "/console/relationships/{relationship_id:uuid}/sessions/{session_id:str}",
    ): "test_console_memory_pages",
    (
        "POST",
        "/console/relationships/{relationship_id:uuid}/sessions/{session_id:str}/forget",
    ): "test_console_memory_pages",
    (
        "POST",
        "/console/relationships/{relationship_id:uuid}/pool-inheritance",
    ): "test_console_memory_pages",
    ("POST", "/console/admin/session-defaults"): "test_console_memory_pages",
    ("POST", "/console/audit/verify"): "test_console_pages",
    ("POST", "/console/audit/verify/{job_id:str}"): "test_console_pages",
    ("GET", "/console/audit/events/{event_id:uuid}"): "test_console_pages",
    ("POST", "/console/users/{user_id:uuid}/consent"): "test_console_pages",
    ("POST", "/console/admin/keys"): "test_console_admin",
    ("POST", "/console/admin/keys/{key_id:uuid}/revoke"): "test_console_admin",
    ("GET", "/console/admin/keys/{key_id:uuid}/rotate"): "test_console_admin",
    ("POST", "/console/admin/keys/{key_id:uuid}/rotate"): "test_console_admin",
    ("POST", "/console/admin/sessions/{id_hash:str}/revoke"): "test_console_admin",
    ("POST", "/console/admin/policies/check"): "test_console_admin",
    ("POST", "/console/admin/privacy"): "test_console_admin",
    ("POST", "/console/admin/settings/{section:str}"): "test_console_settings_browser",
    ("POST", "/console/admin/privacy/test"): "test_console_admin",
    ("POST", "/console/admin/knowledge"): "test_console_admin",
    ("POST", "/console/admin/knowledge/{knowledge_base_id:uuid}/documents"): "test_console_admin",
    (
        "POST",
        "/console/admin/knowledge/{knowledge_base_id:uuid}/documents/{document_id:uuid}/reindex",
    ): "test_console_admin",
}
VARIANTS = ("own", "other_creator", "other_operator", "other_tenant")
_TYPED = re.compile(r"\{(\w+)(:\w+)?\}")


def _shape(path: str) -> str:
    """A table path in the app's notation ({x} → {x:uuid}), without its query."""
    return _TYPED.sub(
        lambda m: "{" + m.group(1) + (m.group(2) or ":uuid") + "}", path.split("?")[0]
    )


def test_the_table_lists_every_console_route(app_routes: set[tuple[str, str]]) -> None:
    listed = {(m, _shape(p)) for m, p in PAGES} | set(ELSEWHERE)
    assert app_routes - listed == set(), "console routes with no expectation"
    assert listed - app_routes == set(), "expectations for routes the console does not serve"


@pytest.fixture(scope="module")
def app_routes() -> set[tuple[str, str]]:
    from tether.app import create_app
    from tether.core.settings import Settings

    app = create_app(Settings(_env_file=None))  # type: ignore[call-arg]
    found = set()
    for route in app.routes:
        if not route.path.startswith("/console") or route.path.startswith("/console/static"):
            continue
        for handler in getattr(route, "route_handlers", []):
            if not handler.fn.__module__.startswith("litestar."):
                found |= {(method, route.path) for method in handler.http_methods}
    return found


@pytest.fixture(scope="module")
async def world(client, make_tenant) -> dict[str, Tenant]:
    return {
        "a": await build_tenant(client, make_tenant),
        "b": await build_tenant(client, make_tenant),
    }


@pytest.fixture(scope="module")
async def browsers(client, world) -> dict[str, tuple[httpx.AsyncClient, str]]:
    found = {}
    for role in ROLES:
        own = await signed_in(client, token_of(world["a"].keys[role]))
        found[role] = (own, await session_csrf(own))
    return found


def _concrete(template: str, side: Side) -> str:
    values = {
        "user_id": side.user_id,
        "persona_id": side.persona_id,
        "relationship_id": side.relationship_id,
        "memory_id": side.memory_id,
        "knowledge_base_id": side.knowledge_base_id,
    }
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)


def _outcome(response: httpx.Response) -> str:
    if response.status_code < 300:
        return "2xx"
    if response.status_code in (403, 404):
        # The error PAGE (HTML), not a problem+json answer or someone's data.
        assert 'id="error-title"' in response.text, response.text[:200]
    return str(response.status_code)


@pytest.mark.parametrize(("method", "path"), sorted(PAGES))
async def test_console_page_answers_each_role_as_the_table_says(
    world, browsers, method: str, path: str
) -> None:
    codes = PAGES[(method, path)]
    objects = "{" in path.split("?")[0]
    wrong = []
    for role, code in zip(ROLES, codes, strict=True):
        own, csrf = browsers[role]
        for variant in VARIANTS if objects else ("own",):
            side = side_for(world, role, variant)
            url = _concrete(path, side)
            if method == "POST":
                form = {
                    "_csrf": csrf,
                    "query": "bees 蜜蜂",
                    "snippet": "user: I keep bees 我养蜜蜂",
                    "relationship_id": side.relationship_id,
                }
                response = await own.post(url.split("?")[0], data=form)
            else:
                response = await own.get(url)
            got = _outcome(response)
            want = expected(code, variant, objects)
            if got != want:
                wrong.append(f"{role}/{variant}: {got} (want {want}) {response.text[:120]!r}")
    assert not wrong, "\n".join(wrong)
