"""Rule extraction, table-driven in Chinese and English: what becomes a candidate,
the near misses that must not, time words, forget requests and confirmations."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tether.memories.enums import MemoryType, Polarity
from tether.memories.extraction import Candidate, TurnText, extract, summarize_session

WEDNESDAY = datetime(2024, 9, 4, 10, 0, tzinfo=UTC)
A, N = Polarity.AFFIRMED, Polarity.NEGATED
T = MemoryType


def turns(*texts: str, at: datetime = WEDNESDAY) -> list[TurnText]:
    """User turns, or assistant turns when prefixed with "A:", one minute apart."""
    return [
        TurnText(
            id=uuid.uuid4(),
            role="assistant" if text.startswith("A:") else "user",
            text=text.removeprefix("A:"),
            at=at + timedelta(minutes=index),
        )
        for index, text in enumerate(texts)
    ]


def only(texts: tuple[str, ...]) -> Candidate:
    found = extract(turns(*texts)).candidates
    assert len(found) == 1, [(c.predicate, c.object) for c in found]
    return found[0]


EXTRACTS = [
    # (turns, type, subject, predicate, object fragment, polarity)
    (("我超爱吃辣的",), T.PREFERENCE, "user", "likes", "辣", A),
    (("我不太喜欢看恐怖片",), T.PREFERENCE, "user", "likes", "恐怖片", N),
    (("我也没那么喜欢逛街",), T.PREFERENCE, "user", "likes", "逛街", N),
    (("嗯，所以我现在不吃辣了",), T.PREFERENCE, "user", "likes", "辣", N),
    (("我已经不玩王者了",), T.PREFERENCE, "user", "likes", "王者", N),
    (("太浪费时间，我不再喜欢打游戏了",), T.PREFERENCE, "user", "likes", "游戏", N),
    (("奶茶我已经戒了",), T.PREFERENCE, "user", "likes", "奶茶", N),
    (("喜剧还行，我最喜欢的是科幻片",), T.PREFERENCE, "user", "likes", "科幻片", A),
    (("嗨，第一次聊天，我叫林晓雨",), T.PROFILE, "user", "name", "林晓雨", A),
    (("我今年二十六岁",), T.PROFILE, "user", "age", "26", A),
    (("我在字节跳动工作，天天加班",), T.PROFILE, "user", "works_at", "字节跳动", A),
    (("我搬家了，现在住在珠海",), T.PROFILE, "user", "lives_in", "珠海", A),
    (("我是东北人",), T.PROFILE, "user", "from", "东北", A),
    (("以后叫我小雨就行",), T.INSTRUCTION, "user", "call_me", "小雨", A),
    (("以后别再跟我提我前男友了",), T.INSTRUCTION, "user", "avoid_topic", "前男友", A),
    (("我今天好难过",), T.EMOTION, "user", "feels", "难过", A),
    (("我上周去了一趟厦门",), T.EVENT, "user", "went", "厦门", A),
    (("下次请你喝奶茶哈哈",), T.COMMITMENT, "user", "promise", "奶茶", A),
    (("帮我记着，我对芒果过敏",), T.PROFILE, "user", "allergic_to", "芒果", A),
    (("我妈妈是中学老师",), T.FACT, "user.mother", "occupation", "老师", A),
    (("她最近迷上了乐高",), None, None, None, None, None),  # no one to refer to: nothing
    (("I love spicy food.",), T.PREFERENCE, "user", "likes", "spicy", A),
    (("I'm not really a fan of horror movies.",), T.PREFERENCE, "user", "likes", "horror", N),
    (("I don't like shopping that much either.",), T.PREFERENCE, "user", "likes", "shopping", N),
    (("Honestly I'm no longer into gaming at all.",), T.PREFERENCE, "user", "likes", "gaming", N),
    (("I've stopped drinking soda.",), T.PREFERENCE, "user", "likes", "soda", N),
    (
        ("Comedies are fine, but sci-fi is my favorite.",),
        T.PREFERENCE,
        "user",
        "likes",
        "sci-fi",
        A,
    ),
    (("My name is Alice Chen.",), T.PROFILE, "user", "name", "alice chen", A),
    (("I'm 41 years old.",), T.PROFILE, "user", "age", "41", A),
    (("Also we moved to Austin.",), T.PROFILE, "user", "lives_in", "austin", A),
    (("Please call me Dan, everyone does.",), T.INSTRUCTION, "user", "call_me", "dan", A),
    (("Please don't mention my ex anymore.",), T.INSTRUCTION, "user", "avoid_topic", "ex", A),
    (("I'm so stressed about my thesis defense.",), T.EMOTION, "user", "feels", "stressed", A),
    (("I visited Lisbon last week, it was gorgeous.",), T.EVENT, "user", "went", "lisbon", A),
    (
        ("I promise I'll send you the photos next time.",),
        T.COMMITMENT,
        "user",
        "promise",
        "photos",
        A,
    ),
    (("Remember that I'm allergic to peanuts.",), T.PROFILE, "user", "allergic_to", "peanuts", A),
    (("My mom is a retired teacher.",), T.FACT, "user.mother", "occupation", "teacher", A),
]


@pytest.mark.parametrize(
    ("texts", "kind", "subject", "predicate", "fragment", "polarity"), EXTRACTS
)
def test_statement_becomes_the_expected_candidate(
    texts, kind, subject, predicate, fragment, polarity
):
    found = extract(turns(*texts)).candidates
    if kind is None:
        assert found == []
        return
    candidate = only(texts)
    assert (candidate.memory_type, candidate.subject, candidate.predicate) == (
        kind,
        subject,
        predicate,
    )
    assert fragment in candidate.object
    assert candidate.polarity is polarity
    assert candidate.content
    assert 0 <= candidate.importance <= 1
    assert 0 <= candidate.confidence <= 1


NEAR_MISSES = [
    "你好呀",
    "谢谢你陪我聊天",
    "哈哈哈好吧",
    "你喜欢什么颜色？",
    "我喜欢的东西你都知道吗",
    "如果我是猫就好了，天天睡觉",
    "假如我中了彩票，我就去冰岛看极光",
    "我同事说她特别喜欢猫",
    "我朋友小王住在北京",
    "哈哈哈好吧，我喜欢你这个回答",
    "以前我很讨厌运动的",
    "王者荣耀，我超爱这个游戏",
    "早上不喝咖啡根本醒不过来",
    "我忘了带钥匙",
    "今天上班好累",
    "我是好人",
    "hey!",
    "thanks for the chat, bye!",
    "yeah ok",
    "what's your favorite movie?",
    "Do you know what I like?",
    "If I won the lottery I'd move to Iceland.",
    "I would love to visit Japan.",
    "My coworker says she loves cats.",
    "haha I love that.",
    "I like your answer.",
    "I used to hate exercise.",
    "Can't function without coffee in the morning.",
    "I forgot my keys again.",
    "Long shift today. I'm exhausted.",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_miss_extracts_nothing(text):
    extraction = extract(turns(text))
    assert extraction.candidates == []
    assert extraction.forget == []


def test_assistant_statements_alone_are_never_memories():
    assert extract(turns("A:我喜欢蓝色～", "A:I love Spirited Away.")).candidates == []


TIMES = [
    # (text, predicate, valid_from date, expires_at date)
    ("这周末我打算去爬莫干山", "plans", "2024-09-07", "2024-09-09"),
    ("跟你说，我下个月要去成都出差", "plans", "2024-10-01", "2024-11-01"),
    ("明天再跟你细说面试的事", "promise", "2024-09-05", "2024-09-06"),
    ("我上周去了一趟厦门", "went", "2024-08-26", None),
    ("This weekend I'm going camping with my brother.", "plans", "2024-09-07", "2024-09-09"),
    ("I'm flying to Tokyo next month for work!", "plans", "2024-10-01", "2024-11-01"),
    (
        "It's late, I'll tell you about the interview tomorrow.",
        "promise",
        "2024-09-05",
        "2024-09-06",
    ),
    ("I visited Lisbon last week.", "went", "2024-08-26", None),
]


@pytest.mark.parametrize(("text", "predicate", "valid_from", "expires"), TIMES)
def test_time_words_resolve_against_the_turn(text, predicate, valid_from, expires):
    candidate = only((text,))
    assert candidate.predicate == predicate
    assert candidate.valid_from is not None
    assert candidate.valid_from.date().isoformat() == valid_from
    assert (candidate.expires_at.date().isoformat() if candidate.expires_at else None) == expires


def test_relative_time_words_become_dates_in_the_content():
    assert "2024-09-07" in only(("这周末我打算去爬莫干山",)).content
    assert "this weekend" not in only(("This weekend I'm going camping.",)).content


def test_remember_request_raises_importance_and_confidence():
    for plain_text, asked_text in [
        ("我对芒果过敏", "帮我记着，我对芒果过敏"),
        ("I love jazz.", "Remember that I love jazz."),
    ]:
        plain, asked = only((plain_text,)), only((asked_text,))
        assert asked.importance > plain.importance
        assert asked.confidence > plain.confidence


def test_remember_request_no_rule_understands_is_kept_as_a_note():
    candidate = only(("记住：我的结婚纪念日是10月1号",))
    assert (candidate.predicate, candidate.importance) == ("note", 0.9)


def test_repeats_in_one_session_merge_into_one_candidate():
    session = turns("我爱喝咖啡", "早上好", "我真的超爱咖啡")
    (candidate,) = extract(session).candidates
    assert set(candidate.source_turn_ids) == {session[0].id, session[2].id}


def test_topic_chain_names_the_pet_just_introduced():
    found = {
        (c.subject, c.predicate, c.object)
        for c in extract(turns("我养了一只橘猫，叫土豆")).candidates
    }
    assert found == {("user", "has", "橘猫"), ("user.cat", "name", "土豆")}


def test_pronoun_refers_to_the_close_person_mentioned_before():
    session = turns(
        "My mom is a retired teacher.", "A:Teachers are heroes.", "She really likes gardening."
    )
    liked = [c for c in extract(session).candidates if c.predicate == "likes"]
    assert [(c.subject, c.object) for c in liked] == [("user.mother", "gardening")]


@pytest.mark.parametrize(
    ("texts", "terms"),
    [
        (("我喜欢喝奶茶，三分糖的那种", "忘了我刚才说的吧"), ("奶茶",)),
        (("I love hiking.", "Actually, please forget I said that."), ("hiking",)),
        (("把我前女友的事忘掉吧",), ("前女友",)),
        (("Please forget everything about my ex.",), ("ex",)),
        (("Oh and forget what I said about hiking",), ("hiking",)),
    ],
)
def test_forget_request_names_its_terms_and_drops_the_session_candidates(texts, terms):
    extraction = extract(turns(*texts))
    assert extraction.candidates == []
    (request,) = extraction.forget
    assert request.terms == terms


def test_forget_the_previous_statement_refers_to_its_turn():
    session = turns("我最近在看心理医生", "A:谢谢你告诉我。", "算了，这个别记")
    (request,) = extract(session).forget
    assert request.refers_to == (session[0].id,)
    assert request.source_turn_id == session[2].id


def test_forget_at_the_start_of_a_session_is_left_to_the_caller():
    (request,) = extract(turns("forget that")).forget
    assert (request.terms, request.refers_to) == ((), ())


@pytest.mark.parametrize(
    ("question", "answer", "fragment", "polarity"),
    [
        ("你是不是很喜欢健身呀？", "对呀", "健身", A),
        ("Do you enjoy cooking?", "Yes! Every weekend.", "cooking", A),
        ("Do you like horror movies?", "Nope, too scary.", "horror", N),
    ],
)
def test_confirmed_question_becomes_the_users_statement(question, answer, fragment, polarity):
    session = turns("A:" + question, answer)
    (candidate,) = extract(session).candidates
    assert fragment in candidate.object
    assert candidate.polarity is polarity
    assert candidate.confidence < 0.8
    assert candidate.source_turn_ids == (session[0].id, session[1].id)


def test_denied_identity_question_keeps_only_what_the_user_said():
    found = extract(turns("A:你是程序员吗？", "不是，我是设计师")).candidates
    assert [(c.predicate, c.object, c.polarity) for c in found] == [("occupation", "设计师", A)]


def test_summary_of_chit_chat_is_none():
    assert summarize_session(turns("早上好", "A:早上好！", "嗯嗯，晚安")) is None
    assert summarize_session([]) is None


def test_summary_names_topics_most_important_first_and_is_bounded():
    session = turns(
        "帮我记着，我对芒果过敏", "我喜欢听周杰伦的歌", "我今天好开心", "我上周去了一趟厦门"
    )
    full = summarize_session(session)
    assert full == "这次聊到：饮食和健康、喜好、心情、近况"
    assert "芒果" not in full  # the facts are memories of their own (decision 0055)
    summary = summarize_session(session, max_chars=12)
    assert summary is not None
    assert len(summary) <= 12
    assert summary.startswith("这次聊到：饮食和健康")


def test_summary_in_english_names_english_topics():
    summary = summarize_session(turns("I love spicy food.", "I live in Denver."))
    assert summary == "Talked about: where they live, likes and dislikes"
    pets = summarize_session(turns("My dog is called Mochi.", "My mum loves gardening."))
    assert pets == "Talked about: their dog, their mother"


def _turn(role: str, text: str) -> TurnText:
    import uuid
    from datetime import UTC, datetime

    from tether.memories.extraction import TurnText

    return TurnText(uuid.uuid4(), role, text, datetime(2026, 11, 29, 9, tzinfo=UTC))


@pytest.mark.parametrize(
    ("question", "answer", "content"),
    [
        ("Do you like coffee?", "Not really", "The user does not like coffee"),
        ("你喜欢喝咖啡吗？", "不太喜欢", "用户不喜欢咖啡"),
    ],
)
def test_a_no_to_a_question_about_a_liking_is_stored_as_the_negation(
    question: str, answer: str, content: str
) -> None:
    from tether.memories.extraction import extract

    [candidate] = extract([_turn("assistant", question), _turn("user", answer)]).candidates
    assert candidate.polarity.value == "negated"
    assert candidate.content == content


@pytest.mark.parametrize("text", ["Don't bring up my ex", "Do not mention my ex"])
def test_do_not_instructions_are_not_mistaken_for_questions(text: str) -> None:
    from tether.memories.extraction import extract

    [candidate] = extract([_turn("user", text)]).candidates
    assert candidate.memory_type.value == "instruction"
