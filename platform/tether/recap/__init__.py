"""Recaps for the start of a session: what the persona should bring up from last time."""
