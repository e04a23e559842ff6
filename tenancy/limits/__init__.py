"""Abuse limits: per-key and per-tenant request rates, and per-tenant quotas."""
