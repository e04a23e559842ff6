"""Plan dates resolved against when they were said, and the recap's text rules, in
Chinese and English."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from tether.recap.dates import plan_date
from tether.recap.rules import cancels, deferred, is_question, trajectory, valence

# A Wednesday.
SAID = datetime(2026, 11, 4, 15, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("下周五我要考雅思", date(2026, 11, 13), date(2026, 11, 13)),
        ("明天要去看牙医", date(2026, 11, 5), date(2026, 11, 5)),
        ("后天我们去爬山", date(2026, 11, 6), date(2026, 11, 6)),
        ("下个月搬家", date(2026, 12, 1), date(2026, 12, 31)),
        ("两周后去面试", date(2026, 11, 18), date(2026, 11, 18)),
        ("三天以后交论文", date(2026, 11, 7), date(2026, 11, 7)),
        ("下下周三体检", date(2026, 11, 18), date(2026, 11, 18)),
        ("12月3日去北京", date(2026, 12, 3), date(2026, 12, 3)),
        ("I have an exam next Friday", date(2026, 11, 13), date(2026, 11, 13)),
        ("I'm seeing the dentist tomorrow", date(2026, 11, 5), date(2026, 11, 5)),
        ("I start the new job in two weeks", date(2026, 11, 18), date(2026, 11, 18)),
        ("we fly out in 3 days", date(2026, 11, 7), date(2026, 11, 7)),
        ("my sister's wedding is on March 3", date(2027, 3, 3), date(2027, 3, 3)),
        ("I'm moving next month", date(2026, 12, 1), date(2026, 12, 31)),
        ("we want to marry in 2027", date(2027, 1, 1), date(2027, 12, 31)),
    ],
)
def test_plan_dates_resolve_against_when_they_were_said(text: str, first: date, last: date) -> None:
    when = plan_date(text, SAID)
    assert when.start is not None, text
    assert when.end is not None
    assert when.start.date() == first
    assert (when.end.date().toordinal() - 1) == last.toordinal()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("以后想去冰岛看极光", "vague"),
        ("I want to visit Iceland someday", "vague"),
        ("几天后再说", "vague"),
        ("我想学钢琴", "none"),
        ("2031-05-01 我要退休", "far_future"),
        ("I'll retire in 5 years", "far_future"),
        ("I plan to retire in 2040", "far_future"),
        ("2035年去火星", "far_future"),
        ("2月30日去看演唱会", "none"),
    ],
)
def test_vague_far_and_impossible_dates_stay_text(text: str, why: str) -> None:
    when = plan_date(text, SAID)
    assert when.start is None
    assert when.end is None
    assert when.unresolved == why


def test_a_later_cancellation_must_share_the_plan_s_subject() -> None:
    assert cancels("杭州的旅行取消了", "去杭州旅行", "用户打算去杭州旅行")
    assert cancels("The Paris trip got cancelled.", "go on a trip to Paris", "")
    assert cancels("we called off the party", "throw a party", "")
    assert not cancels("会议取消了", "去杭州旅行", "用户打算去杭州旅行")
    assert not cancels("I went to Paris", "go on a trip to Paris", "")


def test_open_topics_and_feelings() -> None:
    assert deferred("这个下次再聊吧")
    assert deferred("Let's talk about it later")
    assert deferred("Let's talk about my landlord later.")
    assert not deferred("我今天很开心")
    assert is_question("你觉得我该换工作吗")
    assert is_question("What should I do?")
    assert valence("焦虑") == -1
    assert valence("不开心") == -1
    assert valence("happy") == 1
    assert trajectory([-1, 0, 1]) == "improving"
    assert trajectory([1, -1]) == "worsening"
    assert trajectory([-1, -1]) == "steady"
    assert trajectory([]) is None
