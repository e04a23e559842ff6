"""Every domain's controllers, in one list the app factory mounts."""

from __future__ import annotations

from litestar.types import ControllerRouterHandler

ROUTE_HANDLERS: list[ControllerRouterHandler] = []
