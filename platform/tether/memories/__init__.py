"""Relationship memories: the record, extraction, consolidation and lifecycle."""
