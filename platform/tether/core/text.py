"""Constrained text and collections: the types every request field and parameter uses.

Each constraint is declared once, as a ``msgspec.Meta`` (what a request body's Struct
field carries), and turned into a Litestar parameter by :func:`path`, :func:`query` or
:func:`header` (Litestar reads only its own parameter kinds there: a bare ``Meta`` on a
parameter is silently ignored). A test walks the OpenAPI document and
fails on any request string without a length bound and one of these patterns, any list
without an item bound and any integer parameter without bounds.

What the types refuse, with a 422 naming the field:
- NUL (U+0000) in any text: Postgres ``text`` and ``jsonb`` cannot hold it, and the
  statement would fail;
- control characters (U+0000-U+001F, U+007F) in identifiers and names: they end up in
  keys, file names, log fields and headers;
- anything longer than its column or its kind's ceiling; lists longer than their bound.

Lone surrogates never reach a typed field: the JSON decoder refuses them (400) and URLs
are percent-decoded with replacement characters. A pattern cannot name them: JSON
Schema regex engines work on code points, where surrogates do not exist, and would
reject the whole document.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar.params import HeaderParameter, KwargDefinition, PathParameter, QueryParameter

# Free text: anything but NUL. Newlines, tabs and every script are welcome.
NO_NUL = "^[^\\x00]*$"
# Identifiers and names: printable. "$(?!\n)": "$" alone also matches before a final
# newline, which would let one trailing "\n" through.
PRINTABLE = "^[^\\x00-\\x1f\\x7f]*$(?!\\n)"
# Tokens this API issues (cursors): base64url.
URL_SAFE = "^[A-Za-z0-9_-]*$(?!\\n)"

# What a client reads instead of the pattern when a value does not match it.
PATTERN_MEANINGS = {
    NO_NUL: "must not contain NUL (U+0000)",
    PRINTABLE: "must not contain control characters (U+0000-U+001F, U+007F)",
    URL_SAFE: "must be a token this API issued (A-Z, a-z, 0-9, '-', '_')",
}

# Ceilings per kind (characters). Fields stored in a sized column use the column's size.
IDENTIFIER_CHARS = 128
DISPLAY_NAME_CHARS = 256
SHORT_TEXT_CHARS = 2_000
LONG_TEXT_CHARS = 20_000
# Chat text (turns, memory content, messages): the hard ceiling; the configured limits
# (TETHER_INGEST__MAX_TEXT_CHARS, TETHER_MEMORY__MAX_CONTENT_CHARS) sit under it.
CONTENT_CHARS = 32_000


def text(max_length: int, *, min_length: int = 0) -> msgspec.Meta:
    """Free text of at most ``max_length`` characters, without NUL."""
    return msgspec.Meta(min_length=min_length, max_length=max_length, pattern=NO_NUL)


def printable(max_length: int, *, min_length: int = 1) -> msgspec.Meta:
    """An identifier or name: at most ``max_length`` characters, no control characters."""
    return msgspec.Meta(min_length=min_length, max_length=max_length, pattern=PRINTABLE)


def items(max_length: int, *, min_length: int = 0) -> msgspec.Meta:
    """A list of at most ``max_length`` items."""
    return msgspec.Meta(min_length=min_length, max_length=max_length)


def _bounds(meta: msgspec.Meta) -> dict[str, Any]:
    names = ("min_length", "max_length", "pattern", "ge", "le")
    return {name: getattr(meta, name) for name in names if getattr(meta, name) is not None}


def query(meta: msgspec.Meta) -> QueryParameter:
    """The same constraint on a query parameter."""
    return QueryParameter(**_bounds(meta))


def path(meta: msgspec.Meta) -> PathParameter:
    """The same constraint on a path parameter."""
    return PathParameter(**_bounds(meta))


def header(meta: msgspec.Meta, name: str) -> HeaderParameter:
    """The same constraint on the header ``name``."""
    return HeaderParameter(name=name, **_bounds(meta))


def in_list(meta: msgspec.Meta) -> KwargDefinition:
    """The constraint of a list's items, as the OpenAPI document shows it: Litestar reads
    a nested ``Meta`` for validation but documents only its own metadata there."""
    return KwargDefinition(**_bounds(meta))


IDENTIFIER = printable(IDENTIFIER_CHARS)
LABEL = printable(IDENTIFIER_CHARS, min_length=0)
DISPLAY_NAME = printable(DISPLAY_NAME_CHARS, min_length=0)
SHORT_TEXT = text(SHORT_TEXT_CHARS)
LONG_TEXT = text(LONG_TEXT_CHARS)
CONTENT = text(CONTENT_CHARS, min_length=1)

# An id from the caller's own systems (user, persona, session, idempotency key…) or a
# name: 1..128 printable characters.
Identifier = Annotated[str, IDENTIFIER]
Name = Identifier
# A label that may be empty (an API key's name).
Label = Annotated[str, LABEL]
DisplayName = Annotated[str, DISPLAY_NAME]
# Reasons, descriptions, sources: up to 2,000 characters of free text.
ShortText = Annotated[str, SHORT_TEXT]
LongText = Annotated[str, LONG_TEXT]
# Chat text, not empty; blank text and the configured length are checked where the
# settings are.
Content = Annotated[str, CONTENT]

# Parameters. Litestar drops constraints nested inside ``X | None``, so an optional
# parameter carries them on the union itself.
IdentifierInPath = Annotated[str, path(IDENTIFIER)]
IdentifierInQuery = Annotated[str | None, query(IDENTIFIER)]
