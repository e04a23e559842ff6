"""A light English suffix stripper for BM25 (plural, past and progressive forms).

It conflates the forms a chat uses for the same event ("camping", "camped", "camps" ->
"camp"; "make", "makes", "making" -> "mak") and nothing more ambitious: no derivational
suffixes ("-ly", "-ness", "-er"), no irregular forms. Stems are index keys, not words.
Only ASCII letters of four or more characters are touched, so digits, names in other
scripts and pinyin pass through. Part of the stored token format (see ``text.py``).
"""

from __future__ import annotations

_VOWELS = frozenset("aeiouy")
_KEEP_DOUBLE = frozenset("lsz")
_SINGULAR_S = ("ss", "us", "is")


def stem(word: str) -> str:
    """The stem of a lowercase word; the word itself when no rule applies."""
    if len(word) < 4 or not (word.isascii() and word.isalpha()):
        return word
    base = _without_tense(_singular(word))
    if len(base) > 3 and base.endswith("e") and not base.endswith("ee"):
        base = base[:-1]
    return base


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(_SINGULAR_S):
        return word[:-1]
    return word


def _without_tense(word: str) -> str:
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("eed"):
        return word[:-1] if len(word) > 4 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            return _undouble(base) if _is_stem(base) else word
    return word


def _is_stem(base: str) -> bool:
    """Long enough and with a vowel: "bed" and "thing" keep their endings."""
    return len(base) >= 3 and any(char in _VOWELS for char in base)


def _undouble(base: str) -> str:
    """ "runn" -> "run", "stopp" -> "stop"; "fall", "miss" and "buzz" keep theirs."""
    last = base[-1]
    if base[-2] == last and last not in _VOWELS and last not in _KEEP_DOUBLE:
        return base[:-1]
    return base
