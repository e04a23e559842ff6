"""Liveness and readiness: is each dependency of this process usable, and how fast."""
