"""A tenant's own privacy patterns, compiled with RE2 and searched in bounded windows.

RE2 matches in time linear in the text (no backtracking), so no pattern a tenant
registers can stall the process that runs it. Python's ``re`` cannot promise that and
has no timeout; what RE2 refuses (lookaround, backreferences, atomic groups) is refused
at registration with a reason. Two more bounds keep the cost per text linear with a
small constant whatever the pattern and the text:

- each search looks at most ``WINDOW_BYTES`` ahead, so a pattern such as ``a.*b|a``
  cannot rescan the rest of the text for every match (a match may be at most
  ``MAX_MATCH_BYTES`` long; a longer one is masked in pieces or missed);
- a pattern that matches more than ``64 + len(text) // 16`` times in one text masks the
  rest of that text whole, instead of building a detection every few characters.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import re2

MAX_PATTERN_LENGTH = 500
MAX_EXTRA_PATTERNS = 50
# RE2's size of a compiled pattern bounds its cost per byte where the DFA gives way to
# the NFA (measured: ~12 ns per instruction per byte); 500 literal characters ~ 510.
MAX_PROGRAM_SIZE = 2500
MAX_TOTAL_PROGRAM_SIZE = 10_000  # all of a tenant's patterns together
WINDOW_BYTES = 1024
MAX_MATCH_BYTES = 512
_MAX_MEM = 1 << 20  # per pattern: RE2 falls back to its (still linear) NFA beyond it
_TAG_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,31}")

# RE2's complaint -> (stable reason, what to tell the tenant) for Python syntax it does
# not take because it needs backtracking.
_UNSUPPORTED = (
    (re.compile(r"operator: \(\?<?[=!]"), "lookaround", "lookahead or lookbehind"),
    (re.compile(r"escape sequence: \\[1-9g]|operator: \(\?P="), "backreference", "backreferences"),
    (
        re.compile(r"operator: \(\?>|repetition operator: [*+?}]\+"),
        "atomic_group",
        "atomic groups or possessive quantifiers",
    ),
)
_HINTS = {
    r"\Z": r" (write \z for the end of the text)",
    "repetition size": " (counts, multiplied through nested repeats, may be at most 1000)",
}


class PatternRefused(ValueError):
    """A tenant pattern that will not be used; ``reason`` is a stable code."""

    def __init__(self, tag: str, reason: str, message: str) -> None:
        super().__init__(f"privacy pattern {tag!r} {message}")
        self.tag = tag
        self.reason = reason


@dataclass(frozen=True, slots=True)
class TenantPattern:
    """A vetted pattern; ``group`` is its ``value`` group's number, 0 for the match."""

    tag: str
    regex: Any  # re2._Regexp: the package ships no type information
    group: int
    rank: int


def compile_pattern(tag: str, pattern: str, rank: int) -> TenantPattern:
    """Vet and compile one tenant pattern; PatternRefused says why it cannot be used."""
    if not _TAG_NAME.fullmatch(tag):
        raise PatternRefused(tag, "invalid_tag", "tag must be UPPER_SNAKE_CASE, 1-32 chars")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternRefused(tag, "too_long", f"is longer than {MAX_PATTERN_LENGTH} characters")
    options = re2.Options()
    options.log_errors = False  # RE2 would print the pattern to stderr
    options.max_mem = _MAX_MEM
    try:
        regex = re2.compile(pattern, options)
    except re2.error as exc:
        raise _refusal(tag, pattern, _text(exc)) from exc
    if regex.programsize > MAX_PROGRAM_SIZE:
        raise PatternRefused(
            tag, "too_complex", f"compiles to more than {MAX_PROGRAM_SIZE} instructions"
        )
    if regex.match(b"") is not None:
        raise PatternRefused(tag, "matches_empty", "matches the empty string")
    return TenantPattern(tag, regex, regex.groupindex.get("value", 0), rank)


def _refusal(tag: str, pattern: str, complaint: str) -> PatternRefused:
    if "pattern too large" in complaint:
        return PatternRefused(tag, "too_complex", "compiles too large (RE2's memory limit)")
    for syntax, reason, what in _UNSUPPORTED:
        if syntax.search(complaint) or (reason == "backreference" and "(?P=" in pattern):
            return PatternRefused(
                tag, reason, f"uses {what}, which the linear-time engine (RE2) does not support"
            )
    hint = next((h for token, h in _HINTS.items() if token in complaint), "")
    return PatternRefused(tag, "invalid_syntax", f"is not a valid pattern: {complaint}{hint}")


def _text(exc: Exception) -> str:
    message = exc.args[0] if exc.args else exc
    return message.decode(errors="replace") if isinstance(message, bytes) else str(message)


class Encoded:
    """A text as UTF-8 for RE2, with byte offsets mapped back to characters."""

    __slots__ = ("_starts", "data")

    def __init__(self, text: str) -> None:
        self.data = text.encode()
        # Offsets of each character's first byte; None when bytes are characters.
        self._starts: list[int] | None = (
            None
            if len(self.data) == len(text)
            else [i for i, byte in enumerate(self.data) if byte & 0xC0 != 0x80]
        )

    def char(self, offset: int) -> int:
        """The character index of a byte offset on a character boundary."""
        return offset if self._starts is None else bisect.bisect_left(self._starts, offset)

    def boundary(self, offset: int) -> int:
        """The first character boundary at or after ``offset`` (at most the end)."""
        data = self.data
        while offset < len(data) and data[offset] & 0xC0 == 0x80:
            offset += 1
        return min(offset, len(data))


Span = tuple[int, int, int, int]  # match start, end; masked start, end (characters)


def find(pattern: TenantPattern, text: Encoded) -> Iterator[Span]:
    """Every match of ``pattern``, left to right, in bounded windows (module docstring)."""
    data, regex, group = text.data, pattern.regex, pattern.group
    size = len(data)
    budget = 64 + size // 16
    position = 0
    while position < size:
        end = text.boundary(position + WINDOW_BYTES)
        match = regex.search(data, position, end)
        if match is None:
            if end >= size:
                return
            # Overlap the next window so a match across this window's end is whole.
            position = text.boundary(max(position + 1, end - MAX_MATCH_BYTES))
            continue
        start, stop = match.span()
        if stop == start:  # an empty match (e.g. of \b): step over it
            position = text.boundary(stop + 1)
            continue
        budget -= 1
        if budget < 0:
            rest = text.char(start)
            yield rest, text.char(size), rest, text.char(size)
            return
        value_start, value_stop = match.span(group)
        yield (
            text.char(start),
            text.char(stop),
            text.char(value_start),
            text.char(value_stop),
        )
        position = stop
