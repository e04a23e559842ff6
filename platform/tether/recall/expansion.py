"""Rule-based query expansion (decision 0054): a plain question often shares no word with
the memory that answers it ("What is my job?" / "The user works as a nurse"; "Can I eat
peanut butter?" / 用户对花生过敏), within a language or across the two. Each group lists
words that should find each other; a query term of a group brings the group's other
terms, so BM25 scores them too. Small by design: one dict lookup per query term, and
groups only where a question and its evidence are commonly worded apart."""

from __future__ import annotations

from collections.abc import Sequence

from tether.recall.text import tokenize

# A query term brings at most this many terms of its groups, the query's own first.
MAX_ADDED = 24

# Words that mean the same, within a language or across the two: each finds the others.
_SYNONYMS = (
    "job jobs work works working occupation career profession 工作 职业 上班",
    "drink drinks drinking beverage 喝 饮料",
    "tea 茶 绿茶",
    "coffee 咖啡",
    "eat eating food 吃 食物",
    "allergy allergic allergies 过敏",
    "peanut peanuts 花生 花生酱",
    "spicy 辣 麻辣",
    "live lives living 住 住在",
    "home hometown 老家 家乡",
    "pet pets 宠物",
    "dog dogs puppy 狗 狗狗 狗叫",
    "cat cats kitten 猫 猫咪 猫叫",
    "name named called 名字 叫做",
    "birthday 生日",
    "hobby hobbies 爱好 兴趣",
    "study studies school university 学习 学校 大学",
    "nurse 护士",
    "doctor 医生",
    "teacher 老师",
    "engineer 工程师",
)
# What a question word is answered by: "What should I drink?" by "loves green tea".
# One way only: a memory about tea is not about drinks in general.
_ENTAILS = (
    (
        "job work occupation career profession 工作 职业",
        "nurse doctor teacher engineer 护士 医生 老师 工程师 company 公司",
    ),
    ("drink drinks 喝 饮料", "tea coffee juice milk water 茶 绿茶 咖啡 奶茶 果汁 牛奶"),
    ("eat eating food 吃 食物", "allergic allergy 过敏 忌口 diet vegetarian vegan 吃素"),
    ("pet pets 宠物", "dog cat 狗 猫 狗叫 猫叫"),
)


def _terms(words: str) -> list[str]:
    return list(dict.fromkeys(tokenize(words)))


def _index() -> dict[str, tuple[str, ...]]:
    related: dict[str, list[str]] = {}

    def add(term: str, others: Sequence[str]) -> None:
        known = related.setdefault(term, [])
        known += [t for t in others if t != term and t not in known]

    for group in _SYNONYMS:
        terms = _terms(group)
        for term in terms:
            add(term, terms)
    for asked, answers in _ENTAILS:
        for term in _terms(asked):
            add(term, _terms(answers))
    return {term: tuple(others) for term, others in related.items()}


_RELATED = _index()


def expand(tokens: Sequence[str]) -> list[str]:
    """``tokens`` (kept first, in order) and the terms their groups add, deduplicated."""
    terms = list(dict.fromkeys(tokens))
    seen = set(terms)
    added = 0
    for token in list(terms):
        for related in _RELATED.get(token, ()):
            if related not in seen and added < MAX_ADDED:
                terms.append(related)
                seen.add(related)
                added += 1
    return terms
