"""A search by meaning's candidates, gathered the same way by both stores:
the keyword side and the nearest side at once, each on a connection of its
own (`Store.memory_candidates`). Each store passes its way to a connection
and its two queries (`postgresql_memory.py`, `sqlite_statements.py`)."""

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TypeVar

from .domain import MemoryCandidates, VectorQuery

Connection = TypeVar("Connection")


async def gather_memory_candidates(
    connect: Callable[[], AbstractAsyncContextManager[Connection]],
    keyword_ids: Callable[[Connection, str, str, str, int], Awaitable[list[tuple[int, float]]]],
    nearest: Callable[[Connection, str, str, VectorQuery], Awaitable[list[tuple[int, bytes]]]],
    app_name: str,
    user_id: str,
    question: str,
    keyword_limit: int,
    query: VectorQuery | None,
) -> MemoryCandidates:
    """The best keyword matches (at most `keyword_limit`, none for 0) and,
    for a vector query, the memories nearest it."""
    # Each side takes a connection and gives it back by itself: no search
    # holds one while waiting for another, so a busy pool cannot deadlock
    # (each side is a large part of a search at 100,000 memories; on SQLite
    # each pooled connection is its own thread, which lets go of the GIL
    # while it steps). Two snapshots, not one: a memory written between
    # them may be a candidate of one side only, which ranks it as a memory
    # that side alone found.

    async def keyword() -> list[tuple[int, float]]:
        if keyword_limit == 0:
            return []
        async with connect() as connection:
            return await keyword_ids(connection, app_name, user_id, question, keyword_limit)

    async def nearest_side() -> list[tuple[int, bytes]]:
        if query is None:
            return []
        async with connect() as connection:
            return await nearest(connection, app_name, user_id, query)

    found_by_keyword, found_nearest = await asyncio.gather(keyword(), nearest_side())
    return MemoryCandidates(found_by_keyword, found_nearest)
