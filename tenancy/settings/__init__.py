"""A tenant's own settings: one versioned JSON document of named sections."""
