"""Errors of tenant settings."""

from __future__ import annotations

from tether.core.errors import PreconditionFailed, PreconditionRequired


class SettingsChanged(PreconditionFailed):
    code = "settings_changed"
    title = "The settings changed since you read them; read them again and reapply your edit"


class SettingsIfMatchRequired(PreconditionRequired):
    code = "if_match_required"
    title = "Send If-Match with the ETag you read, so edits never overwrite each other"
