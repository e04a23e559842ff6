"""Imports every model module so ``Base.metadata`` is complete (Alembic autogenerate and
``alembic check`` read it)."""

from tenancy import models as tenancy_models
from tenancy.audit import models as audit_models
from tenancy.limits import models as limit_models
from tenancy.settings import models as settings_models
from tether.core.database import Base
from tether.knowledge import models as knowledge_models
from tether.memories import models as memory_models
from tether.personas import models as persona_models
from tether.profiles import models as profile_models
from tether.recall import models as recall_models
from tether.retention import models as retention_models
from tether.turns import models as turn_models

metadata = Base.metadata

__all__ = [
    "audit_models",
    "knowledge_models",
    "limit_models",
    "memory_models",
    "metadata",
    "persona_models",
    "profile_models",
    "recall_models",
    "retention_models",
    "settings_models",
    "tenancy_models",
    "turn_models",
]
