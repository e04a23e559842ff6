"""Passages: bounded, split at sentence and paragraph boundaries, overlapping."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.knowledge.chunking import chunk_blocks, split_text
from tether.knowledge.parsing import Block

ENGLISH = "The kettle boils water in three minutes. Never run it empty. " * 30
CHINESE = "水壶三分钟即可烧开。请勿空烧。使用后请拔下电源。" * 30


def test_english_passages_end_at_sentences_and_stay_bounded() -> None:
    passages = split_text(ENGLISH, 300, 80)
    assert len(passages) > 3
    assert all(len(p) <= 300 for p in passages)
    assert all(p.endswith(".") for p in passages)


def test_chinese_passages_end_at_sentences_and_stay_bounded() -> None:
    passages = split_text(CHINESE, 200, 50)
    assert len(passages) > 3
    assert all(len(p) <= 200 for p in passages)
    assert all(p.endswith("。") for p in passages)


def test_consecutive_passages_overlap_by_whole_sentences() -> None:
    first, second = split_text(ENGLISH, 300, 80)[:2]
    assert second.startswith("Never run it empty.") or second.startswith("The kettle")
    assert second[:40] in first


def test_a_new_paragraph_starts_a_new_passage_once_the_current_is_half_full() -> None:
    text = "A" * 150 + ".\n\n" + "B" * 150 + "."
    assert split_text(text, 300, 50) == ["A" * 150 + ".", "B" * 150 + "."]
    short = "Short one.\n\nShort two."
    assert split_text(short, 300, 50) == [short]


def test_a_sentence_longer_than_a_passage_is_cut_with_overlap() -> None:
    words = " ".join(f"w{i}" for i in range(200))
    passages = split_text(words, 100, 20)
    assert all(len(p) <= 100 for p in passages)
    assert all(not p.startswith(" ") for p in passages)
    for before, after in itertools.pairwise(passages):
        assert after.split(" ")[0] in before.split(" ")  # restarts at a word it repeats
    unbroken = "字" * 450
    assert [len(p) for p in split_text(unbroken, 200, 50)] == [200, 200, 150]


def test_blocks_keep_their_page_and_section() -> None:
    blocks = [Block("One. " * 100, page=1), Block("Two.", page=2), Block("Intro", section="Setup")]
    passages = chunk_blocks(blocks, 200, 40)
    assert {p.page for p in passages if "One." in p.text} == {1}
    assert [p.page for p in passages][-2:] == [2, None]
    assert passages[-1].section == "Setup"


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab 。.!\n水壶x"), min_size=0, max_size=2000),
    st.integers(min_value=100, max_value=800),
    st.integers(min_value=0, max_value=200),
)
def test_passages_are_bounded_and_lose_no_text(text: str, size: int, overlap: int) -> None:
    passages = split_text(text, size, overlap)
    assert all(0 < len(p) <= size for p in passages)
    # Every character of the text is kept, in order (overlap only repeats some).
    assert _in_order("".join(text.split()), "".join("".join(passages).split()))


def _in_order(needle: str, haystack: str) -> bool:
    remaining = iter(haystack)
    return all(char in remaining for char in needle)
