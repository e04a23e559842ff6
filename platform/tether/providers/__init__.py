"""Adapters for what is outside our control: embedding models and chat LLMs."""
