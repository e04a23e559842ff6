"""Data-subject rights: forget memories, export everything about a user, erase a user."""
