"""What erasing a user takes is the content plane's business (turns, memories, caches);
the identity plane's route only needs something that does it."""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod

from tenancy.graph.schemas import ErasureResult


class UserEraser(ABC):
    """Implemented by the content plane and provided to the route by the app."""

    @abstractmethod
    async def erase(self, user_id: uuid.UUID, reason: str | None = None) -> ErasureResult: ...
