"""Errors of the recap."""

from __future__ import annotations

from tether.core.errors import InvalidInput


class RecapTimeInvalid(InvalidInput):
    code = "recap_time_invalid"
    title = "The recap's time is invalid"
