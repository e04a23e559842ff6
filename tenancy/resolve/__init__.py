"""resolve(user, facet, persona) → relationship: the gateway's per-message call."""
