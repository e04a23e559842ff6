"""Token estimates for context budgets, without downloading any model's tokenizer.

Counted per piece of text, calibrated on what BPE tokenizers of current chat models
(cl100k / o200k class) do, rounded up where they vary:

- a CJK character (Han, kana, Hangul syllable): 1 token (those tokenizers spend 0.7-1.5
  per Han character; Chinese-first tokenizers such as Qwen's are at the low end);
- a run of letters: 1 token per started 6 characters (common English words are one
  token, long or rare ones split into pieces);
- a run of digits: 1 token per started 3 digits (numbers are split in threes);
- a run of newlines: 1 token; other whitespace: free (it merges into the next token);
- anything else (punctuation, symbols, emoji): 1 token per character;
- a privacy mask such as ``[PHONE]``: its brackets plus its letters, and never cut.

English prose comes out at about 1.2-1.3 tokens per word, which is the usual ratio.
An estimate, not a count: keep headroom (about 10 %) under a model's hard limit.
"""

from __future__ import annotations

import functools
import re

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f"
_PIECES = re.compile(
    rf"(?P<tag>\[[A-Z][A-Z0-9_]{{0,31}}\])|(?P<cjk>[{_CJK}])|(?P<letters>[^\W\d_{_CJK}]+)|(?P<digits>\d+)"
    r"|(?P<newlines>\n+)|(?P<space>\s+)|(?P<other>.)",
    re.DOTALL,
)
LETTERS_PER_TOKEN = 6
DIGITS_PER_TOKEN = 3


# The same texts come back on every message of a conversation (the rules block, the
# persona's profile, the relationship's memories): counting them was ~0.3 ms of each
# /v1/context request. Bounded: the largest texts counted (knowledge passages) are a few KB.
@functools.lru_cache(maxsize=4096)
def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text`` (see the module docstring for the rules)."""
    return sum(_cost(match) for match in _PIECES.finditer(text))


def truncate_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` estimated at most ``limit`` tokens.

    Cuts between pieces, never inside a word or number, and drops trailing whitespace.
    """
    used = 0
    end = 0
    for match in _PIECES.finditer(text):
        used += _cost(match)
        if used > limit:
            return text[:end].rstrip()
        end = match.end()
    return text


def _cost(match: re.Match[str]) -> int:
    kind = match.lastgroup
    length = match.end() - match.start()
    if kind == "tag":
        return 2 + -(-(length - 2) // LETTERS_PER_TOKEN)
    if kind == "letters":
        return -(-length // LETTERS_PER_TOKEN)
    if kind == "digits":
        return -(-length // DIGITS_PER_TOKEN)
    return 0 if kind == "space" else 1
