"""A read from rows counts the memories' token strings in bulk (cold._token_counts); it
must agree with splitting them one by one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.recall.cold import _token_counts
from tether.recall.wire import split_tokens

TOKEN = st.sampled_from(["cat", "猫", "call", "喜欢", "", "a b", "ca", "x\ny"])
STRINGS = st.lists(st.lists(TOKEN, max_size=5).map(" ".join), max_size=30)


@settings(max_examples=300, deadline=None)
@given(strings=STRINGS)
def test_counts_agree_with_splitting_each_string(strings: list[str]) -> None:
    """Empty strings, empty tokens (two spaces in a row) and newlines included."""
    assert _token_counts(strings).tolist() == [len(split_tokens(s)) for s in strings]


def test_nothing_to_count() -> None:
    assert _token_counts([]).tolist() == []
    assert _token_counts(["", "a"]).tolist() == [0, 1]
