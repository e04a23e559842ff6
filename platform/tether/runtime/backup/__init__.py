"""``tether backup`` / ``tether restore``: a consistent dump of the database with a
manifest of what it holds, and a restore that proves it got the same back
(docs/backup.md, decision 0064)."""
