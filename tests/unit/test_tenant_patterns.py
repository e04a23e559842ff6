"""Tenant privacy patterns on RE2: hostile patterns run in linear time, matches are found
across search windows and in non-ASCII text, and a pattern firing everywhere is bounded."""

from __future__ import annotations

import time

import pytest

from tether.privacy.filter import PrivacyFilter
from tether.privacy.tenant_patterns import MAX_MATCH_BYTES, WINDOW_BYTES

# The two patterns the old structural vetting let through (exponential and polynomial
# in Python's re: 8-14 s of a blocked event loop each), and classic ReDoS shapes.
HOSTILE = [
    (r"(?:a?){28}a{28}", "a" * 28),
    (r"\d*\d*\d*!", "1" * 400),
    (r"(?:a?){28}a{28}", "a" * 8000),
    (r"\d*\d*\d*!", "1" * 8000),
    (r"(a+)+$", "a" * 8000 + "b"),
    (r"^(\w+\s?)+$", "word " * 1600 + "!"),
    (r"a.*b|a", "a" * 8000),
    (r"[ab]{0,100}a[ab]{25}x", "ab" * 4000),
]


@pytest.mark.parametrize(("pattern", "text"), HOSTILE)
def test_hostile_tenant_patterns_mask_a_long_turn_promptly(pattern: str, text: str) -> None:
    privacy = PrivacyFilter([("HOSTILE", pattern)])
    started = time.perf_counter()
    privacy.mask(text)
    # Generous: these take milliseconds; under re they took seconds to hours.
    assert time.perf_counter() - started < 1.0


def test_a_match_across_a_window_boundary_is_found_whole() -> None:
    privacy = PrivacyFilter([("CODE", r"ZX-\d{40}")])
    for offset in range(WINDOW_BYTES - 50, WINDOW_BYTES + 5):
        text = "." * offset + "ZX-" + "7" * 40 + " end"
        assert privacy.mask(text).text == "." * offset + "[CODE] end", offset


def test_matches_up_to_the_longest_window_match_are_whole() -> None:
    code = "Q" + "9" * (MAX_MATCH_BYTES - 2) + "Q"
    privacy = PrivacyFilter([("LONG", r"Q9+Q")])
    assert privacy.mask("中文" * 300 + code + "尾").text == "中文" * 300 + "[LONG]尾"


def test_offsets_are_characters_in_chinese_text_with_a_value_group() -> None:
    privacy = PrivacyFilter([("MEMBER_NO", r"会员号[:：]?\s*(?P<value>\d{8,12})")])
    text = "你好，我的会员号：88812345，谢谢" * 3
    expected = "你好，我的会员号：[MEMBER_NO]，谢谢" * 3
    assert privacy.mask(text).text == expected


def test_empty_matches_are_skipped_not_looped_on() -> None:
    privacy = PrivacyFilter([("WORD", r"\bEMP\d*\b")])
    assert privacy.mask("an EMP42 here and EMP").text == "an [WORD] here and [WORD]"


def test_a_pattern_matching_everywhere_masks_the_rest_of_the_text_whole() -> None:
    privacy = PrivacyFilter([("DIGIT", r"\d")])
    result = privacy.mask("x" + "1" * 8000)
    assert "1" not in result.text
    assert result.text.startswith("x[DIGIT][DIGIT]")
    assert len(result.found) < 600  # 64 + 8000 // 16 detections, then one for the rest


def test_unicode_classes_need_p_escapes_and_full_width_digits_are_folded() -> None:
    privacy = PrivacyFilter([("NAME", r"\p{Han}{2,3}先生"), ("ROOM", r"房间\d{3}")])
    assert privacy.mask("请找王小明先生，房间１２３").text == "请找[NAME]，[ROOM]"
