"""The console's start page (what this key may do) and the 404 page for unknown paths."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get
from litestar.params import FromPath
from litestar.response import Template

from tenancy.access.guard import PUBLIC_OPT as NO_POLICY
from tether.console.pages import render
from tether.core.errors import NotFound

AnyRequest = Request[Any, Any, Any]
# Any signed-in key may see these; what they show is decided per item.
SIGNED_IN = {NO_POLICY: True}


class HomeController(Controller):
    path = "/"

    @get(["", "/"], opt=SIGNED_IN)
    async def home(self, request: AnyRequest) -> Template:
        """The start page: the pages this key's role may use."""
        return render(request, "home.html")

    @get("/{rest:path}", opt=SIGNED_IN, include_in_schema=False)
    async def unknown(self, rest: FromPath[str]) -> None:
        """Any other console path is the 404 page."""
        raise NotFound(f"no console page {rest}")
