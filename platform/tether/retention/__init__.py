"""Retention: each tenant's raw turns and memories of chosen types removed once they are
older than its settings say, by a daily sweep that resumes where it stopped."""
