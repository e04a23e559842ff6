"""Which knowledge bases a key reaches: the owner chain of ``tenancy.access.reach``
extended to bases. A base bound to a persona lies under that persona; a base bound to
none is shared by the tenant and reached by every key of it."""

from __future__ import annotations

from sqlalchemy import ColumnElement

from tenancy.access.reach import Reach
from tether.knowledge.models import KnowledgeBase


def reachable_bases(reach: Reach) -> ColumnElement[bool] | None:
    """The predicate on ``KnowledgeBase`` for this key (None: every base of the tenant)."""
    if reach.tenant_wide:
        return None
    bound = KnowledgeBase.creator_persona_id
    return bound.is_(None) | bound.in_(reach.persona_ids())
