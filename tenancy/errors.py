"""Errors of the identity plane."""

from __future__ import annotations

from tether.core.errors import Conflict, Forbidden, InvalidInput, NotFound, ServiceUnavailable


class TenantNameTaken(Conflict):
    code = "tenant_name_taken"
    title = "A tenant with that name exists"


class TenantNotFound(NotFound):
    code = "tenant_not_found"
    title = "Tenant not found"


class TenantDisabled(Forbidden):
    """The operator disabled the key's tenant (``tether tenant disable``)."""

    code = "tenant_disabled"
    title = "This tenant is disabled"


class ApiKeyNotFound(NotFound):
    code = "api_key_not_found"
    title = "API key not found"


class UserNotFound(NotFound):
    code = "user_not_found"
    title = "User not found"


class CreatorNotFound(NotFound):
    code = "creator_not_found"
    title = "Creator not found"


class PersonaNotFound(NotFound):
    code = "persona_not_found"
    title = "Creator persona not found"


class RelationshipNotFound(NotFound):
    code = "relationship_not_found"
    title = "Relationship not found"


class ExternalIdTaken(Conflict):
    code = "external_id_taken"
    title = "That external id is already used in this tenant"


class PolicyRuleRefused(InvalidInput):
    """A tenant policy rule names something a tenant may not grant or deny."""

    code = "policy_rule_refused"
    title = "A tenant policy rule was refused"


class PolicyUnavailable(ServiceUnavailable):
    """The tenant's own rules could not be read and none are known: deciding without
    them could ignore one of its denies, so the request is refused."""

    code = "policy_unavailable"
    title = "The tenant's policy could not be loaded"


class ApiKeySubjectRefused(InvalidInput):
    """A key's subject does not fit its role, or names no existing creator."""

    code = "api_key_subject_refused"
    title = "The key's subject was refused"


class ApiKeyAlreadyRotated(Conflict):
    code = "api_key_already_rotated"
    title = "This key was already rotated; rotate its replacement"
