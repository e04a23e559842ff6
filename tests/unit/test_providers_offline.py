"""The offline USE-multilingual embedder: real model, real vectors. Chinese and English
must land near each other by meaning, the model must load once per process, and
encoding must leave the event loop free."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from tether.providers import offline
from tether.providers.factory import EmbeddingConfig, create_embedding_provider
from tether.providers.offline import OfflineEmbeddingProvider


@pytest.fixture(scope="module")
def provider() -> OfflineEmbeddingProvider:
    made = OfflineEmbeddingProvider(batch_size=4)
    made.warm_up()
    return made


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


async def test_vectors_are_unit_float32_rows_of_512(provider: OfflineEmbeddingProvider) -> None:
    vectors = await provider.embed(["我喜欢吃辣", "I like spicy food", ""])
    assert provider.name == "use-multilingual-v3"
    assert provider.dimension == 512
    assert vectors.shape == (3, 512)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_chinese_and_english_meet_by_meaning(provider: OfflineEmbeddingProvider) -> None:
    spicy_zh, spicy_en, bank_en, bank_zh, weather_zh = await provider.embed(
        ["我喜欢吃辣", "I like spicy food", "I work at a bank", "我在银行工作", "今天天气很好"]
    )
    assert cosine(spicy_zh, spicy_en) > cosine(spicy_zh, bank_en) + 0.3
    assert cosine(bank_en, bank_zh) > cosine(bank_en, spicy_zh) + 0.3
    assert cosine(spicy_zh, spicy_en) > cosine(spicy_zh, weather_zh)


async def test_batches_keep_order_and_match_one_big_batch(
    provider: OfflineEmbeddingProvider,
) -> None:
    texts = [f"第{i}句：the number {i} sentence" for i in range(11)]
    batched = await provider.embed(texts)  # batch_size 4: three encode jobs
    whole = await OfflineEmbeddingProvider(batch_size=64).embed(texts)
    np.testing.assert_allclose(batched, whole, atol=1e-5)
    single = await provider.embed([texts[7]])
    np.testing.assert_allclose(batched[7], single[0], atol=1e-5)


async def test_empty_input_gives_an_empty_matrix(provider: OfflineEmbeddingProvider) -> None:
    vectors = await provider.embed([])
    assert vectors.shape == (0, 512)
    assert vectors.dtype == np.float32


async def test_encoding_runs_off_the_event_loop(provider: OfflineEmbeddingProvider) -> None:
    texts = [f"这是第{i}个比较长的测试句子, with some English words as well" for i in range(400)]
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    await OfflineEmbeddingProvider(batch_size=400).embed(texts)  # one long encode job
    elapsed = time.perf_counter() - started
    task.cancel()
    # A blocked loop would tick at most once; a free one ticks all along.
    assert elapsed > 0.1
    assert ticks >= 5


def test_concurrent_first_use_loads_the_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offline, "_model", None)
    real_build = offline._build_model
    builds = 0

    def counting_build() -> offline._Encoder:
        nonlocal builds
        builds += 1
        return real_build()

    monkeypatch.setattr(offline, "_build_model", counting_build)
    loaded: list[object] = []
    threads = [
        threading.Thread(target=lambda: loaded.append(offline.load_model())) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builds == 1
    assert len(loaded) == 4
    assert all(model is loaded[0] for model in loaded)


def test_factory_builds_the_offline_default() -> None:
    made = create_embedding_provider(EmbeddingConfig())
    assert isinstance(made, OfflineEmbeddingProvider)
    assert made.dimension == 512


def test_factory_refuses_a_dimension_the_offline_model_does_not_have() -> None:
    with pytest.raises(ValueError, match="512"):
        create_embedding_provider(EmbeddingConfig(kind="offline", dimension=768))


def test_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        OfflineEmbeddingProvider(batch_size=0)


async def test_concurrent_queries_are_merged_and_each_gets_its_own_vector(
    provider: OfflineEmbeddingProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = [f"问题{i}: what did we eat in city number {i}?" for i in range(12)]
    alone = [(await provider.embed([q]))[0] for q in queries]
    encodes: list[int] = []
    real = offline._encode_batch

    def counting(texts: list[str]) -> np.ndarray:
        encodes.append(len(texts))
        return real(texts)

    monkeypatch.setattr(offline, "_encode_batch", counting)
    together = await asyncio.gather(*(provider.embed([q]) for q in queries))
    # Requests that arrive before the encode thread is free go in one encode.
    assert sum(encodes) == 12
    assert len(encodes) <= 2
    for own, merged in zip(alone, together, strict=True):
        assert merged.shape == (1, 512)
        np.testing.assert_allclose(merged[0], own, atol=1e-5)


async def test_a_caller_that_gives_up_does_not_disturb_the_others(
    provider: OfflineEmbeddingProvider,
) -> None:
    first = asyncio.ensure_future(provider.embed(["running now"]))
    await asyncio.sleep(0)
    doomed = asyncio.ensure_future(provider.embed(["abandoned"]))
    kept = asyncio.ensure_future(provider.embed(["kept"]))
    await asyncio.sleep(0)
    doomed.cancel()
    vectors = await kept
    assert vectors.shape == (1, 512)
    assert (await first).shape == (1, 512)
    assert doomed.cancelled()


async def test_an_encoder_failure_reaches_every_merged_caller(
    provider: OfflineEmbeddingProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(texts: list[str]) -> np.ndarray:
        raise RuntimeError("the model failed")

    monkeypatch.setattr(offline, "_encode_batch", broken)
    outcomes = await asyncio.gather(
        *(provider.embed([f"q{i}"]) for i in range(5)), return_exceptions=True
    )
    assert all(isinstance(o, RuntimeError) for o in outcomes)
    monkeypatch.undo()
    assert (await provider.embed(["works again"])).shape == (1, 512)
