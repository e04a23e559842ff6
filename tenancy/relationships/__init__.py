"""Relationships (user facet × creator persona): listing, privacy, ownership transfer."""
