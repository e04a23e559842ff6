"""Tether: relationship-scoped long-term memory for AI chat."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tether")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
