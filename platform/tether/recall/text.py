"""Lexical tokens for BM25, Chinese and English alike.

Tokens are computed once at write time and stored with each memory, so this function is
part of the storage format: any change to its output must bump ``TOKENIZER_VERSION`` and
be followed by a reindex (``tether reindex`` recomputes stored tokens).

Pipeline: NFKC (full-width forms become ASCII), then the text is cut into runs:

- masked tags written by the privacy filter (``[PHONE]``, ``[BANK_ACCOUNT]``) become the
  words of their name (``phone``; ``bank``, ``account``), so "what is my phone number"
  still finds the memory that held one, and the brackets never reach jieba;
- runs of Han characters go through jieba's search mode with the HMM off: dictionary-only
  cuts are context-free, so a word is cut the same way in a memory and in a query (the
  HMM glues unknown neighbours together, e.g. "我养" in one sentence and not the next);
- everything else is split into letter/digit words, lowercased, English contractions and
  possessives reduced, then stemmed by :func:`tether.recall.stemming.stem`.

Stop words (function words, pronouns, question words) and one-letter Latin tokens are
dropped; punctuation and whitespace never become tokens.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from pathlib import Path

import jieba

from tether.recall.stemming import stem
from tether.recall.stopwords import STOP_WORDS

TOKENIZER_VERSION = 1

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_RUNS = re.compile(rf"(?P<han>[{_HAN}]+)|(?P<other>[^{_HAN}]+)")
_LATIN = re.compile(r"\[(?P<tag>[A-Z][A-Z0-9_]{0,31})\]|(?P<word>[^\W_]+(?:'[^\W_]+)*)")
_CLITICS = frozenset({"s", "d", "ll", "m", "re", "ve", "t"})
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'"})

_ready = threading.Lock()
_initialized = False


def warm_up(cache_dir: Path | None = None) -> None:
    """Load jieba's dictionary now (about 0.6 s and 60 MiB), e.g. before forking workers.

    Args:
        cache_dir: where jieba keeps its parsed-dictionary cache; the system temp dir
            when omitted.
    """
    global _initialized  # one process-wide dictionary, loaded once
    with _ready:
        if _initialized:
            return
        jieba.setLogLevel(logging.WARNING)
        if cache_dir is not None:
            cache_dir.mkdir(parents=True, exist_ok=True)
            jieba.dt.tmp_dir = str(cache_dir)
        jieba.initialize()
        _initialized = True


def tokenize(text: str) -> list[str]:
    """The BM25 tokens of ``text``, in order, duplicates kept (they are term counts)."""
    if not _initialized:
        warm_up()
    normalized = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)
    tokens: list[str] = []
    for run in _RUNS.finditer(normalized):
        han = run.group("han")
        if han is not None:
            tokens += (w for w in jieba.lcut_for_search(han, HMM=False) if w not in STOP_WORDS)
        else:
            tokens += _latin_tokens(run.group("other"))
    return tokens


def _latin_tokens(text: str) -> list[str]:
    tokens: list[str] = []
    for match in _LATIN.finditer(text):
        tag = match.group("tag")
        if tag is not None:
            tokens += (stem(part) for part in tag.lower().split("_") if len(part) > 1)
            continue
        word = _word(match.group("word").lower())
        if word:
            tokens.append(word)
    return tokens


def _word(raw: str) -> str | None:
    """Stop words out; clitics off ("caroline's" -> "caroline"); then the stem."""
    if raw in STOP_WORDS:
        return None
    if "'" in raw:
        head, _, tail = raw.rpartition("'")
        raw = head.replace("'", "") if tail in _CLITICS else raw.replace("'", "")
        if raw in STOP_WORDS:
            return None
    if len(raw) < 2 and not raw.isdigit():
        return None
    return stem(raw)
