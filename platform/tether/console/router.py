"""The console, mounted under /console: its pages, static files, templates, session
middleware, CSRF guard and HTML error pages."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from litestar import Router
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.static_files import create_static_files_router
from litestar.template import TemplateConfig
from litestar.types import ControllerRouterHandler

from tether.console.controllers.audit import AuditPages
from tether.console.controllers.auth import AuthController
from tether.console.controllers.consent import ConsentPages
from tether.console.controllers.extract import ExtractPages
from tether.console.controllers.home import HomeController
from tether.console.controllers.keys import KeyPages
from tether.console.controllers.knowledge import KnowledgePages
from tether.console.controllers.memories import RelationshipPages
from tether.console.controllers.personas import PersonaPages
from tether.console.controllers.playground import PlaygroundPages
from tether.console.controllers.policies import PolicyPages
from tether.console.controllers.reembed import ReembedPages
from tether.console.controllers.sessions import SessionPages
from tether.console.controllers.settings_page import SettingsPages
from tether.console.controllers.tenant_sessions import TenantSessionPages
from tether.console.csrf import csrf_guard
from tether.console.errors import EXCEPTION_HANDLERS
from tether.console.filters import FILTERS
from tether.console.middleware import PUBLIC_OPT, console_session, security_headers

HERE = Path(__file__).parent
PATH = "/console"

PAGES: list[ControllerRouterHandler] = [
    AuthController,
    HomeController,
    PersonaPages,
    RelationshipPages,
    SessionPages,
    PlaygroundPages,
    ExtractPages,
    AuditPages,
    ConsentPages,
    KeyPages,
    PolicyPages,
    KnowledgePages,
    SettingsPages,
    TenantSessionPages,
    ReembedPages,
]


def template_config() -> TemplateConfig[JinjaTemplateEngine]:
    """Jinja with autoescaping on for every template: user content is always text."""
    environment = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(FILTERS)
    return TemplateConfig(instance=JinjaTemplateEngine.from_environment(environment))


def console_router() -> Router:
    static = create_static_files_router(
        path="/static",
        directories=[HERE / "static"],
        opt={PUBLIC_OPT: True},
        include_in_schema=False,
    )
    return Router(
        path=PATH,
        route_handlers=[*PAGES, static],
        middleware=[security_headers, console_session],
        guards=[csrf_guard],
        exception_handlers=EXCEPTION_HANDLERS,
        include_in_schema=False,
    )
