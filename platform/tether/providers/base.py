"""The two small interfaces every provider implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class ProviderError(Exception):
    """A provider failed, timed out or answered something unusable. Callers degrade."""


class EmbeddingProvider(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """A (len(texts), dimension) float32 array of L2-normalised rows."""
        ...

    async def aclose(self) -> None: ...


class ChatProvider(Protocol):
    """One chat completion whose answer must be JSON matching ``schema``."""

    async def complete_json(self, system: str, user: str, schema: dict[str, Any]) -> Any:
        """The parsed, schema-validated JSON answer; ProviderError on anything else."""
        ...

    async def aclose(self) -> None: ...
