"""The identity plane: tenants, keys, users, facets, creators, personas, relationships."""
