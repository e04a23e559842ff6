"""Every regex of ours, attacked (tests/regex_audit.py): none backtracks super-linearly
on the longest text it can be given, so no input holds the event loop or a worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.regex_audit import Found, our_patterns, slowest
from tether.memories.extraction.clauses import MAX_SENTENCE_CHARS

ROOT = Path(__file__).resolve().parents[2]
TURN_CHARS = 8000  # the longest turn (ingest.max_text_chars); documents are cut in blocks
# Extraction rules read sentences of at most MAX_SENTENCE_CHARS; these read whole turns.
WHOLE_TURN = {
    "tether.memories.extraction.clauses._ZH_SENTENCE",
    "tether.memories.extraction.clauses._EN_SENTENCE",
    "tether.memories.extraction.clauses._CONTRACTION_RES",
    "tether.memories.extraction.normalize._CJK",
    "tether.memories.extraction.normalize._LATIN_WORD",
}
# Patterns only ever given short, bounded input, and why.
BOUNDED = {
    "tether.privacy.patterns._ORDER_CONTEXT": "searched in the 24 characters before a number",
    "tether.memories.extraction.normalize._ZH_TAIL": "run on a phrase's last 24 characters",
}
LIMIT_SECONDS = 0.25  # linear patterns take milliseconds; quadratic ones, seconds


def _length(found: Found) -> int:
    in_rules = found.where.startswith("tether.memories.extraction") or (
        "memories/extraction" in found.where
    )
    if in_rules and found.where not in WHOLE_TURN:
        return MAX_SENTENCE_CHARS
    return TURN_CHARS


PATTERNS = [
    f
    for f in our_patterns(ROOT / "platform") + our_patterns(ROOT / "tenancy")
    if f.where not in BOUNDED
]


def test_the_audit_finds_our_patterns() -> None:
    where = {f.where for f in PATTERNS}
    assert "tether.privacy.filter.BUILTIN_DETECTORS" in where or any(
        w.startswith("tether.privacy.patterns") for w in where
    )
    assert len(PATTERNS) > 100


@pytest.mark.parametrize("found", PATTERNS, ids=lambda f: f"{f.where}:{f.regex.pattern[:30]}")
def test_no_pattern_of_ours_backtracks_super_linearly(found: Found) -> None:
    elapsed, attack = slowest(found.regex, _length(found))
    assert elapsed < LIMIT_SECONDS, f"{found.where} took {elapsed:.2f} s on {attack[:60]!r}…"
