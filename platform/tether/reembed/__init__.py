"""Per-tenant re-embed runs after a change of embedding model (decision 0079)."""
