"""The first pass of a search by meaning: the memories whose sign bits are
nearest the question's (Hamming distance), counted in numpy over the user's
bits as the process keeps them.

Reading a user's bits costs a scan of one index entry per memory, the most
of a search at 100,000 memories if done every time. A user with at least
KEPT_ROWS memories of one model has them kept here after the first search, up to
KEPT_BYTES for all users (the least recently searched dropped first). Each
search asks the database for the newest row id of the user's memories of
that model (one index lookup): rows newer than those kept are read and
added, fewer means rows were deleted and all are read again. What that
misses (a row deleted and another stored under its id, as SQLite may do; a
row embedded out of id order, by a backlog that retries) is read again
within REFRESH_SECONDS; meanwhile the memory is still found by keywords,
and a kept row since deleted is dropped when its components are read.
Figures: docs/performance.md, "Memory search at 100,000 memories", fourth
round.
"""

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from .embedding import nearest_rows

KEPT_ROWS = 2_000
KEPT_BYTES = 64 * 1024 * 1024
REFRESH_SECONDS = 30.0

RowIds = npt.NDArray[np.int64]
BitRows = npt.NDArray[np.uint8]


class SignBitsSource(Protocol):
    """One database's memories of one user and model, with sign bits of one
    length (`app.memory.sqlite_memory`, `app.memory.postgresql_memory`)."""

    async def newest_row(self) -> int | None:
        """The highest row id, None for no row."""
        ...

    async def rows_after(self, row: int) -> tuple[RowIds, BitRows]:
        """Row ids above `row` and their sign bits (one row of bytes each)."""
        ...


@dataclass(frozen=True)
class _Kept:
    rows: RowIds
    bits: BitRows
    newest: int
    read_at: float

    @property
    def size(self) -> int:
        return int(self.rows.nbytes + self.bits.nbytes)


Key = tuple[str, str, str, int]


class KeptSignBits:
    """The sign bits of large memories of one database, kept per user and
    model (see the module). Entries are replaced, never changed in place, so
    searches that overlap read consistent arrays."""

    def __init__(
        self,
        *,
        kept_rows: int = KEPT_ROWS,
        kept_bytes: int = KEPT_BYTES,
        refresh_seconds: float = REFRESH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kept_rows = kept_rows
        self.kept_bytes = kept_bytes
        self.refresh_seconds = refresh_seconds
        self.clock = clock
        self._kept: OrderedDict[Key, _Kept] = OrderedDict()

    async def nearest(
        self,
        source: SignBitsSource,
        app_name: str,
        user_id: str,
        model: str,
        bits: bytes,
        keep: int,
    ) -> list[int]:
        """The `keep` row ids nearest `bits`, nearest first (ties by id)."""
        key = (app_name, user_id, model, len(bits))
        newest = await source.newest_row()
        if newest is None:
            self._kept.pop(key, None)
            return []
        kept = await self._current(source, key, newest)
        return nearest_rows(kept.rows, kept.bits, bits, keep)

    async def _current(self, source: SignBitsSource, key: Key, newest: int) -> _Kept:
        now = self.clock()
        kept = self._kept.get(key)
        if kept is not None and kept.newest <= newest and now - kept.read_at < self.refresh_seconds:
            if kept.newest < newest:
                rows, bits = await source.rows_after(kept.newest)
                kept = _Kept(
                    np.concatenate([kept.rows, rows]),
                    np.concatenate([kept.bits, bits]),
                    _newest(rows, kept.newest),
                    kept.read_at,
                )
        else:
            rows, bits = await source.rows_after(-1)
            kept = _Kept(rows, bits, _newest(rows, -1), now)
        self._keep(key, kept)
        return kept

    def _keep(self, key: Key, kept: _Kept) -> None:
        self._kept.pop(key, None)
        if len(kept.rows) < self.kept_rows or kept.size > self.kept_bytes:
            return
        self._kept[key] = kept
        total = sum(entry.size for entry in self._kept.values())
        while total > self.kept_bytes:
            _, dropped = self._kept.popitem(last=False)
            total -= dropped.size

    @property
    def kept_users(self) -> int:
        return len(self._kept)


def _newest(rows: RowIds, otherwise: int) -> int:
    # What was read, not what was asked before it: a row stored between the
    # two reads is then not read twice.
    return int(rows.max()) if len(rows) else otherwise
