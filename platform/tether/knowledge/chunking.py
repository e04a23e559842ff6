"""Split document text into bounded, overlapping passages, Chinese and English alike.

A passage holds at most ``size`` characters. Passages end at a paragraph when one ends
past half the size, otherwise at a sentence (``。！？；`` or ``. ! ? ;`` followed by
space, or a line break); a sentence longer than ``size`` is cut at a space when it has
one near the limit, else at the limit (Chinese has no spaces), and its pieces overlap.
The next passage repeats
the last whole sentences of the previous one, up to ``overlap`` characters, so a fact
split across the boundary is whole in one of them; a new paragraph starts clean.
A PDF page or a Markdown section is never mixed with another: the passage's source
label stays exact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tether.knowledge.parsing import Block

_SENTENCE_END = re.compile(r"[。！？；!?…]+[」』”’）)\"']*|[.;:](?=\s)|\n")
_TRAILING_SPACE = re.compile(r"[ \t]*")


@dataclass(frozen=True, slots=True)
class Passage:
    text: str
    page: int | None
    section: str | None


@dataclass(frozen=True, slots=True)
class _Unit:
    text: str
    starts_paragraph: bool


def chunk_blocks(blocks: Sequence[Block], size: int, overlap: int) -> list[Passage]:
    """Every block's passages, in document order."""
    return [
        Passage(text, block.page, block.section)
        for block in blocks
        for text in split_text(block.text, size, overlap)
    ]


def split_text(text: str, size: int, overlap: int) -> list[str]:
    """``text`` as passages of at most ``size`` characters (see the module docstring)."""
    overlap = min(overlap, size // 2)
    passages: list[str] = []
    current: list[_Unit] = []
    for unit in _units(text, size, overlap):
        length = _length(current)
        paragraph_break = unit.starts_paragraph and length >= size // 2
        if current and (paragraph_break or length + len(unit.text) > size):
            passages.append(_join(current))
            current = (
                [] if unit.starts_paragraph else _tail(current, overlap, size - len(unit.text))
            )
        current.append(unit)
    if current:
        passages.append(_join(current))
    return [p for p in passages if p]


def _units(text: str, size: int, overlap: int) -> list[_Unit]:
    units: list[_Unit] = []
    for paragraph in re.split(r"\n[ \t]*\n", text):
        starts = True
        for sentence in _sentences(paragraph.strip()):
            for piece in _cut(sentence, size, overlap):
                units.append(_Unit(piece, starts))
                starts = False
    return units


def _sentences(paragraph: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(paragraph):
        end = _TRAILING_SPACE.match(paragraph, match.end())
        stop = end.end() if end else match.end()
        pieces.append(paragraph[start:stop])
        start = stop
    pieces.append(paragraph[start:])
    return [p for p in pieces if p.strip()]


def _cut(sentence: str, size: int, overlap: int) -> list[str]:
    """A sentence longer than ``size`` in pieces that overlap by about ``overlap``
    characters, cut at the last space in the final fifth of a piece when there is one."""
    pieces = []
    while len(sentence) > size:
        space = sentence.rfind(" ", size * 4 // 5, size)
        cut = space + 1 if space > 0 else size
        pieces.append(sentence[:cut])
        restart = max(cut - overlap, 1)
        if space > 0:  # restart at a word boundary too
            word = sentence.find(" ", restart, cut)
            restart = word + 1 if word >= 0 else restart
        sentence = sentence[restart:]
    pieces.append(sentence)
    return pieces


def _length(units: Sequence[_Unit]) -> int:
    return sum(len(u.text) for u in units) + 2 * sum(1 for u in units[1:] if u.starts_paragraph)


def _tail(units: list[_Unit], overlap: int, room: int) -> list[_Unit]:
    """The last whole units of ``units`` that fit in ``overlap`` (and in ``room``)."""
    tail: list[_Unit] = []
    used = 0
    for unit in reversed(units):
        used += len(unit.text)
        if used > min(overlap, room):
            break
        tail.insert(0, _Unit(unit.text, starts_paragraph=False))
        if unit.starts_paragraph:
            break
    return tail


def _join(units: Sequence[_Unit]) -> str:
    parts = []
    for i, unit in enumerate(units):
        if i and unit.starts_paragraph:
            parts.append("\n\n")
        parts.append(unit.text)
    return "".join(parts).strip()
