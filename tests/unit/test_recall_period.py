"""The period a query names, in English and Chinese, and how the ranker uses it (0091)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from tether.recall.index import PartitionIndex, RankDoc
from tether.recall.period import TOLD_WITHIN, Period, named_period
from tether.recall.ranker import rank
from tether.recall.text import tokenize
from tether.recall.weights import RankWeights

NOW = datetime(2026, 12, 7, 15, tzinfo=UTC)  # a Monday


def day(year: int, month: int, date: int) -> datetime:
    return datetime(year, month, date, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("Which hobby did Sam take up in May 2023?", day(2023, 5, 1), day(2023, 6, 1)),
        ("What was Sam doing on December 4, 2023?", day(2023, 12, 4), day(2023, 12, 5)),
        ("what happened on 4 Dec 2023", day(2023, 12, 4), day(2023, 12, 5)),
        ("Which classes did Evan join in mid-August 2023?", day(2023, 8, 1), day(2023, 9, 1)),
        ("the end of summer 2023", day(2023, 6, 1), day(2023, 9, 1)),
        ("winter of 2023", day(2023, 12, 1), day(2024, 3, 1)),
        ("What did I read in 2022?", day(2022, 1, 1), day(2023, 1, 1)),
        ("2024-02-29", day(2024, 2, 29), day(2024, 3, 1)),
        ("What did I do last summer?", day(2026, 6, 1), day(2026, 9, 1)),
        ("last week", day(2026, 11, 30), day(2026, 12, 7)),
        ("yesterday", day(2026, 12, 6), day(2026, 12, 7)),
        ("this month", day(2026, 12, 1), day(2027, 1, 1)),
        ("last month", day(2026, 11, 1), day(2026, 12, 1)),
        ("last year", day(2025, 1, 1), day(2026, 1, 1)),
        ("我2023年5月做了什么？", day(2023, 5, 1), day(2023, 6, 1)),
        ("2023年5月4日我在哪", day(2023, 5, 4), day(2023, 5, 5)),
        ("2023年十二月", day(2023, 12, 1), day(2024, 1, 1)),
        ("2023年的夏天", day(2023, 6, 1), day(2023, 9, 1)),
        ("2022年读了什么书", day(2022, 1, 1), day(2023, 1, 1)),
        ("上个月去哪了", day(2026, 11, 1), day(2026, 12, 1)),
        ("上周末做了什么", day(2026, 11, 30), day(2026, 12, 7)),
        ("昨天吃了什么", day(2026, 12, 6), day(2026, 12, 7)),
        ("去年夏天", day(2025, 6, 1), day(2025, 9, 1)),
        ("去年", day(2025, 1, 1), day(2026, 1, 1)),
        ("今年", day(2026, 1, 1), day(2027, 1, 1)),
    ],
)
def test_a_named_period_is_pinned_to_the_calendar(
    text: str, start: datetime, end: datetime
) -> None:
    assert named_period(text, NOW) == Period(start, end)


@pytest.mark.parametrize(
    "text",
    [
        "What did I eat?",
        "I may go",
        "what have I been up to recently",
        "最近怎么样",
        "February 30, 2023",
        "以后再说",
        "call me at 2023",  # a number, not "in 2023"
    ],
)
def test_vague_or_impossible_dates_name_no_period(text: str) -> None:
    assert named_period(text, NOW) is None


def test_last_summer_said_during_summer_is_the_year_before() -> None:
    period = named_period("last summer", day(2026, 7, 10))
    assert period == Period(day(2025, 6, 1), day(2025, 9, 1))


def test_the_period_holds_what_was_told_within_a_week_after_it() -> None:
    period = Period(day(2023, 5, 1), day(2023, 6, 1))
    times = [day(2023, 4, 30), day(2023, 5, 1), day(2023, 6, 1) + TOLD_WITHIN - timedelta(1)]
    times.append(day(2023, 6, 1) + TOLD_WITHIN)
    micros = np.array([int(t.timestamp() * 1_000_000) for t in times], dtype=np.int64)
    assert period.holds(micros).tolist() == [False, True, True, False]


WEIGHTS = RankWeights(decay_floor=1.0, neighbour_weight=0.0)


def docs() -> list[RankDoc]:
    def memory(key: int, text: str, when: datetime) -> RankDoc:
        return RankDoc(key, tokenize(text), None, 1.0, 1.0, 1.0, when, None)

    return [
        memory(1, "We went camping by the lake", day(2023, 3, 10)),
        memory(2, "We went camping in the mountains", day(2023, 5, 12)),
        memory(3, "The weather is nice", day(2023, 5, 13)),
        memory(4, "我们去露营了，在湖边", day(2023, 3, 10)),
        memory(5, "我们去山里露营了", day(2023, 5, 12)),
    ]


def ranked(query: str, weights: RankWeights = WEIGHTS) -> list[tuple[int, float]]:
    index = PartitionIndex.build(docs(), weights)
    occurred = np.array([int(d.occurred_at.timestamp() * 1_000_000) for d in docs()])
    period = named_period(query, NOW)
    in_period = None if period is None else period.holds(occurred)
    results = rank(tokenize(query), None, index, 5, NOW, weights, in_period=in_period)
    return [(key, e.period) for key, e in results]


@pytest.mark.parametrize(
    ("query", "first", "second"),
    [("Where did we go camping in May 2023?", 2, 1), ("我们2023年5月去哪露营了？", 5, 4)],
)
def test_a_memory_of_the_period_named_ranks_first(query: str, first: int, second: int) -> None:
    results = ranked(query)
    assert results[0] == (first, 1.0 + WEIGHTS.period_boost)
    assert (second, 1.0) in results
    # Without a period the earlier memory ties and keeps partition order: first.
    assert ranked(query, replace(WEIGHTS, period_boost=0.0))[0][0] == second


def test_the_period_makes_no_irrelevant_memory_relevant() -> None:
    assert 3 not in [key for key, _ in ranked("Where did we go camping in May 2023?")]


def test_a_query_without_a_period_is_ranked_as_before() -> None:
    assert all(period == 1.0 for _, period in ranked("Where did we go camping?"))
