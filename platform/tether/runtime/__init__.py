"""Process-level runtime: the embedded services, start-up checks and supervision."""
