"""Token estimates for context budgets: Chinese, English, masks, and safe truncation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.context.tokens import estimate_tokens, truncate_to_tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("   \t ", 0),
        ("hello world", 2),
        ("internationalization", 4),  # 20 letters: one token per started six
        ("Hello, world!", 4),
        ("13800138000", 4),  # digits in threes
        ("line\n\nnext", 3),
        ("我喜欢猫", 4),
        ("東京に行きました", 8),  # kana count like Han
        ("[PHONE]", 3),
        ("我的电话是[PHONE]。", 9),
    ],
)
def test_estimate_counts_each_kind_of_piece(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_english_prose_is_about_one_and_a_quarter_tokens_per_word() -> None:
    prose = (
        "I went to a support group yesterday and it was so powerful. The stories people "
        "shared made me think about my own transition, and I felt accepted for once."
    )
    ratio = estimate_tokens(prose) / len(prose.split())
    assert 1.1 <= ratio <= 1.4


def test_truncation_keeps_whole_words_and_masks() -> None:
    assert truncate_to_tokens("one two three four", 2) == "one two"
    assert truncate_to_tokens("我的电话是[PHONE]，明天", 6) == "我的电话是"
    assert truncate_to_tokens("我的电话是[PHONE]，明天", 8) == "我的电话是[PHONE]"
    assert truncate_to_tokens("short", 100) == "short"
    assert truncate_to_tokens("anything", 0) == ""


@given(st.text(max_size=300), st.integers(0, 80))
def test_truncation_is_a_prefix_within_the_budget(text: str, limit: int) -> None:
    cut = truncate_to_tokens(text, limit)
    assert text.startswith(cut)
    assert estimate_tokens(cut) <= limit
    if estimate_tokens(text) <= limit:
        assert cut == text


@given(st.text(max_size=200), st.text(max_size=200))
def test_estimate_is_roughly_additive(left: str, right: str) -> None:
    joined = estimate_tokens(left + " " + right)
    assert joined <= estimate_tokens(left) + estimate_tokens(right)
