"""Turn text into clauses a rule can read: sentences, then clauses, minus the
discourse markers in front; and the checks that keep questions and hypotheticals out."""

from __future__ import annotations

import re

_ZH_SENTENCE = re.compile(r"(?<=[。！？!?；;\n…])")
_ZH_CLAUSE = re.compile(r"[，,、：:～~]+")
# (?<!\s) starts the colon case at the head of a run of spaces only: tried from every
# space of a long run, ``\s*:`` was quadratic.
_EN_SENTENCE = re.compile(r"(?<=[.!?;\n])\s+|(?<=[!?])(?=\S)|(?<!\s)\s*[:]\s+")
# The rules read sentences no longer than this: their patterns are reviewed to be
# linear or close to it, and a cap bounds what remains (decision 0033). A longer
# "sentence" is a paste or a wall of text, not a statement about the user; the LLM
# step, when configured, still reads it.
MAX_SENTENCE_CHARS = 400
# Every comma: an object never runs past one, so nothing is lost by splitting there.
_EN_CLAUSE = re.compile(
    r"\s*[,;]\s*|\s+(?:and|but|so|because|although)\s+(?=(?:i|we|my)\b)",
    re.IGNORECASE,
)
_ZH_MARKER = re.compile(
    r"^(?:嗯+|哈+|呵+|嘿+|唉|诶|欸|哎|啊+|哦+|噢|喔|呃|额|好吧|好的|对了|其实|但是|不过|可是|所以|而且"
    r"|还有|另外|然后|跟你说|告诉你|说真的|老实说|讲真|反正|总之|话说|顺便说一下|话说回来|我觉得吧"
    r"|说实话|算了|就是说|总而言之)(?:[，,！!。 ]*)"
)
_EN_MARKER = re.compile(
    r"^(?:oh|ah|well|so|and|but|also|anyway|anyways|actually|honestly|seriously|btw|by the way"
    r"|plus|yeah|yes|yep|yup|no(?!\s+longer)|nope|ok|okay|haha+|lol|hey|hi|hello|big news|fun fact"
    r"|guess what"
    r"|for the record|to be honest|tbh|though|then|now that i think about it|oh and|right"
    r"|um+|uh+|hmm+|wow|omg|ugh|sadly|luckily|fortunately|unfortunately|funny enough)\b[,:!.]*\s*",
    re.IGNORECASE,
)
_ZH_QUESTION = re.compile(
    r"[?？]$|[吗么呢]$|是不是|有没有|要不要|能不能|会不会|好不好|对不对|什么|啥|怎么|为什么|哪|谁|几点"
)
_EN_QUESTION_START = re.compile(
    # "Do not mention my ex" is an instruction, not a question.
    r"^(?:(?:do|does|did)(?!\s+not\b)|are|is|was|were|can|could|would|will|should|have|has"
    r"|what|what's|whats"
    r"|why|how|where|when|who|which|any|anything)\b",
    re.IGNORECASE,
)
_ZH_HYPOTHETICAL = re.compile(
    r"如果|要是|假如|假设|万一|的话|要不是|想象一下|假使|倘若|但愿|希望|要不然|不然"
)
_EN_HYPOTHETICAL = re.compile(
    r"\b(?:if|would|wish|imagine|suppose|supposing|what if|unless|might|maybe|hopefully|hope)\b",
    re.IGNORECASE,
)
_CONTRACTIONS = [
    (r"\b(i|you|we|they|he|she|it|that|there)'m\b", r"\1 am"),
    (r"\b(i|you|we|they)'ve\b", r"\1 have"),
    (r"\b(i|you|we|they|he|she|it|that)'ll\b", r"\1 will"),
    (r"\b(i|you|we|they|he|she)'d\b", r"\1 would"),
    (r"\b(you|we|they)'re\b", r"\1 are"),
    (r"\b(he|she|it|that|there|what)'s\b", r"\1 is"),
    (r"\bcan't\b", "cannot"),
    (r"\bwon't\b", "will not"),
    (r"\blet's\b", "let us"),
    (r"\b(do|does|did|is|are|was|were|have|has|had|should|would|could)n't\b", r"\1 not"),
]
_CONTRACTION_RES = [(re.compile(p, re.IGNORECASE), r) for p, r in _CONTRACTIONS]


