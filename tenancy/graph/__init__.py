"""Users, facets, creators and personas: the nodes relationships connect."""
