"""The rules of LangGraph's checkpoints, between the routes and a
CheckpointStore: thread ownership and expiry, list pages within the response
limit, copy and prune outcomes as errors. No backend branches here."""

import time
from collections.abc import Callable, Sequence

from ...core.config import RESPONSE_OVERHEAD_BYTES
from ...core.end_user_tokens import acting_end_user
from ...core.errors import (
    CheckpointNotFound,
    DeltaChannelThread,
    Forbidden,
    ThreadAlreadyExists,
    ThreadNotFound,
)
from ...core.limits import Limits
from .domain import (
    AppCheckpointQuery,
    CheckpointOperation,
    CheckpointQuery,
    NewCheckpoint,
    NewWrites,
    PendingWrite,
    PruneStrategy,
    StoredCheckpoint,
    ThreadKey,
    ThreadListQuery,
    ThreadOwner,
    ThreadSummary,
    refuse_another_users_thread,
)
from .metrics import (
    CHECKPOINT_VALUES_SENT,
    CHECKPOINT_WRITES_STORED,
    CHECKPOINTS_PRUNED,
    CHECKPOINTS_STORED,
    THREADS_REMOVED,
)
from .store import CheckpointStore

# The user a thread is recorded under when its config names none
# (`configurable.user_id`).
DEFAULT_THREAD_USER = "langgraph"
SWEEP_BATCH_THREADS = 500


def new_writes(checkpoint_ns: str, checkpoint_id: str, writes: Sequence[PendingWrite]) -> NewWrites:
    """A task's writes with LangGraph's rule: special writes (error,
    interrupt, resume...: the negative indexes) replace, a task's ordinary
    writes are kept once."""
    replace = all(write.idx < 0 for write in writes)
    # One write per (task, index), as the rule leaves it when they come one
    # by one: the last one when they replace, else the first. (PostgreSQL's
    # upsert refuses to touch a row twice in one statement.)
    kept: dict[tuple[str, int], PendingWrite] = {}
    for write in writes:
        if replace or (write.task_id, write.idx) not in kept:
            kept[write.task_id, write.idx] = write
    return NewWrites(checkpoint_ns, checkpoint_id, list(kept.values()), replace)


