"""List operations as iterators over every item, fetching pages as they are needed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from tether_client._spec import Operation

if TYPE_CHECKING:
    from tether_client._core import AsyncClientCore, SyncClientCore, Timeout

T = TypeVar("T")


class SyncPager(Generic[T]):
    """``for memory in client.memories.list(rid): ...`` walks every page;
    ``.first_page()`` is one page (``.items``, ``.next_cursor``)."""

    def __init__(
        self,
        core: SyncClientCore,
        op: Operation[Any],
        params: dict[str, Any],
        timeout: Timeout,
    ) -> None:
        self._core, self._op, self._params, self._timeout = core, op, params, timeout

    def first_page(self) -> Any:
        return self._core.call(self._op, self._params, None, self._timeout)

    def pages(self) -> Iterator[Any]:
        params = dict(self._params)
        while True:
            page = self._core.call(self._op, params, None, self._timeout)
            yield page
            if not page.next_cursor or not page.items:
                return
            params["cursor"] = page.next_cursor

    def __iter__(self) -> Iterator[T]:
        for page in self.pages():
            yield from page.items

    def to_list(self) -> list[T]:
        return list(self)


class AsyncPager(Generic[T]):
    """``async for memory in client.memories.list(rid): ...`` walks every page;
    ``await ….first_page()`` is one page."""

    def __init__(
        self,
        core: AsyncClientCore,
        op: Operation[Any],
        params: dict[str, Any],
        timeout: Timeout,
    ) -> None:
        self._core, self._op, self._params, self._timeout = core, op, params, timeout

    async def first_page(self) -> Any:
        return await self._core.call(self._op, self._params, None, self._timeout)

    async def pages(self) -> AsyncIterator[Any]:
        params = dict(self._params)
        while True:
            page = await self._core.call(self._op, params, None, self._timeout)
            yield page
            if not page.next_cursor or not page.items:
                return
            params["cursor"] = page.next_cursor

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in page.items:
                yield item

    async def to_list(self) -> list[T]:
        return [item async for item in self]
