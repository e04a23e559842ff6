"""Errors of the context builder."""

from __future__ import annotations

from tether.core.errors import InvalidInput


class ContextTargetInvalid(InvalidInput):
    code = "context_target_invalid"
    title = "Name the relationship: relationship_id, or user and persona"
