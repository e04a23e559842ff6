"""Errors of persona profiles."""

from __future__ import annotations

from tether.core.errors import NotFound, PreconditionFailed, PreconditionRequired


class ProfileChanged(PreconditionFailed):
    code = "profile_changed"
    title = "The profile changed since you read it; read it again and reapply your edit"


class ProfileIfMatchRequired(PreconditionRequired):
    code = "if_match_required"
    title = "Send If-Match with the ETag you read, so edits never overwrite each other"


class ProfileVersionNotFound(NotFound):
    code = "profile_version_not_found"
    title = "The persona profile has no such version"
