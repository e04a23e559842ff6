"""Turn ingestion: dedup, privacy filter, working memory, durable raw turns, sessions."""
