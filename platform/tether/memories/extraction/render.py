"""The ``content`` sentence: what a person or a model reads later, with no chat around
it. Relative time words are replaced by the date they meant."""

from __future__ import annotations

import re
from datetime import datetime

from tether.memories.extraction.timewords import TimeRef

_ZH_TEMPLATES = {
    "name": "{s}叫{o}",
    "age": "{s}{o}岁（{year}年）",
    "birthday": "{s}的生日是{o}",
    "lives_in": "{s}住在{o}",
    "from": "{s}来自{o}",
    "works_at": "{s}在{o}工作",
    "occupation": "{s}的职业是{o}",
    "allergic_to": "{s}对{o}过敏",
    "call_me": "用户希望被称呼为{o}",
    "avoid_topic": "用户不希望再提起{o}",
    "reply_style": "用户希望{o}",
    "note": "用户让记住：{o}",
}
_EN_TEMPLATES = {
    "name": "{s}'s name is {o}",
    "age": "{s} is {o} years old (as of {year})",
    "birthday": "{s}'s birthday is {o}",
    "lives_in": "{s} lives in {o}",
    "from": "{s} is from {o}",
    "works_at": "{s} works at {o}",
    "occupation": "{s} works as {o}",
    "allergic_to": "{s} is allergic to {o}",
    "call_me": "The user wants to be called {o}",
    "avoid_topic": "The user does not want {o} brought up",
    "reply_style": "The user asked the persona to {o}",
    "note": "The user asked to remember: {o}",
}
_EN_SWAPS = [
    (r"\bmy\b", "their"),
    (r"\bme\b", "them"),
    (r"\bmyself\b", "themselves"),
    (r"\bmine\b", "theirs"),
    (r"\bI\b", "they"),
    (r"\bour\b", "their"),
]
_EN_ADVERBS = frozenset(
    [
        "really",
        "absolutely",
        "totally",
        "just",
        "also",
        "still",
        "truly",
        "genuinely",
        "honestly",
        "actually",
        "seriously",
        "so",
        "very",
        "definitely",
        "finally",
        "recently",
        "now",
        "even",
        "already",
        "never",
        "always",
        "usually",
        "kind",
        "of",
        "kinda",
        "no",
        "longer",
        "pretty",
        "much",
    ]
)
_EN_THIRD = {"am": "is", "are": "is", "have": "has", "do": "does", "were": "was"}
_EN_KEEP = frozenset(
    [
        "is",
        "has",
        "does",
        "was",
        "will",
        "would",
        "can",
        "cannot",
        "could",
        "should",
        "must",
        "may",
        "might",
        "shall",
        "went",
        "got",
        "saw",
        "had",
        "made",
        "took",
        "ran",
        "ate",
        "drank",
        "met",
        "bought",
        "thought",
        "felt",
        "left",
        "lost",
        "won",
        "tore",
        "broke",
        "wrote",
        "read",
        "came",
        "became",
        "began",
        "fell",
        "flew",
        "drove",
        "gave",
        "knew",
        "told",
        "said",
        "sold",
        "spent",
        "sent",
        "built",
        "kept",
        "slept",
        "found",
        "heard",
        "paid",
        "put",
        "quit",
        "set",
        "hit",
        "cut",
        "let",
        "swam",
        "sang",
        "threw",
        "wore",
        "chose",
        "forgot",
        "spoke",
        "woke",
        "rode",
        "grew",
    ]
)
# "\s" not "\s+" before the laugh: a space is also taken alone by the class, and
# with "\s+" every way of sharing a run of spaces between the two was tried.
_EN_TAIL = re.compile(r"(?:\s(?:haha+|hehe+|lol|lmao|xd)|[\s.!?~])+$", re.IGNORECASE)
_ZH_ATTRIBUTES = ("爱好", "兴趣", "生日", "名字", "工作", "职业", "老家", "家乡", "专业")
_ZH_TAIL = re.compile(r"(?:[的了啊呀呢吧哦噢嘛啦哈呵嘿]|就行|就好)+$")


def _zh_date(start: datetime, unit: str | None) -> str:
    return {
        "week": f"{start:%Y-%m-%d}那周",
        "weekend": f"{start:%Y-%m-%d}周末",
        "month": f"{start.year}年{start.month}月",
        "year": f"{start.year}年",
    }.get(unit or "day", f"{start:%Y-%m-%d}")


def _en_date(start: datetime, unit: str | None) -> str:
    return {
        "week": f"week of {start:%Y-%m-%d}",
        "weekend": f"weekend of {start:%Y-%m-%d}",
        "month": f"{start:%Y-%m}",
        "year": f"{start.year}",
    }.get(unit or "day", f"on {start:%Y-%m-%d}")


def subject_words(label: str, relation_text: str, zh: bool) -> str:
    if label == "user":
        return "用户" if zh else "The user"
    if zh:
        return f"用户的{relation_text.removeprefix('我的').removeprefix('我')}"
    return f"The user's {relation_text.lower()}"


def third_person(phrase: str) -> str:
    """'love spicy food' → 'loves spicy food': the phrase follows "The user"."""
    words = phrase.split()
    for index, word in enumerate(words):
        lower = word.lower()
        if lower in _EN_ADVERBS or lower in {"no", "longer", "of"}:
            continue
        if lower in _EN_THIRD:
            words[index] = _EN_THIRD[lower]
        elif lower.endswith("ing"):
            words.insert(index, "is")
        elif (lower not in _EN_KEEP and not lower.endswith(("ed", "s"))) or lower.endswith("ss"):
            words[index] = _verb_s(word)
        break
    return " ".join(words)


def _verb_s(word: str) -> str:
    if word.endswith(("ch", "sh", "ss", "x", "o")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in {"a", "e", "o", "u"}:
        return word[:-1] + "ies"
    return word + "s"


def swap_pronouns(text: str) -> str:
    for pattern, replacement in _EN_SWAPS:
        text = re.sub(pattern, replacement, text, flags=re.IGNORECASE)
    return text


def render(
    subject: str,
    predicate: str,
    obj: str,
    phrase: str,
    time: TimeRef | None,
    zh: bool,
    at: datetime,
) -> str:
    """``subject`` is already in words ("用户的妈妈", "The user"); ``phrase`` is the
    clause after the subject and time words, used where no template fits."""
    templates = _ZH_TEMPLATES if zh else _EN_TEMPLATES
    if predicate in templates:
        shown = (
            obj if zh or predicate != "reply_style" else swap_pronouns(obj.replace("your", "the"))
        )
        text = templates[predicate].format(s=subject, o=shown, year=at.year)
    elif zh:
        phrase = _ZH_TAIL.sub("", phrase.replace("我们", "用户和你").replace("我", "用户"))
        joiner = "的" if phrase.startswith(_ZH_ATTRIBUTES) else ""
        text = subject + joiner + phrase
    else:
        phrase = swap_pronouns(_EN_TAIL.sub("", phrase))
        text = f"{subject} {third_person(phrase[:1].lower() + phrase[1:])}"
    if predicate not in templates and time is not None and time.start is not None:
        when = _zh_date(time.start, time.unit) if zh else _en_date(time.start, time.unit)
        text += f"（{when}）" if zh else f" ({when})"
    return text
