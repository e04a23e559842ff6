"""The privacy filter the write path runs on every turn before anything is stored or
logged: built-in detectors plus the tenant's own ``(tag, regex)`` patterns."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tether.privacy.patterns import BUILTIN_DETECTORS, TAG_TOKEN, Detector, fold, value_span

MAX_PATTERN_LENGTH = 500
MAX_EXTRA_PATTERNS = 50
_MAX_PASSES = 4  # bounds the work on adversarial text; real text settles in one or two
_TENANT_RANK = 100  # ties: built-ins beat tenant patterns, earlier beat later
_TAG_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,31}")

# Flags for the structural check of tenant patterns.
_VARIABLE = 1  # contains a quantifier whose count can vary (+, *, {2,5})
_ALTERNATION = 2  # contains a |
_BRACE = re.compile(r"\{(\d*)(,?)(\d*)\}")

_Candidate = tuple[tuple[int, int, int], int, int, str]


@dataclass(frozen=True, slots=True)
class MaskResult:
    """The masked text and the tags masked in it, in text order. Never raw values."""

    text: str
    found: tuple[str, ...]


class PrivacyFilter:
    """Masks personal data and secrets as ``[TAG]``; immutable and thread-safe.

    Where detections overlap, the longest match wins (a lead-in such as "my password is"
    counts towards its length), then the more specific detector. Masking is
    deterministic and idempotent: tags already in the text are never matched again, and
    ``mask`` rescans its own output until nothing new turns up.
    """

    def __init__(self, extra_patterns: Sequence[tuple[str, str]] = ()) -> None:
        """Build the filter.

        Args:
            extra_patterns: the tenant's ``(tag, regex)`` pairs, compiled with ``re``.

        Raises:
            ValueError: a tag is not UPPER_SNAKE, or a pattern is too long, does not
                compile, matches the empty string or risks catastrophic backtracking.
        """
        if len(extra_patterns) > MAX_EXTRA_PATTERNS:
            raise ValueError(f"at most {MAX_EXTRA_PATTERNS} extra privacy patterns are allowed")
        tenant = tuple(
            _tenant_detector(tag, pattern, _TENANT_RANK + index)
            for index, (tag, pattern) in enumerate(extra_patterns)
        )
        self._detectors = BUILTIN_DETECTORS + tenant

    def mask(self, text: str) -> MaskResult:
        """Return ``text`` with every detection replaced by its ``[TAG]``."""
        written: list[tuple[int, str]] = []  # (offset in the current text, tag)
        # A number glued to a key or another number is only free to match once its
        # neighbour is a tag, so scan again until nothing new is found; that is what
        # makes a second mask() a no-op.
        for _ in range(_MAX_PASSES):
            chosen = self._detect(text) if text else []
            if not chosen:
                break
            text, written = _apply(text, chosen, written)
        return MaskResult(text, tuple(tag for _, tag in written))

    def _detect(self, text: str) -> list[tuple[int, int, str]]:
        scan = fold(text)
        taken = bytearray(len(scan))
        for token in TAG_TOKEN.finditer(scan):
            _claim(taken, *token.span())
        chosen: list[tuple[int, int, str]] = []
        for _key, start, end, tag in sorted(self._candidates(scan)):
            if taken.find(1, start, end) == -1:
                _claim(taken, start, end)
                chosen.append((start, end, tag))
        chosen.sort()
        return chosen

    def _candidates(self, scan: str) -> Iterator[_Candidate]:
        for detector in self._detectors:
            for match in detector.regex.finditer(scan):
                start, end = value_span(match)
                if start >= end or (detector.check is not None and not detector.check(match)):
                    continue
                key = (match.start() - match.end(), detector.rank, start)
                yield key, start, end, detector.tag


@functools.cache
def default_filter() -> PrivacyFilter:
    """The filter with only the built-in detectors, built once per process."""
    return PrivacyFilter()


def _claim(taken: bytearray, start: int, end: int) -> None:
    taken[start:end] = b"\x01" * (end - start)


def _apply(
    text: str, chosen: list[tuple[int, int, str]], written: list[tuple[int, str]]
) -> tuple[str, list[tuple[int, str]]]:
    """Replace the chosen spans; move the tags of earlier passes to their new offsets."""
    parts: list[str] = []
    tags: list[tuple[int, str]] = []
    earlier = iter(written)
    pending = next(earlier, None)
    position = shift = 0
    for start, end, tag in chosen:
        while pending is not None and pending[0] < start:
            tags.append((pending[0] + shift, pending[1]))
            pending = next(earlier, None)
        parts += (text[position:start], f"[{tag}]")
        tags.append((start + shift, tag))
        shift += len(tag) + 2 - (end - start)
        position = end
    while pending is not None:
        tags.append((pending[0] + shift, pending[1]))
        pending = next(earlier, None)
    parts.append(text[position:])
    return "".join(parts), tags


# --- tenant patterns ----------------------------------------------------------------------


def _tenant_detector(tag: str, pattern: str, rank: int) -> Detector:
    if not _TAG_NAME.fullmatch(tag):
        raise ValueError(f"privacy pattern tag {tag!r} must be UPPER_SNAKE_CASE, 1-32 chars")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(f"privacy pattern {tag!r} is longer than {MAX_PATTERN_LENGTH} characters")
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise ValueError(f"privacy pattern {tag!r} is not a valid regex: {error}") from error
    problem = _backtracking_risk(pattern)
    if problem is not None:
        raise ValueError(f"privacy pattern {tag!r} risks catastrophic backtracking: {problem}")
    if compiled.match("") is not None:
        raise ValueError(f"privacy pattern {tag!r} matches the empty string")
    return Detector(tag, compiled, rank)


def _backtracking_risk(pattern: str) -> str | None:
    """Find a repeated group whose body can match one string in several ways: a
    variable quantifier or an alternation inside a group that is itself repeated.

    Python's ``re`` has no timeout, so this is what stands between a tenant pattern and a
    stalled write path. It is structural and conservative, not a proof.
    """
    stack = [0]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            index = _skip_class(pattern, index)
            continue
        if char == "(":
            stack.append(0)
        elif char == ")" and len(stack) > 1:
            body = stack.pop()
            if body and _quantifier(pattern, index + 1)[0]:
                return "nested quantifier" if body & _VARIABLE else "alternation in a repeat"
            stack[-1] |= body
        elif char == "|":
            stack[-1] |= _ALTERNATION
        elif _quantifier(pattern, index)[1]:
            stack[-1] |= _VARIABLE
        index += 1
    return None


def _quantifier(pattern: str, index: int) -> tuple[bool, bool]:
    """(can repeat more than once, count can vary) for a quantifier at ``index``."""
    char = pattern[index : index + 1]
    if char in ("*", "+"):
        return True, True
    brace = _BRACE.match(pattern, index)
    if brace is None or brace.group() == "{}":
        return False, False
    low, comma, high = brace.groups()
    if not comma:
        return int(low) > 1, False
    return not high or int(high) > 1, high != low


def _skip_class(pattern: str, index: int) -> int:
    """Index just past the character class opening at ``index``."""
    index += 1
    if pattern.startswith("^", index):
        index += 1
    if pattern.startswith("]", index):
        index += 1  # a leading ] is a literal
    while index < len(pattern) and pattern[index] != "]":
        index += 2 if pattern[index] == "\\" else 1
    return index + 1
