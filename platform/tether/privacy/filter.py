"""The privacy filter the write path runs on every turn before anything is stored or
logged: built-in detectors plus the tenant's own ``(tag, regex)`` patterns."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import anyio.to_thread

from tether.privacy.patterns import BUILTIN_DETECTORS, TAG_TOKEN, fold, value_span
from tether.privacy.tenant_patterns import (
    MAX_EXTRA_PATTERNS,
    MAX_TOTAL_PROGRAM_SIZE,
    Encoded,
    PatternRefused,
    compile_pattern,
    find,
)

# Masking more than this many characters x patterns (built-ins count as one) moves to a
# worker thread, so a long batch never holds the event loop (decision 0033): measured,
# the worst text costs ~0.6 us per character per pattern, so inline work stays < ~15 ms.
INLINE_WORK = 20_000
_MAX_PASSES = 4  # bounds the work on adversarial text; real text settles in one or two
_TENANT_RANK = 100  # ties: built-ins beat tenant patterns, earlier beat later

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
            extra_patterns: the tenant's ``(tag, regex)`` pairs, compiled with RE2
                (``tether.privacy.tenant_patterns``).

        Raises:
            PatternRefused: a tag is not UPPER_SNAKE, or a pattern is too long or too
                complex, is not RE2 syntax (lookaround, backreferences) or matches the
                empty string.
        """
        if len(extra_patterns) > MAX_EXTRA_PATTERNS:
            raise PatternRefused(
                "*", "too_many", f"set: at most {MAX_EXTRA_PATTERNS} patterns are allowed"
            )
        self._tenant = tuple(
            compile_pattern(tag, pattern, _TENANT_RANK + index)
            for index, (tag, pattern) in enumerate(extra_patterns)
        )
        if sum(p.regex.programsize for p in self._tenant) > MAX_TOTAL_PROGRAM_SIZE:
            raise PatternRefused(
                "*",
                "too_complex",
                f"set compiles to more than {MAX_TOTAL_PROGRAM_SIZE} "
                "instructions together; simplify or drop some patterns",
            )

    @property
    def weight(self) -> int:
        """How many scans of the text one pass costs (the built-ins count as one)."""
        return 1 + len(self._tenant)

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
        for detector in BUILTIN_DETECTORS:
            for match in detector.regex.finditer(scan):
                start, end = value_span(match)
                if start >= end or (detector.check is not None and not detector.check(match)):
                    continue
                key = (match.start() - match.end(), detector.rank, start)
                yield key, start, end, detector.tag
        if not self._tenant:
            return
        encoded = Encoded(scan)
        for pattern in self._tenant:
            for match_start, match_end, start, end in find(pattern, encoded):
                if start < end:
                    yield (match_start - match_end, pattern.rank, start), start, end, pattern.tag


async def mask_texts(privacy: PrivacyFilter, texts: Sequence[str]) -> list[MaskResult]:
    """``mask`` for each text; in a worker thread when the work is large (RE2 releases
    the GIL while it searches, and ``re`` searches are short, so the loop keeps running)."""
    if sum(len(t) for t in texts) * privacy.weight <= INLINE_WORK:
        return [privacy.mask(t) for t in texts]
    return await anyio.to_thread.run_sync(lambda: [privacy.mask(t) for t in texts])


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
