"""A read from rows for one query counts and searches the memories' token strings in
bulk (cold._token_counts, cold._rows_containing); it must agree with splitting them one
by one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.recall.cold import _rows_containing, _token_counts
from tether.recall.wire import split_tokens

TOKEN = st.sampled_from(["cat", "猫", "call", "喜欢", "", "a b", "ca", "x\ny"])
STRINGS = st.lists(st.lists(TOKEN, max_size=5).map(" ".join), max_size=30)
TERMS = st.lists(st.sampled_from(["cat", "猫", "ca", "b", "喜", "", "x\ny"]), max_size=3)


@settings(max_examples=300, deadline=None)
@given(strings=STRINGS, terms=TERMS)
def test_counts_and_candidates_agree_with_splitting_each_string(
    strings: list[str], terms: list[str]
) -> None:
    """Empty strings, empty tokens (two spaces in a row) and newlines included."""
    assert _token_counts(strings).tolist() == [len(split_tokens(s)) for s in strings]
    rows = _rows_containing(strings, terms).tolist()
    assert rows == [i for i, s in enumerate(strings) if any(t in s for t in terms)]
    holding = {i for i, s in enumerate(strings) if set(terms) & set(split_tokens(s))}
    assert holding <= set(rows)


def test_nothing_to_count_or_search() -> None:
    assert _token_counts([]).tolist() == []
    assert _rows_containing([], ["cat"]).tolist() == []
    assert _rows_containing(["cat"], []).tolist() == []
    assert _token_counts(["", "a"]).tolist() == [0, 1]
