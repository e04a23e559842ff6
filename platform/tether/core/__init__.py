"""The shared kernel: settings, database, Redis, errors, logging, telemetry."""
