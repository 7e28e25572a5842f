"""The storage of LangGraph's checkpoints: one implementation per backend
(app.langgraph.checkpoints.postgresql, app.langgraph.checkpoints.sqlite), one contract.
Each method is one transaction. `now` is the service's clock: a thread whose
expiry time is at or before it is missing for every reader."""

from collections.abc import Sequence
from typing import Protocol

from .domain import (
    AppCheckpointQuery,
    CheckpointOperation,
    CheckpointQuery,
    NewCheckpoint,
    PendingWrite,
    PruneStrategy,
    StoredCheckpoint,
    ThreadKey,
    ThreadListQuery,
    ThreadOwner,
    ThreadSummary,
)


class CheckpointStore(Protocol):
    async def put_checkpoint(
        self, key: ThreadKey, owner: ThreadOwner, checkpoint: NewCheckpoint, now: float
    ) -> None:
        """Stores the checkpoint (replacing one of the same id) and its new
        channel values (a value stored already is kept), creating the thread
        if needed and pushing its expiry out."""
        ...

    async def put_writes(
        self,
        key: ThreadKey,
        owner: ThreadOwner,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
        replace: bool,
        now: float,
    ) -> None:
        """Stores a task's writes; `replace`: a write of the same (task,
        index) is replaced, else kept."""
        ...

    async def apply_operations(
        self,
        key: ThreadKey,
        owner: ThreadOwner,
        operations: Sequence[CheckpointOperation],
        now: float,
    ) -> None:
        """Each operation as put_checkpoint or put_writes stores it, in order,
        in one transaction: all or none."""
        ...

    async def list_checkpoints(
        self, key: ThreadKey, query: CheckpointQuery, budget: int, now: float
    ) -> tuple[list[StoredCheckpoint], bool]:
        """Newest first, at most `query.limit`, and no more than fit in about
        `budget` bytes (always the first); and whether more may follow."""
        ...

    async def list_app_checkpoints(
        self, app_name: str, query: AppCheckpointQuery, budget: int, now: float
    ) -> tuple[list[StoredCheckpoint], bool]:
        """The checkpoints of the app's live threads (of `query.user_id` when
        given), newest id first, then thread id and namespace descending;
        paged as list_checkpoints."""
        ...

    async def list_threads(
        self, app_name: str, query: ThreadListQuery, now: float
    ) -> tuple[list[ThreadSummary], bool]:
        """The app's live threads (of `query.user_id` when given), latest
        write first, then thread id descending, at most `query.limit`; and
        whether more may follow. Ids and times only: nothing sealed is read."""
        ...

    async def thread_user(self, key: ThreadKey, now: float) -> str | None:
        """The user a live thread is recorded under; None: no such thread."""
        ...

    async def delete_thread(self, key: ThreadKey) -> bool:
        """False when there was no such thread."""
        ...

    async def copy_thread(self, source: ThreadKey, target: ThreadKey, now: float) -> str:
        """ "copied", "source_missing" or "target_exists" (nothing copied)."""
        ...

    async def prune(
        self, app_name: str, thread_ids: Sequence[str], strategy: PruneStrategy, now: float
    ) -> list[str]:
        """keep_latest: each namespace keeps its latest checkpoint, its
        writes and the values it has; delete: the threads go. Returns the
        threads that use a DeltaChannel and were left as they were."""
        ...

    async def delete_runs(self, app_name: str, run_ids: Sequence[str]) -> int:
        """Deletes the checkpoints of those runs with their writes; returns
        how many."""
        ...

    async def sweep_expired(self, now: float, batch: int) -> int:
        """Deletes threads expired at `now`, `batch` at a time; returns how many."""
        ...
