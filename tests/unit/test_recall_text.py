"""Lexical tokens: what BM25 sees of a memory or a query, in Chinese and English.

Tokens are stored at write time, so the golden cases at the bottom pin the exact output:
if one fails on purpose, bump TOKENIZER_VERSION and plan a reindex.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.recall.stemming import stem
from tether.recall.stopwords import STOP_WORDS
from tether.recall.text import TOKENIZER_VERSION, tokenize, warm_up


def test_english_is_lowercased_and_stripped_of_stop_words_and_punctuation() -> None:
    assert tokenize("What did Caroline paint, when the SUN rose?!") == [
        "carolin",
        "paint",
        "sun",
        "ros",
    ]


def test_inflected_forms_of_one_event_share_a_token() -> None:
    forms = ["camping", "camped", "camps", "camp"]
    assert {token for form in forms for token in tokenize(form)} == {"camp"}
    assert tokenize("She was making pottery") == tokenize("she makes potteries")


def test_possessives_and_contractions_reduce_to_the_word() -> None:
    assert tokenize("Caroline's kids") == tokenize("caroline kid")
    assert tokenize("I'm sure they'll love it, don't worry") == ["sur", "lov", "worry"]
    assert tokenize("Caroline\u2019s dog") == tokenize("Caroline's dog")


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("running", "run"),
        ("stopped", "stop"),
        ("falling", "fall"),
        ("parties", "party"),
        ("studied", "study"),
        ("glass", "glass"),
        ("tennis", "tennis"),
        ("thing", "thing"),
        ("bed", "bed"),
        ("need", "need"),
        ("needed", "need"),
        ("agreed", "agree"),
        ("hiking", "hik"),
        ("hike", "hik"),
        ("2023", "2023"),
        ("café", "café"),
    ],
)
def test_stemmer_strips_only_inflections(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_chinese_uses_search_mode_so_compound_words_match_their_parts() -> None:
    tokens = tokenize("明天去北京大学看樱花")
    assert {"北京", "大学", "北京大学", "樱花"} <= set(tokens)
    assert "北京" in tokenize("我在北京")


def test_chinese_particles_pronouns_and_question_words_are_dropped() -> None:
    assert tokenize("你还记得我妹妹什么时候结婚吗？") == ["记得", "妹妹", "时候", "结婚"]


def test_chinese_cuts_do_not_depend_on_neighbouring_unknown_characters() -> None:
    # With jieba's HMM on, "我养" and "学弹" become words in one sentence and not the next.
    assert "养" in tokenize("我养了一只猫")
    assert "吉他" in tokenize("我最近在学弹吉他")
    assert "学" in tokenize("我最近在学弹吉他")


def test_mixed_chinese_and_english_text_is_split_by_script() -> None:
    assert tokenize("我在用iPhone拍照") == ["用", "iphon", "拍照"]


def test_masked_tags_become_the_words_of_their_name() -> None:
    assert tokenize("call me at [PHONE]") == ["call", "phon"]
    assert tokenize("我的电话是[PHONE]") == ["电话", "phon"]
    assert tokenize("[BANK_ACCOUNT]") == ["bank", "account"]
    assert "phon" in tokenize("what is my phone number")


def test_full_width_forms_read_as_ascii() -> None:
    assert tokenize("ＩＰＨＯＮＥ　１５") == tokenize("iPhone 15")


def test_whitespace_punctuation_and_empty_text_give_no_tokens() -> None:
    assert tokenize("") == []
    assert tokenize("  \n\t!?，。……“”（）— ") == []
    assert tokenize("a i the 的 了 吗") == []


def test_warm_up_is_idempotent() -> None:
    warm_up()
    warm_up()
    assert tokenize("北京") == ["北京"]


def test_stop_word_list_is_lowercase_surface_forms() -> None:
    assert all(word == word.lower() and " " not in word for word in STOP_WORDS)


@given(st.text(max_size=200))
def test_tokenize_is_deterministic_and_never_yields_blank_or_stop_tokens(text: str) -> None:
    tokens = tokenize(text)
    assert tokens == tokenize(text)
    assert all(token.strip() == token and token for token in tokens)
    assert not set(tokens) & {"the", "的", "吗"}


GOLDEN = [
    (
        "Melanie: I went camping with the kids at the lake last weekend!",
        ["melani", "camp", "kid", "lak", "last", "weekend"],
    ),
    (
        "我下个月要去杭州参加妹妹的婚礼，电话[PHONE]",
        ["下个月", "去", "杭州", "参加", "妹妹", "婚礼", "电话", "phon"],
    ),
]


@pytest.mark.parametrize(("text", "expected"), GOLDEN)
def test_stored_token_format_is_stable(text: str, expected: list[str]) -> None:
    assert TOKENIZER_VERSION == 1
    assert tokenize(text) == expected
