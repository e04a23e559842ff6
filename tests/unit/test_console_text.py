"""The console's UI text: both languages have every key, every key a template names
literally exists, and the diff and timeline helpers behave."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from pathlib import Path

from tether.console.diffs import segments
from tether.console.i18n import Translator, catalogue, pick
from tether.console.snippets import turns_of
from tether.console.timeline import timeline
from tether.memories.schemas import MemoryRead

TEMPLATES = Path(__file__).resolve().parents[2] / "platform/tether/console/templates"
LITERAL = re.compile(r"""\bt\(\s*["']([a-z_.]+)["']""")


def test_english_and_chinese_have_the_same_keys() -> None:
    assert set(catalogue("en")) == set(catalogue("zh"))


def test_every_key_a_template_names_exists() -> None:
    used = {
        key
        for path in TEMPLATES.rglob("*.html")
        for key in LITERAL.findall(path.read_text(encoding="utf-8"))
        if not key.endswith((".", "_"))  # a prefix completed at render time (role., why_)
    }
    assert used - set(catalogue("en")) == set()


def test_the_locale_comes_from_the_switch_then_the_browser() -> None:
    assert pick("zh", "en-US") == "zh"
    assert pick(None, "zh-CN,zh;q=0.9,en;q=0.8") == "zh"
    assert pick("xx", "fr-FR") == "en"
    assert Translator("zh")("nav.audit") == "审计"
    assert Translator("en")("home.signed_in_as", role="Admin") == "Signed in as Admin"


def test_a_diff_marks_words_and_chinese_characters() -> None:
    found = segments("Luna runs a small café 小咖啡馆", "Luna runs a night café 深夜咖啡馆")
    assert ("removed", "small") in [(s.op, s.text) for s in found]
    assert ("added", "night") in [(s.op, s.text) for s in found]
    assert (
        "".join(s.text for s in found if s.op != "removed") == "Luna runs a night café 深夜咖啡馆"
    )


def _memory(superseded_by: uuid.UUID | None = None) -> MemoryRead:
    now = datetime.now(UTC)
    return MemoryRead(
        uuid.uuid4(),
        None,
        "fact",
        "semantic",
        "",
        "",
        "",
        "affirmed",
        "x",
        0.5,
        1.0,
        1.0,
        now,
        None,
        None,
        superseded_by is None,
        superseded_by,
        [],
        None,
        False,
        "manual",
        "staff_entered",
        1,
        None,
        now,
        now,
    )


def test_superseded_versions_fold_under_the_newest_of_their_chain() -> None:
    newest = _memory()
    middle = _memory(newest.id)
    oldest = _memory(middle.id)
    orphan = _memory(uuid.uuid4())  # its successor is on another page
    entries = timeline([newest, orphan, middle, oldest])
    assert [e.memory.id for e in entries] == [newest.id, orphan.id]
    assert [m.id for m in entries[0].older] == [middle.id, oldest.id]


def test_a_pasted_snippet_becomes_turns() -> None:
    snippet = "I moved last week\nassistant: where to?\n用户：里斯本\nand I love it\n\nA: nice\n"
    assert turns_of(snippet) == [
        {"role": "user", "text": "I moved last week"},
        {"role": "assistant", "text": "where to?"},
        {"role": "user", "text": "里斯本\nand I love it"},
        {"role": "assistant", "text": "nice"},
    ]
    assert turns_of("user:   \n\n") == []
