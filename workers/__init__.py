"""Celery workers: ingest, consolidation, indexing, sweeps."""
