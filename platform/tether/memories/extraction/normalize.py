"""Language detection, object clean-up and the comparison key of an object.

The key is what makes 辣 / 吃辣 / 辣的 / 辣的东西 or "spicy food" / "spicy" the same
thing: light verbs, particles and generic head nouns carry no identity.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache

import jieba
import jieba.posseg

jieba.setLogLevel(logging.WARNING)  # jieba logs its dictionary loading at INFO

_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_EDGE_PUNCT = "\t\n\r ，。！？!?,.、~～…:：;；\"“”'‘’()（）[]【】-—"
# No nested repeat (``哈+`` inside the outer ``+`` was exponential), and run on the last
# _TAIL_WINDOW characters only: "的那种" can also be read as "的" + "那种", and such
# readings multiply along a long run of fillers.
_ZH_TAIL = re.compile(
    r"(?:的那种|那种|这种|之类的|什么的|就行|就好|就可以|而已|一点|一些|得很|极了|死了"
    r"|[哈呵嘿的了啊呀呢吧哦噢嘛啦哟喔咯呗])+$"
)
_TAIL_WINDOW = 24
_ZH_HEAD = re.compile(r"^(?:一个|一只|一条|一家|一趟|一次|一下|一份|一杯|我的|我)")
_EN_CUT = re.compile(
    r"\s*(?:[,;(]|\s-\s|\b(?:because|since|but|though|although|when|while|whenever|"
    r"unless|so that|which|who)\b).*$",
    re.IGNORECASE,
)
_EN_TAIL = re.compile(
    r"(?:\s+(?:anymore|any more|a lot|a bunch|so much|very much|that much|too|as well|either"
    r"|at all|lol|haha+|lmao|tbh|honestly|for the record|really|right now|now|these days"
    r"|lately|recently|again|ever again|though|anyway|or something|and stuff|and all))+$",
    re.IGNORECASE,
)
_EN_HEAD = re.compile(r"^(?:(?:the|a|an|some|my|our|all|any)\s+)+", re.IGNORECASE)
_ZH_LIGHT_VERB = re.compile(r"^(?:吃|喝|看|听|玩|打|去|做|学|逛|弹|练|跳|养|抽|追)(?=.)")
_ZH_STOP = frozenset(
    {"的", "了", "东西", "食物", "一些", "一点", "之类", "那种", "这种", "类", "你", "我"}
)
_EN_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "your",
        "our",
        "their",
        "his",
        "her",
        "some",
        "any",
        "of",
        "to",
        "and",
        "or",
        "food",
        "foods",
        "stuff",
        "thing",
        "things",
        "you",
        "i",
        "me",
        "dish",
        "dishes",
        "kind",
        "kinds",
        "type",
        "types",
        "sort",
        "really",
        "very",
        "lot",
        "much",
        "all",
    ]
)
_EN_LIGHT_VERB = frozenset(
    ["eating", "drinking", "playing", "watching", "going", "doing", "having"]
)
_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7}
_CN_DIGITS |= {"八": 8, "九": 9}


def is_zh(text: str) -> bool:
    """Chinese when Chinese characters outnumber Latin words (brand names stay Latin)."""
    cjk = len(_CJK.findall(text))
    return cjk > 0 and cjk >= len(_LATIN_WORD.findall(text))


def clean_object(text: str, zh: bool) -> str:
    """The object as it should read in a memory: trimmed, in its original case."""
    text = text.strip(_EDGE_PUNCT)
    if zh:
        for _ in range(3):  # particles stack: 的啊 / 了哈哈
            text = _ZH_HEAD.sub("", _zh_untail(text)).strip(_EDGE_PUNCT)
        return text
    text = _EN_CUT.sub("", text)
    text = _EN_HEAD.sub("", _EN_TAIL.sub("", text)).strip(_EDGE_PUNCT)
    return _EN_TAIL.sub("", text).strip(_EDGE_PUNCT)


def _zh_untail(text: str) -> str:
    head, tail = text[:-_TAIL_WINDOW], text[-_TAIL_WINDOW:]
    return head + _ZH_TAIL.sub("", tail)


def normalize_object(text: str, zh: bool) -> str:
    """The stored ``object``: cleaned, English lowercased, whitespace collapsed."""
    cleaned = clean_object(text, zh)
    return cleaned if zh else " ".join(cleaned.lower().split())


@lru_cache(maxsize=4096)
def object_key(text: str) -> frozenset[str]:
    """The identity of an object for duplicate and refinement checks: English content
    words (order-free), or the one Chinese core string (order matters: 阿珍 ≠ 珍阿)."""
    if is_zh(text):
        return frozenset({zh_core(text)} - {""})
    words = [w for w in re.findall(r"[a-z0-9][a-z0-9'-]*", text.lower()) if w not in _EN_STOP]
    if len(words) > 1:
        words = [w for w in words if w not in _EN_LIGHT_VERB] or words
    return frozenset(_singular(w) for w in words)


def zh_core(text: str) -> str:
    """辣的东西 / 吃辣 / 辣的 → 辣: jieba words without light verbs and filler."""
    core = _ZH_LIGHT_VERB.sub("", clean_object(text, zh=True))
    return "".join(w for w in jieba.lcut(core, HMM=False) if w.strip() and w not in _ZH_STOP)


def _singular(word: str) -> str:
    if len(word) <= 3 or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


@lru_cache(maxsize=4096)
def first_word_tag(text: str) -> tuple[str, str]:
    """The first jieba word of ``text`` and its part-of-speech tag. Tagging a short
    prefix is enough for the first word and keeps long turns cheap."""
    for pair in jieba.posseg.lcut(text[:8]):
        return str(pair.word), str(pair.flag)
    return "", ""


def is_place(text: str) -> bool:
    """jieba tags place names ``ns``; used where a bare noun must be a place."""
    pairs = jieba.posseg.lcut(text)
    return bool(pairs) and all(str(p.flag) == "ns" for p in pairs)


def parse_number(text: str) -> int | None:
    """Arabic or Chinese numerals up to 999 (二十六, 两, 一百零二)."""
    if text.isdigit():
        return int(text)
    total, current = 0, 0
    for char in text:
        if char in _CN_DIGITS:
            current = _CN_DIGITS[char]
        elif char in "十百":
            total += (current or 1) * (10 if char == "十" else 100)
            current = 0
        else:
            return None
    return total + current if text else None


def term_matches(term: str, subject: str, obj: str, content: str) -> bool:
    """Does a forget term name this memory: its object, its subject's relation
    (``ex`` for ``user.ex``) or a word of its content?"""
    term = term.strip().lower()
    if not term:
        return False
    if term == subject.removeprefix("user.").lower():
        return True
    if is_zh(term):
        return term in content or term in obj
    key, memory_key = object_key(term), object_key(obj)
    if key and key <= memory_key:
        return True
    return re.search(rf"\b{re.escape(term)}\b", content.lower()) is not None
