"""The assistant asks about the user and the user says yes (or no): the question,
turned into the user's own voice, is what the user confirmed. Assistant statements
alone never become memories."""

from __future__ import annotations

import re

from tether.memories.extraction.clauses import expand_contractions, sentences
from tether.memories.extraction.normalize import is_zh

_ZH_AFFIRM = re.compile(
    r"^(?:对|是|嗯|没错|当然|确实|必须|可不|超|特别|非常|很|喜欢|爱|有|yes|yeah)"
)
_ZH_DENY = re.compile(r"^(?:不是|不太|不怎么|没有|没|才不|并不|不(?!错))")
_EN_AFFIRM = re.compile(
    r"^(?:yes|yeah|yep|yup|yea|sure|of course|definitely|absolutely|totally|exactly|correct|right"
    r"|indeed|i do|i am|you bet|mhm|uh-huh|love it|i love)\b",
    re.IGNORECASE,
)
_EN_DENY = re.compile(r"^(?:no|nope|nah|not really|not at all|i do not|i am not)\b", re.IGNORECASE)
_ZH_QUESTION_NOISE = re.compile(
    r"^(?:那|所以|这么说|听起来|哇|诶|对了)+|是不是|是否|[吗呀吧呢啊嘛？?！!。~～]+$"
)
_EN_FORMS = [
    (re.compile(r"^(?:so\s+)?do\s+you\s+(?P<rest>.+?)\?*$", re.IGNORECASE), "I "),
    (re.compile(r"^(?:so\s+)?are\s+you\s+(?P<rest>.+?)\?*$", re.IGNORECASE), "I am "),
    (
        re.compile(
            r"^(?:so\s+)?you\s+are\s+(?P<rest>.+?),?\s*(?:right|huh|yeah|correct|no)?\?*$",
            re.IGNORECASE,
        ),
        "I am ",
    ),
    (
        re.compile(
            r"^(?:so\s+)?you\s+(?P<rest>(?:like|love|enjoy|work|live|have)\b.+?),?\s*"
            r"(?:right|huh|yeah|correct)?\?*$",
            re.IGNORECASE,
        ),
        "I ",
    ),
]
_EN_SWAPS = [(r"\byour\b", "my"), (r"\byourself\b", "myself"), (r"\byou\b", "me")]


def _question(text: str, zh: bool) -> str | None:
    asked = [s for s in sentences(text, zh) if s.rstrip().endswith(("?", "？", "吗"))]
    return asked[-1] if asked else None


def _zh_statement(question: str) -> str | None:
    if "你" not in question:
        return None
    core = _ZH_QUESTION_NOISE.sub("", question.split("，")[-1].split(",")[-1])
    return core.replace("有没有", "有").replace("你", "我") or None


def _en_statement(question: str) -> str | None:
    question = expand_contractions(question.strip())
    for pattern, voice in _EN_FORMS:
        if match := pattern.match(question):
            rest = match.group("rest")
            for old, new in _EN_SWAPS:
                rest = re.sub(old, new, rest, flags=re.IGNORECASE)
            return voice + rest
    return None


def confirmed_statement(assistant_text: str, reply: str, zh: bool) -> tuple[str, bool] | None:
    """``(statement, affirmed)`` when ``reply`` answers a yes/no question about the user."""
    question = _question(assistant_text, zh)
    if question is None:
        return None
    reply = reply.strip()
    deny, affirm = (_ZH_DENY, _ZH_AFFIRM) if is_zh(reply) else (_EN_DENY, _EN_AFFIRM)
    if deny.match(reply):
        affirmed = False
    elif affirm.match(reply):
        affirmed = True
    else:
        return None
    statement = _zh_statement(question) if zh else _en_statement(question)
    return (statement, affirmed) if statement else None
