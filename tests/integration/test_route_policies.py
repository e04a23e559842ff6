"""Every route is decided by the one policy guard: none may skip it by accident."""

import pytest

from tenancy.access.guard import POLICY_OPT, PUBLIC_OPT
from tenancy.access.policy import PolicyEnforcer
from tether.app import create_app

pytestmark = pytest.mark.integration

PUBLIC = {"/health", "/ready", "/metrics"}


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