class CheckpointService:
    def __init__(
        self,
        store: CheckpointStore,
        limits: Limits | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.clock = clock

    async def put_checkpoint(
        self, key: ThreadKey, owner: ThreadOwner, checkpoint: NewCheckpoint
    ) -> None:
        await self.store.put_checkpoint(key, owner, checkpoint, self.clock())
        CHECKPOINTS_STORED.inc()
        CHECKPOINT_VALUES_SENT.inc(len(checkpoint.new_values))

    async def put_writes(
        self,
        key: ThreadKey,
        owner: ThreadOwner,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
    ) -> None:
        new = new_writes(checkpoint_ns, checkpoint_id, writes)
        await self.store.put_writes(
            key, owner, checkpoint_ns, checkpoint_id, new.writes, new.replace, self.clock()
        )
        CHECKPOINT_WRITES_STORED.inc(len(new.writes))

    async def apply_operations(
        self, key: ThreadKey, owner: ThreadOwner, operations: Sequence[CheckpointOperation]
    ) -> None:
        """A thread's puts of checkpoints and writes in order, all or none
        (a LangGraph client's group commit: what a superstep writes)."""
        if len(operations) == 1:
            # One alone is its single route's write, which the stores do in
            # one statement when the thread is live (a batch opens it first).
            await self._apply_one(key, owner, operations[0])
            return
        await self.store.apply_operations(key, owner, operations, self.clock())
        for operation in operations:
            if isinstance(operation, NewCheckpoint):
                CHECKPOINTS_STORED.inc()
                CHECKPOINT_VALUES_SENT.inc(len(operation.new_values))
            else:
                CHECKPOINT_WRITES_STORED.inc(len(operation.writes))

    async def _apply_one(
        self, key: ThreadKey, owner: ThreadOwner, operation: CheckpointOperation
    ) -> None:
        if isinstance(operation, NewCheckpoint):
            await self.put_checkpoint(key, owner, operation)
            return
        await self.store.put_writes(
            key,
            owner,
            operation.checkpoint_ns,
            operation.checkpoint_id,
            operation.writes,
            operation.replace,
            self.clock(),
        )
        CHECKPOINT_WRITES_STORED.inc(len(operation.writes))

    async def get_checkpoint(
        self, key: ThreadKey, checkpoint_ns: str, checkpoint_id: str
    ) -> StoredCheckpoint:
        found = await self.list_checkpoints(
            key, CheckpointQuery(checkpoint_ns=checkpoint_ns, checkpoint_id=checkpoint_id, limit=1)
        )
        if not found[0]:
            raise CheckpointNotFound.of(checkpoint_id)
        return found[0][0]

    async def list_checkpoints(
        self, key: ThreadKey, query: CheckpointQuery
    ) -> tuple[list[StoredCheckpoint], bool]:
        """Newest first, and whether more may follow; a page ends early to fit
        one response."""
        await self._refuse_another_users(key)
        return await self.store.list_checkpoints(key, query, self._page_budget(), self.clock())

    async def list_app_checkpoints(
        self, app_name: str, query: AppCheckpointQuery
    ) -> tuple[list[StoredCheckpoint], bool]:
        """The checkpoints of the app's live threads, newest first (LangGraph's
        list with no config); an end user lists only their own threads' (the
        query must name them, as for the list of threads)."""
        user = acting_end_user()
        if user is not None and query.user_id != user.user_id:
            raise Forbidden(
                "an end-user token lists only its own user's checkpoints: userId must be its user"
            )
        return await self.store.list_app_checkpoints(
            app_name, query, self._page_budget(), self.clock()
        )

    def _page_budget(self) -> int:
        """The bytes of stored checkpoints a page may hold: one response's,
        less a third (base64 makes values a third larger on the wire)."""
        return (self.limits.max_response_bytes - RESPONSE_OVERHEAD_BYTES) * 3 // 4

    async def list_threads(
        self, app_name: str, query: ThreadListQuery
    ) -> tuple[list[ThreadSummary], bool]:
        """The app's live threads, latest write first; an end user lists only
        their own (the query must name them: the list is theirs by asking)."""
        user = acting_end_user()
        if user is not None and query.user_id != user.user_id:
            raise Forbidden(
                "an end-user token lists only its own user's threads: userId must be its user"
            )
        return await self.store.list_threads(app_name, query, self.clock())

    async def delete_thread(self, key: ThreadKey) -> None:
        await self._refuse_another_users(key)
        if await self.store.delete_thread(key):
            THREADS_REMOVED.labels("deleted").inc()

    async def copy_thread(self, source: ThreadKey, target_thread_id: str) -> None:
        target = ThreadKey(source.app_name, target_thread_id)
        await self._refuse_another_users(source)
        outcome = await self.store.copy_thread(source, target, self.clock())
        if outcome == "source_missing":
            raise ThreadNotFound.of(source.thread_id)
        if outcome == "target_exists":
            raise ThreadAlreadyExists.of(target_thread_id)

    async def _refuse_another_users(self, key: ThreadKey) -> None:
        """Forbidden when an end user acts and the thread is another user's
        (a missing thread is left to the operation: nothing to reveal)."""
        user = acting_end_user()
        if user is not None:
            recorded = await self.store.thread_user(key, self.clock())
            if recorded is not None:
                refuse_another_users_thread(recorded, user.user_id)

    async def prune(
        self, app_name: str, thread_ids: Sequence[str], strategy: PruneStrategy
    ) -> None:
        if not thread_ids:
            return
        refused = await self.store.prune(app_name, thread_ids, strategy, self.clock())
        if refused:
            raise DeltaChannelThread.of(refused)

    async def delete_runs(self, app_name: str, run_ids: Sequence[str]) -> None:
        if run_ids:
            CHECKPOINTS_PRUNED.labels("runs").inc(await self.store.delete_runs(app_name, run_ids))
