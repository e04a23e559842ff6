"""Manual memories and edits pass the same privacy filter as turns (docs/privacy-filter.md):
every free-text field a caller writes is masked before anything is stored or embedded."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from tether.memories import schemas as s
from tether.privacy.filter import PrivacyFilter, mask_texts

_CREATE_FIELDS = ("content", "subject", "predicate", "object")


async def mask_creates(
    privacy: PrivacyFilter, items: Sequence[s.MemoryCreate]
) -> list[s.MemoryCreate]:
    texts = [getattr(item, name) for item in items for name in _CREATE_FIELDS]
    masked = iter(await mask_texts(privacy, texts))
    return [
        msgspec.structs.replace(item, **{name: next(masked).text for name in _CREATE_FIELDS})
        for item in items
    ]


async def mask_update(privacy: PrivacyFilter, data: s.MemoryUpdate) -> s.MemoryUpdate:
    names = [n for n in (*_CREATE_FIELDS, "reason") if getattr(data, n)]
    masked = await mask_texts(privacy, [getattr(data, n) for n in names])
    return msgspec.structs.replace(data, **{n: m.text for n, m in zip(names, masked, strict=True)})


async def mask_reason(privacy: PrivacyFilter, reason: str) -> str:
    return (await mask_texts(privacy, [reason]))[0].text if reason else reason
