"""Every route is decided by the one policy guard: none may skip it by accident."""

import pytest

from tenancy.access.guard import POLICY_OPT, PUBLIC_OPT
from tenancy.access.policy import PolicyEnforcer
from tether.app import create_app

pytestmark = pytest.mark.integration

# The console's pages that declare no policy: signing in and out and the language switch
# (no session needed), the start page and the 404 page for unknown console paths (a
# session needed, no object; tests/console covers them).
CONSOLE_OPEN = {
    "/console/sign-in",
    "/console/sign-out",
    "/console/locale/{code:str}",
    "/console",
    "/console/{rest:path}",
}
PUBLIC = {"/health", "/ready", "/metrics"} | CONSOLE_OPEN


def test_every_route_declares_a_policy_the_model_knows(settings) -> None:
    app = create_app(settings)
    enforcer = PolicyEnforcer()
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            if handler.fn.__module__.startswith("litestar."):
                continue  # the OpenAPI document
            if handler.opt.get(PUBLIC_OPT):
                assert route.path in PUBLIC, route.path
                continue
            declared = handler.opt.get(POLICY_OPT)
            assert declared is not None, f"{route.path} has no policy"
            obj, action = declared
            roles = ["admin", "gateway", "creator", "operator", "compliance"]
            assert any(enforcer.decide(r, obj, action).allowed for r in roles), route.path
