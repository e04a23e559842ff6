"""HTTP plumbing shared by every domain: problems, request ids, health, auth wiring."""
