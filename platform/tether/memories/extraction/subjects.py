"""Who a clause is about: the user, one of the user's close people or pets, or someone
else (whose reported likes are not the user's memories and are skipped)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tether.memories.extraction.normalize import first_word_tag

_ZH_RELATIONS = {
    "ex": "前男友|前女友|前任|前妻|前夫",
    "mother": "妈妈|老妈|母亲|妈",
    "father": "爸爸|老爸|父亲|爸",
    "husband": "老公|丈夫",
    "wife": "老婆|妻子|媳妇|太太",
    "boyfriend": "男朋友|男友",
    "girlfriend": "女朋友|女友",
    "son": "儿子",
    "daughter": "女儿",
    "kids": "孩子们|孩子|小孩|宝宝",
    "brother": "哥哥|弟弟",
    "sister": "姐姐|妹妹",
    "grandmother": "奶奶|外婆|姥姥",
    "grandfather": "爷爷|外公|姥爷",
    "best_friend": "闺蜜|死党|最好的朋友",
    # A pet may carry a breed or colour (橘猫), never any character: "我对猫毛过敏".
    "cat": "(?:[橘黑白花灰小胖老]|布偶|英短|美短|狸花|暹罗|加菲)?猫(?:咪)?(?!毛)",
    "dog": "(?:[小黑白黄大老]|柯基|柴犬|金毛|泰迪|哈士奇|边牧|拉布拉多|比熊)?狗(?:狗)?(?!毛)"
    "|柯基|柴犬|金毛|泰迪|哈士奇|边牧|拉布拉多|比熊",
}
_EN_RELATIONS = {
    "ex": r"ex(?:-(?:boyfriend|girlfriend|wife|husband|partner))?",
    "mother": "mom|mum|mother|mama",
    "father": "dad|father|papa",
    "husband": "husband|hubby",
    "wife": "wife",
    "boyfriend": "boyfriend|bf",
    "girlfriend": "girlfriend|gf",
    "partner": "partner|fiance|fiancee",
    "son": "son",
    "daughter": "daughter",
    "kids": "kids|children",
    "brother": "brother|little brother|big brother",
    "sister": "sister|little sister|big sister",
    "grandmother": "grandma|grandmother|nana",
    "grandfather": "grandpa|grandfather",
    "best_friend": "best friend|bestie",
    "cat": "cat|kitten|kitty|tabby|siamese|ragdoll|persian",
    "dog": "dog|puppy|pup|corgi|labrador|lab|poodle|beagle|husky|retriever|shiba|pug|terrier"
    "|dachshund|chihuahua",
}
_ZH_REL = "|".join(f"(?P<{k}>{v})" for k, v in _ZH_RELATIONS.items())
_EN_REL = "|".join(f"(?P<{k}>{v})" for k, v in _EN_RELATIONS.items())
_ZH_WE = re.compile(r"^(?:我们|咱们|咱俩|我俩)")
_ZH_MY_REL = re.compile(rf"^我(?:的|家)?(?:{_ZH_REL})(?:的)?")
# Without 我 only people count: "猫很可爱" is about cats, not the user's cat.
_ZH_PEOPLE = "|".join(f"(?P<{k}>{v})" for k, v in _ZH_RELATIONS.items() if k not in {"cat", "dog"})
_ZH_BARE_REL = re.compile(rf"^(?:{_ZH_PEOPLE})(?:的)?")
_ZH_ME = re.compile(r"^我(?:的|家|自己)?")
_ZH_PRONOUN = re.compile(r"^(?:他|她|它)(?:的)?")
# Someone else speaks or acts: a person's name (jieba tags nr*), a pronoun other than
# 我, or a word for people around the user. Other nouns start a topic-comment clause
# ("项目一直出问题") that no rule reads, so they need no list.
_ZH_OTHERS = re.compile(
    r"^(?:同事|朋友|同学|老板|领导|上司|室友|舍友|邻居|医生|老师|客户|网友|大家|别人|人家|有人|他们|她们"
    r"|表哥|表姐|表弟|表妹|堂哥|堂姐|亲戚|导师|教练|房东|队友|师傅|阿姨|叔叔|你|您)"
)
_ZH_NAME_TAGS = frozenset({"nr", "nrfg", "nrt"})
_EN_ME = re.compile(r"^(?:i|we)\b\s*", re.IGNORECASE)
_EN_MY_REL = re.compile(rf"^my (?:{_EN_REL})(?:'s)?\b\s*", re.IGNORECASE)
_EN_MY = re.compile(r"^(?:my|our)\b\s*", re.IGNORECASE)
_EN_PRONOUN = re.compile(r"^(?:he|she|his|her|its)\b\s*", re.IGNORECASE)
# English drops the subject only for the speaker: "Moved to Brighton", "Just turned 42".
_EN_IMPLICIT = re.compile(
    r"^(?:just |finally |also |recently |really |totally )*(?:moved|went|turned|visited|"
    r"going|flying|heading|loving|enjoying|digging|started|finished|got|passed|graduated|"
    r"quit|learning|studying|heading|leaving|getting)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Subject:
    label: str  # "user" or "user.<relation>"
    rest: str  # the clause after the subject words
    explicit: bool  # named in the clause, not carried over from the previous one
    relation_text: str = ""  # the words naming the relation, for the content sentence


_ZH_SELF_REPORT = re.compile(r"^(?:说|跟我说|告诉我)(?:他|她)(?:自己)?")
_EN_SELF_REPORT = re.compile(
    r"^(?:says|said|tells me|told me)\s+(?:that\s+)?(?:he|she)\s+", re.IGNORECASE
)


def _relation(match: re.Match[str]) -> tuple[str, str]:
    for key, value in match.groupdict().items():
        if value:
            return key, value
    return "", ""


def _someone_else(text: str) -> bool:
    if _ZH_OTHERS.match(text):
        return True
    word, tag = first_word_tag(text)
    return tag in _ZH_NAME_TAGS or (tag == "r" and not word.startswith(("我", "自己")))


def parse_zh(clause: str, topic: Subject | None, last_relation: Subject | None) -> Subject | None:
    """``topic`` is the previous clause's subject: Chinese chains clauses on one topic."""
    if match := _ZH_WE.match(clause):
        rest = clause[match.end() :]
        return None if _someone_else(rest) else Subject("user", rest, explicit=True)
    for pattern in (_ZH_MY_REL, _ZH_BARE_REL):
        if match := pattern.match(clause):
            key, text = _relation(match)
            rest = _ZH_SELF_REPORT.sub("", clause[match.end() :], count=1)
            return Subject(f"user.{key}", rest, True, text)
    if match := _ZH_PRONOUN.match(clause):
        if last_relation is None:
            return None
        return Subject(
            last_relation.label, clause[match.end() :], True, last_relation.relation_text
        )
    if match := _ZH_ME.match(clause):
        rest = clause[match.end() :]
        return None if _someone_else(rest) else Subject("user", rest, explicit=True)
    if _someone_else(clause):
        return None
    carried = topic or Subject("user", "", explicit=False)
    return Subject(carried.label, clause, carried.explicit, carried.relation_text)


