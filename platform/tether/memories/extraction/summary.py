"""A session's summary for the timeline: what the conversation was about, never what was
said. Each fact is its own memory already; a summary repeating them cost context tokens
twice and went on asserting a fact after a later session superseded it (用户特别喜欢吃辣
after 我现在不吃辣了). Topics cannot go stale that way (decision 0055). Chit-chat alone
yields no summary."""

from __future__ import annotations

from collections.abc import Sequence

from tether.memories.enums import MemoryType
from tether.memories.extraction.extractor import extract
from tether.memories.extraction.normalize import is_zh
from tether.memories.extraction.types import Candidate, TurnText

_ELLIPSIS = "…"
# Topic of a predicate: (中文, English).
_TOPICS = {
    "name": ("个人情况", "who they are"),
    "age": ("个人情况", "who they are"),
    "birthday": ("个人情况", "who they are"),
    "lives_in": ("住在哪里", "where they live"),
    "from": ("家乡", "where they are from"),
    "works_at": ("工作和学习", "work and studies"),
    "studies_at": ("工作和学习", "work and studies"),
    "occupation": ("工作和学习", "work and studies"),
    "learning": ("工作和学习", "work and studies"),
    "diet": ("饮食和健康", "diet and health"),
    "allergic_to": ("饮食和健康", "diet and health"),
    "likes": ("喜好", "likes and dislikes"),
    "feels": ("心情", "how they felt"),
    "plans": ("计划", "plans"),
    "promise": ("约定", "promises"),
    "has": ("养的和拥有的", "what they have"),
    "can": ("会做的事", "what they can do"),
    "note": ("要记住的事", "things to remember"),
}
_KINDS = {
    MemoryType.EVENT: ("近况", "what they did"),
    MemoryType.INSTRUCTION: ("聊天方式", "how to talk with them"),
}
_OTHER = ("其他事", "other things")
_ZH_RELATIONS = {
    "ex": "前任",
    "mother": "妈妈",
    "father": "爸爸",
    "husband": "老公",
    "wife": "老婆",
    "boyfriend": "男朋友",
    "girlfriend": "女朋友",
    "son": "儿子",
    "daughter": "女儿",
    "kids": "孩子",
    "brother": "兄弟",
    "sister": "姐妹",
    "grandmother": "奶奶",
    "grandfather": "爷爷",
    "best_friend": "好朋友",
    "cat": "猫",
    "dog": "狗",
}


def topic(candidate: Candidate, zh: bool) -> str:
    """What one candidate is about, as a topic word, without its value."""
    if candidate.subject.startswith("user."):
        relation = candidate.subject.removeprefix("user.")
        if zh:
            return "用户的" + _ZH_RELATIONS.get(relation, "家人朋友")
        return "their " + relation.replace("_", " ")
    zh_word, en_word = _KINDS.get(candidate.memory_type, _TOPICS.get(candidate.predicate, _OTHER))
    return zh_word if zh else en_word


def summarize_session(turns: Sequence[TurnText], max_chars: int = 280) -> str | None:
    """The topics of the session's memories, most important first, in at most
    ``max_chars`` characters: 这次聊到：喜好、工作和学习、用户的猫 / Talked about: likes and
    dislikes, work and studies, their cat."""
    candidates = extract(turns).candidates
    if not candidates or max_chars <= len(_ELLIPSIS):
        return None
    zh = is_zh(" ".join(t.text for t in turns if t.role == "user"))
    ranked = sorted(candidates, key=lambda c: -c.importance)
    topics = list(dict.fromkeys(topic(c, zh) for c in ranked))
    text = ("这次聊到：" if zh else "Talked about: ") + ("、" if zh else ", ").join(topics)
    if len(text) > max_chars:
        return text[: max_chars - len(_ELLIPSIS)] + _ELLIPSIS
    return text
