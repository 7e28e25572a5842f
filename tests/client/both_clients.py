"""One test body for both clients: `open_client("sync" | "async", ...)`
gives SessionStateClient, or AsyncSessionStateClient driven from synchronous
code on an event loop of its own, with the same calls and the same results
(an async iterator comes back as an iterator of what it yielded)."""

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, Self

from session_state_client import AsyncSessionStateClient, SessionStateClient

CLIENTS = ["sync", "async"]


class BlockingAsyncClient:
    """AsyncSessionStateClient, each call run to its end on one loop."""

    def __init__(self, **options: Any) -> None:
        self._runner = asyncio.Runner()
        self.client = AsyncSessionStateClient(**options)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.client, name)

        def blocking(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            if inspect.isasyncgen(result):
                return iter(self._runner.run(_collected(result)))
            return self._runner.run(result)

        return blocking

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._runner.run(self.client.close())
        self._runner.close()


async def _collected(items: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in items]


def open_client(kind: str, **options: Any) -> SessionStateClient | BlockingAsyncClient:
    if kind == "sync":
        return SessionStateClient(**options)
    assert kind == "async", kind
    return BlockingAsyncClient(**options)