def expand_contractions(text: str) -> str:
    """I'm → I am, don't → do not: the rules then need one spelling per form."""
    text = text.replace("’", "'").replace("‘", "'")
    for pattern, replacement in _CONTRACTION_RES:
        text = pattern.sub(replacement, text)
    return text


def sentences(text: str, zh: bool) -> list[str]:
    """The sentences of ``text`` short enough for the rules (``MAX_SENTENCE_CHARS``)."""
    parts = (_ZH_SENTENCE if zh else _EN_SENTENCE).split(text)
    stripped = (part.strip() for part in parts if part)
    return [part for part in stripped if part and len(part) <= MAX_SENTENCE_CHARS]


# "说好了，考完一起庆祝": the lead-in and what it introduces are one promise.
_ZH_LEAD_IN = re.compile(r"^(?:说好了|约好了|说定了|一言为定|我答应你|答应你|我保证|保证)$")
# One character class, not ``(?:[啊…]|哈+|…)+``: the nested repeat was exponential.
_ZH_TRAILING = re.compile(r"[啊呀啦哦呢嘛噢喔哟咯哈呵嘿嘻]+$")
_EN_TRAILING = re.compile(r"(?:\s+(?:haha+|hehe+|lol|lmao|xd|btw|:\)|:d))+$", re.IGNORECASE)


def _join_lead_ins(parts: list[str]) -> list[str]:
    joined: list[str] = []
    for part in parts:
        if joined and _ZH_LEAD_IN.match(joined[-1]):
            joined[-1] += part
        else:
            joined.append(part)
    return joined


def clauses(sentence: str, zh: bool) -> list[str]:
    """The statement clauses of a sentence, in order; a trailing question is dropped
    ("I hate lines though, any tips?") and so is a sentence that is a question."""
    parts = [p.strip() for p in (_ZH_CLAUSE if zh else _EN_CLAUSE).split(sentence) if p.strip()]
    if not zh and sentence.rstrip().endswith("?"):
        parts = [p for chunk in parts for p in chunk.split(",")]
        parts = [p.strip() for p in parts[:-1] if p.strip()]
        if parts and _EN_QUESTION_START.match(strip_markers(parts[0], zh=False)):
            return []
    stripped = [strip_markers(p, zh) for p in parts]
    stripped = [p for p in stripped if p]
    return _join_lead_ins(stripped) if zh else stripped


def strip_markers(clause: str, zh: bool) -> str:
    """Drop leading discourse markers (其实, 对了, honestly, oh and) and edge noise."""
    marker = _ZH_MARKER if zh else _EN_MARKER
    for _ in range(4):
        stripped = marker.sub("", clause, count=1).strip()
        if stripped == clause:
            break
        clause = stripped
    clause = clause.strip(" \t!！。.~～…")
    if zh:  # sentence-final particles carry mood, not content; 了 is kept (不吃辣了)
        return _ZH_TRAILING.sub("", clause).strip(" ！!。~～")
    return _EN_TRAILING.sub("", clause).strip(" !.~")


_ZH_POLITE = re.compile(
    r"^(?:你|请)?(?P<body>.*?)(?:能不能|可不可以|能|可以)(?P<rest>.+?)(?:吗|么|嘛)?[?？]?$"
)
_EN_POLITE = re.compile(
    r"^(?:could|can|would|will)\s+you\s+(?:please\s+)?(?P<rest>.+?)\??$", re.IGNORECASE
)


def polite_request(clause: str, zh: bool) -> str | None:
    """ "你说话能温柔一点吗" / "Could you talk more gently?": a request, not a question;
    returns it as the plain instruction for the instruction rules."""
    if zh:
        match = _ZH_POLITE.match(clause)
        return (
            f"{match.group('body')}{match.group('rest')}" if match and "你" in clause[:2] else None
        )
    match = _EN_POLITE.match(clause)
    return match.group("rest") if match else None


def is_question(clause: str, zh: bool) -> bool:
    if zh:
        return bool(_ZH_QUESTION.search(clause.rstrip("!！。.~～ ")))
    return clause.rstrip().endswith("?") or bool(_EN_QUESTION_START.match(clause))


def is_hypothetical(clause: str, zh: bool) -> bool:
    return bool((_ZH_HYPOTHETICAL if zh else _EN_HYPOTHETICAL).search(clause))
