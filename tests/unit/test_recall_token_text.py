"""A read from rows for one query counts and searches the memories' token strings in
bulk (cold._TokenText); it must agree with splitting them one by one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.recall.cold import _token_counts, _TokenText
from tether.recall.wire import split_tokens

TOKEN = st.sampled_from(["cat", "猫", "call", "喜欢", "", "a b", "ca"])
STRINGS = st.lists(st.lists(TOKEN, max_size=5).map(" ".join), max_size=30)


@settings(max_examples=300, deadline=None)
@given(strings=STRINGS, terms=st.lists(st.sampled_from(["cat", "猫", "ca", "b", "喜"]), max_size=3))
def test_counts_and_candidates_agree_with_splitting_each_string(
    strings: list[str], terms: list[str]
) -> None:
    text = _TokenText.of(strings)
    assert text is not None
    assert text.counts().tolist() == [len(split_tokens(s)) for s in strings]
    assert text.counts().tolist() == _token_counts(strings).tolist()
    rows = text.rows_containing(terms).tolist()
    assert rows == sorted(set(rows))
    # Every string holding a term as a token is a candidate (and only those holding it
    # as text are).
    holding = [i for i, s in enumerate(strings) if set(terms) & set(split_tokens(s))]
    assert set(holding) <= set(rows)
    assert rows == [i for i, s in enumerate(strings) if any(t in s for t in terms)]


def test_a_string_with_a_newline_is_not_read_in_bulk() -> None:
    assert _TokenText.of(["cat", "line\nbreak"]) is None
    empty = _TokenText.of([])
    assert empty is not None
    assert empty.counts().tolist() == []
    assert empty.rows_containing(["cat"]).tolist() == []
    assert np.array_equal(_TokenText.of([""]).counts(), [0])  # type: ignore[union-attr]
