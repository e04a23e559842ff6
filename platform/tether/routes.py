"""Every domain's controllers, in one list the app factory mounts."""

from __future__ import annotations

from litestar.types import ControllerRouterHandler

from tenancy.access.controllers import ApiKeyController
from tenancy.access.policy_controllers import PolicyController
from tenancy.audit.controllers import AuditController
from tenancy.graph.controllers import CreatorController, PersonaController, UserController
from tenancy.limits.controllers import TenantLimitsController
from tenancy.relationships.controllers import RelationshipController, UserRelationshipController
from tenancy.resolve.controllers import ResolveController
from tenancy.settings.controllers import ReembedRunController, TenantSettingsController
from tether.api.metrics import MetricsController
from tether.context.controllers import ContextController
from tether.health.controllers import HealthController
from tether.knowledge.controllers import KnowledgeBaseController, KnowledgeDocumentController
from tether.memories.controllers import ConflictController, MemoryController
from tether.memories.preview_controllers import ExtractionPreviewController
from tether.memories.session_controllers import (
    SessionDefaultsController,
    SessionFlagController,
    SessionListController,
)
from tether.personas.controllers import PersonaProfileController
from tether.privacy.controllers import PrivacyPatternController
from tether.profiles.controllers import GlobalProfileController
from tether.recall.controllers import SearchController
from tether.recap.controllers import RecapController
from tether.retention.controllers import RetentionRunController
from tether.rights.controllers import (
    AccessReportController,
    ForgetController,
    RelationshipExportController,
    UserErasureController,
    UserExportController,
)
from tether.turns.controllers import TurnController

ROUTE_HANDLERS: list[ControllerRouterHandler] = [
    HealthController,
    MetricsController,
    ApiKeyController,
    ResolveController,
    UserController,
    CreatorController,
    PersonaController,
    RelationshipController,
    UserRelationshipController,
    PersonaProfileController,
    TurnController,
    MemoryController,
    ConflictController,
    ExtractionPreviewController,
    SessionListController,
    SessionFlagController,
    SessionDefaultsController,
    SearchController,
    ContextController,
    RecapController,
    PrivacyPatternController,
    TenantLimitsController,
    TenantSettingsController,
    ReembedRunController,
    RetentionRunController,
    PolicyController,
    AuditController,
    GlobalProfileController,
    ForgetController,
    UserExportController,
    RelationshipExportController,
    UserErasureController,
    AccessReportController,
    KnowledgeBaseController,
    KnowledgeDocumentController,
]
