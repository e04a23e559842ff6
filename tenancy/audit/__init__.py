"""The append-only, hash-chained audit log: who did (or was refused) what, on what."""
