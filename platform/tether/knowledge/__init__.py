"""Knowledge bases: documents a tenant or a persona answers from, chunked, indexed by a
worker, and ranked by the same hybrid machinery as memory recall."""
