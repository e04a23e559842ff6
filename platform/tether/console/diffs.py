"""Word-level differences between two texts (a Chinese character counts as a word), as
segments a template marks up; the text itself stays escaped."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

_TOKENS = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W\u3400-\u9fff]+|\s+|[^\w\s]", re.UNICODE)

Op = Literal["same", "added", "removed"]


@dataclass(frozen=True, slots=True)
class Segment:
    op: Op
    text: str


def segments(old: str, new: str) -> list[Segment]:
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    found: list[Segment] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            found.append(Segment("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            found.append(Segment("removed", "".join(a[i1:i2])))
        if j2 > j1:
            found.append(Segment("added", "".join(b[j1:j2])))
    return found


def changed(old: str, new: str) -> bool:
    return old != new
