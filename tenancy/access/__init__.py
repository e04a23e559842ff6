"""Tenants, API keys, and who the caller is."""
