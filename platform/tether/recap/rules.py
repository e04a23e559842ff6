"""The rules a recap applies to text: has a plan been called off, was a topic left open,
which way does a feeling point. Chinese and English; matched words are jieba tokens."""

from __future__ import annotations

import functools
import re

from tether.recall.text import tokenize

_CANCELLED = re.compile(
    r"取消|不去了|不考了|不办了|不搞了|不做了|不弄了|去不了|去不成|泡汤|黄了|算了|改期|推迟|延期|作罢"
    r"|\bcancel+(?:ed|led|s)?\b|\bcalled off\b|\bcall(?:ing)? (?:it )?off\b|\bpostponed?\b"
    r"|\bnot going\b|\bwon'?t be going\b|\bfell through\b|\bno longer\b|\bscrapped\b"
    r"|\bnot happening\b|\bskip(?:ped|ping)? it\b",
    re.IGNORECASE,
)
_DEFERRED = re.compile(
    r"下次再(?:聊|说|讲|告诉)|回头再(?:聊|说|讲)|改天再(?:聊|说)|以后再(?:聊|说)|等.{0,6}再告诉你"
    r"|\b(?:talk|tell you|chat)\b[^.?!。？！]{0,40}\b(?:later|next time|another time)\b"
    r"|\bremind me\b|\bget back to (?:you|it)\b|\bto be continued\b",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"[?？]\s*$|[吗呢吧]\s*[。.!！]?\s*$|怎么办|\bwhat should i\b", re.IGNORECASE
)
_NEGATIVE = frozenset(
    {
        "焦虑", "难过", "伤心", "压力大", "累", "烦", "烦躁", "生气", "失落", "孤独", "害怕",
        "紧张", "沮丧", "郁闷", "崩溃", "担心", "委屈", "不开心", "anxious", "sad", "stressed",
        "tired", "angry", "lonely", "worried", "nervous", "upset", "depressed", "down",
        "scared", "frustrated", "exhausted", "overwhelmed", "unhappy", "miserable",
    }
)  # fmt: skip
_POSITIVE = frozenset(
    {
        "开心", "高兴", "快乐", "兴奋", "放松", "满足", "轻松", "幸福", "激动", "踏实", "好多了",
        "happy", "excited", "relaxed", "glad", "great", "calm", "proud", "better", "good",
        "hopeful", "grateful", "content", "cheerful", "relieved",
    }
)  # fmt: skip


@functools.cache
def _marker_tokens() -> frozenset[str]:
    return frozenset(tokenize("取消 不去了 不考了 泡汤 算了 改期 推迟 延期 cancelled postponed"))


def _terms(text: str) -> set[str]:
    markers = _marker_tokens()
    return {t for t in tokenize(text) if t not in markers and len(t) > 1}


def cancels(turn_text: str, plan_object: str, plan_content: str) -> bool:
    """Does this later statement call the plan off? A cancel word and a shared term."""
    if _CANCELLED.search(turn_text) is None:
        return False
    wanted = _terms(plan_object) or _terms(plan_content)
    return bool(wanted & _terms(turn_text))


def deferred(text: str) -> bool:
    return _DEFERRED.search(text) is not None


def is_question(text: str) -> bool:
    return _QUESTION.search(text.strip()) is not None


def valence(feeling: str) -> int:
    """+1, -1 or 0 for a feeling as extraction normalized it (开心, anxious…)."""
    word = feeling.strip().lower()
    if word in _NEGATIVE or any(w in word for w in _NEGATIVE if len(w) > 1 and not w.isascii()):
        return -1
    if word in _POSITIVE or any(w in word for w in _POSITIVE if len(w) > 1 and not w.isascii()):
        return 1
    return 0


def trajectory(valences: list[int]) -> str | None:
    """improving | worsening | steady | mixed, from the oldest to the newest feeling."""
    signed = [v for v in valences if v != 0]
    if not signed:
        return None if not valences else "mixed"
    if signed[-1] > signed[0]:
        return "improving"
    if signed[-1] < signed[0]:
        return "worsening"
    return "steady" if len(set(signed)) == 1 else "mixed"
