"""Console UI text in English and Chinese: one JSON catalogue per language, the same keys
in both (a test checks). The locale comes from the user's switch (a cookie), else the
browser's Accept-Language, else English."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

LOCALES = ("en", "zh")
DEFAULT = "en"
COOKIE = "tether_console_lang"
_DIR = Path(__file__).parent / "locales"


@cache
def catalogue(locale: str) -> Mapping[str, str]:
    data: dict[str, str] = json.loads((_DIR / f"{locale}.json").read_text(encoding="utf-8"))
    return data


class Translator:
    """``t("key", name=...)``: the text in this locale, English if missing there."""

    def __init__(self, locale: str) -> None:
        self.locale = locale if locale in LOCALES else DEFAULT

    def __call__(self, key: str, **values: Any) -> str:
        text = catalogue(self.locale).get(key) or catalogue(DEFAULT).get(key) or key
        return text.format(**values) if values else text


def pick(cookie: str | None, accept_language: str | None) -> str:
    if cookie in LOCALES:
        return str(cookie)
    for part in (accept_language or "").split(","):
        tag = part.split(";")[0].strip().lower()
        if tag.startswith("zh"):
            return "zh"
        if tag.startswith("en"):
            return "en"
    return DEFAULT
