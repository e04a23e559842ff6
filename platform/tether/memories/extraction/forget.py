"""Requests to forget: "忘了我刚才说的", "这个别记", "把前女友的事忘掉",
"forget that", "please forget everything about my ex". "I forgot my keys" is not one:
the request has no subject, or is addressed to the persona."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ZH_PREVIOUS = [
    re.compile(
        r"^(?:请|你|麻烦你?)?(?:就)?(?:忘了|忘掉|忘记|删了|删掉)(?:我)?(?:刚才|刚刚|之前|前面|上面)?"
        r"(?:说的|讲的|那句|这句|这个|那个|这些|那些|它)(?:话|事|吧|啊|哦)*$"
    ),
    re.compile(
        r"^(?:这个|这件事|这句|那个|刚才那句|这些|刚才说的|刚刚说的)?(?:请|你)?(?:就)?"
        r"(?:别|不要|不用|不必|无需)(?:记|记住|记下来|记下|记着|记录)(?:这个|这件事|了|啊|哦|吧)*$"
    ),
]
_ZH_ABOUT = [
    re.compile(
        r"^(?:请|你)?(?:把|将)(?P<obj>.+?)(?:给)?(?:忘了|忘掉|删了|删掉|忘记)(?:吧|啊|哦)*$"
    ),
    re.compile(r"^(?:请|你)?(?:忘了|忘掉|忘记|删掉)(?P<obj>.+?)(?:吧|啊)*$"),
    re.compile(r"^(?:请|你)?(?:别|不要)(?:记|记住|记着)(?P<obj>.+)$"),
]
_EN_PREVIOUS = [
    re.compile(
        r"^(?:please\s+|just\s+|can you\s+|could you\s+)*(?:forget|disregard|ignore|delete|erase"
        r"|scratch)\s+(?:that|this|it|what i (?:just\s+)?said|i said that|everything i just said"
        r"|the last (?:thing|message))(?:\s+please)?$",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:please\s+)?(?:do not|never)\s+(?:remember|save|store|keep|record|note)\s+(?:that"
        r"|this|it)$",
        re.IGNORECASE,
    ),
    re.compile(r"^(?:that is|this is)\s+off the record$", re.IGNORECASE),
]
_EN_ABOUT = [
    re.compile(
        r"^(?:please\s+|just\s+|can you\s+|could you\s+)*(?:forget|delete|erase)\s+(?:everything\s+"
        r"|anything\s+|all\s+)?(?:about|that|i said|what i said about|what i told you about)\s+"
        r"(?P<obj>.+?)(?:\s+please)?$",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:please\s+)?(?:do not|never)\s+(?:remember|save|store)\s+(?:that\s+)?(?P<obj>.+)$",
        re.IGNORECASE,
    ),
]
_ZH_ABOUT_NOISE = re.compile(
    r"^(?:我说过?的|我的|我)|(?:的事情|的事|这件事|那件事|这事|的那些事|这个|那些事)$"
)
_EN_ABOUT_NOISE = re.compile(r"^(?:my|the|that|what i said about)\s+", re.IGNORECASE)
_PRONOUNS = frozenset({"that", "this", "it", "那个", "这个", "它"})


@dataclass(frozen=True, slots=True)
class ForgetIntent:
    about: str  # the thing named; "" means the previous statement


def parse_forget(clause: str, zh: bool) -> ForgetIntent | None:
    """The forget request this clause makes, if it makes one."""
    for pattern in _ZH_PREVIOUS if zh else _EN_PREVIOUS:
        if pattern.match(clause):
            return ForgetIntent("")
    for pattern in _ZH_ABOUT if zh else _EN_ABOUT:
        if match := pattern.match(clause):
            about = match.group("obj").strip(" ，,。.!！")
            for _ in range(2):
                about = (_ZH_ABOUT_NOISE if zh else _EN_ABOUT_NOISE).sub("", about).strip()
            return ForgetIntent("" if about.lower() in _PRONOUNS else about)
    return None
