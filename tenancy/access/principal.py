"""The authenticated caller: defined in ``tenancy.principal`` (below the audit log, which
records it), named here too for the code that knows it as access's."""

from __future__ import annotations

from tenancy.principal import Principal

__all__ = ["Principal"]
