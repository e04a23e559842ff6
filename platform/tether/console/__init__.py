"""The web console under /console: server-rendered pages over the API's own services."""
