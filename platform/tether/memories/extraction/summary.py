"""A bounded summary of a session for the timeline, built from what was extracted:
chit-chat alone yields none."""

from __future__ import annotations

from collections.abc import Sequence

from tether.memories.extraction.extractor import extract
from tether.memories.extraction.normalize import is_zh
from tether.memories.extraction.types import TurnText

_ELLIPSIS = "…"


def summarize_session(turns: Sequence[TurnText], max_chars: int = 280) -> str | None:
    """The session's memories as one text of at most ``max_chars`` characters.

    The most important statements are kept when they do not all fit; they are then
    given in the order they were said.
    """
    candidates = extract(turns).candidates
    if not candidates or max_chars <= len(_ELLIPSIS):
        return None
    user_text = " ".join(t.text for t in turns if t.role == "user")
    separator = "；" if is_zh(user_text) else "; "
    ranked = sorted(range(len(candidates)), key=lambda i: -candidates[i].importance)
    chosen: list[int] = []
    length = 0
    for index in ranked:
        extra = len(candidates[index].content) + (len(separator) if chosen else 0)
        if length + extra <= max_chars:
            chosen.append(index)
            length += extra
    if not chosen:
        return candidates[ranked[0]].content[: max_chars - len(_ELLIPSIS)] + _ELLIPSIS
    return separator.join(candidates[i].content for i in sorted(chosen))