def parse_en(clause: str, last_relation: Subject | None) -> Subject | None:
    if match := _EN_MY_REL.match(clause):
        key, text = _relation(match)
        rest = _EN_SELF_REPORT.sub("", clause[match.end() :], count=1)
        return Subject(f"user.{key}", rest, True, text)
    if match := _EN_ME.match(clause):
        return Subject("user", clause[match.end() :], explicit=True)
    if match := _EN_PRONOUN.match(clause):
        if last_relation is None:
            return None
        rest = clause[match.end() :]
        return Subject(last_relation.label, rest, True, last_relation.relation_text)
    if match := _EN_MY.match(clause):
        return Subject("user", clause[match.end() :], explicit=True)
    if _EN_IMPLICIT.match(clause):
        return Subject("user", clause, explicit=True)
    return None


_ZH_RELATION_NOUN = re.compile(rf"^(?:{_ZH_REL})$")
_EN_RELATION_NOUN = re.compile(rf"^(?:[\w-]+\s+){{0,2}}(?:{_EN_REL})s?$", re.IGNORECASE)


def relation_of(obj: str, zh: bool) -> Subject | None:
    """The close person or pet an object names (橘猫 → cat, "rescue dog" → dog), so
    that "叫土豆" / "His name is Biscuit" right after it is about that one."""
    match = (_ZH_RELATION_NOUN if zh else _EN_RELATION_NOUN).match(obj.strip())
    if match is None:
        return None
    key, _ = _relation(match)
    return Subject(f"user.{key}", "", True, obj.strip())
