"""Creator persona profiles: who "I" am, shared by every relationship of a persona."""
