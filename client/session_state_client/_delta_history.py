"""LangGraph's delta-channel history (`get_delta_channel_history`, beta in
langgraph 1.2), read from pages of the thread's checkpoints.

A `DeltaChannel` keeps only a marker in each checkpoint, and LangGraph
rebuilds its value whenever it loads one. It walks from the checkpoint's
parent to older ancestors, gathering the channel's pending writes, until an
ancestor holds the value (a snapshot, one every `snapshot_frequency`
updates, 100 by default). The base saver asks for each ancestor by id: one
request per step of the walk, on every run of a graph. Here the ancestors
come in pages of the checkpoints older than the one asked for, newest
first, so a walk of a hundred ancestors is two requests. The walk still
follows parent links, so a fork's branches only cost the bytes of their
checkpoints.

What is returned is the base saver's answer: for each channel, the writes
of the ancestors between the checkpoint and the seed, oldest first, in each
checkpoint's `pending_writes` order, and the seed if an ancestor holds one.
"""

from collections.abc import Generator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
)

# Checkpoints a page of the walk reads: LangGraph's default snapshot
# frequency, so that most walks take one page.
PAGE = 100


class DeltaWalk:
    """The channels' writes and seeds, gathered ancestor by ancestor from
    the newest."""

    def __init__(self, channels: Sequence[str]) -> None:
        self.channels = list(channels)
        self.remaining = set(self.channels)
        self._writes: dict[str, list[PendingWrite]] = {channel: [] for channel in self.channels}
        self._seeds: dict[str, Any] = {}

    def visit(self, ancestor: CheckpointTuple) -> None:
        # Newest first: the walk is reversed at the end.
        for write in reversed(ancestor.pending_writes or []):
            if write[1] in self.remaining:
                self._writes[write[1]].append(write)
        values = ancestor.checkpoint["channel_values"]
        for channel in [channel for channel in self.channels if channel in self.remaining]:
            if channel in values:
                self._seeds[channel] = values[channel]
                self.remaining.discard(channel)

    def history(self) -> dict[str, DeltaChannelHistory]:
        found: dict[str, DeltaChannelHistory] = {}
        for channel in self.channels:
            entry: DeltaChannelHistory = {"writes": list(reversed(self._writes[channel]))}
            if channel in self._seeds:
                entry["seed"] = self._seeds[channel]
            found[channel] = entry
        return found


class Ancestors:
    """The checkpoints of the target's thread and namespace read so far,
    by id, and where the next page starts. A checkpoint's parent is in its
    own thread and namespace: the saver builds `parent_config` from them."""

    def __init__(self, target: RunnableConfig) -> None:
        configurable = target["configurable"]
        # The thread and namespace only: a checkpoint id would list just it.
        self.listing: RunnableConfig = {
            "configurable": {
                "thread_id": configurable["thread_id"],
                "checkpoint_ns": configurable.get("checkpoint_ns", ""),
            }
        }
        self.before: RunnableConfig = target
        self.exhausted = False
        self._by_id: dict[str, CheckpointTuple] = {}

    def get(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._by_id.get(get_checkpoint_id(config) or "")

    def take(self, page: list[CheckpointTuple]) -> None:
        for found in page:
            self._by_id[found.config["configurable"]["checkpoint_id"]] = found
        if page:
            self.before = page[-1].config
        self.exhausted = len(page) < PAGE


# What the walk asks its driver for: the saver's list(config, before=...,
# limit=PAGE). A page of the checkpoints of `listing` older than `before`,
# newest first; or, with no `before` and a config naming a checkpoint, that
# checkpoint alone (or nothing).
PageRequest = tuple[RunnableConfig, RunnableConfig | None]
Walking = Generator[PageRequest, list[CheckpointTuple], None]


def ancestry(target: CheckpointTuple, walk: DeltaWalk) -> Walking:
    """Walks from `target`'s parent until `walk` needs nothing more or the
    chain ends, asking for a page whenever the next ancestor is not read
    yet; the sync and async savers answer with their own list."""
    ancestors = Ancestors(target.config)
    cursor = target.parent_config
    while cursor is not None and walk.remaining:
        found = ancestors.get(cursor)
        if found is None and not ancestors.exhausted:
            ancestors.take((yield ancestors.listing, ancestors.before))
            continue
        if found is None:
            # In no page: a parent whose id sorts after its child's (put by
            # hand, not by LangGraph's time-ordered ids). By id, as the base
            # walk reads every ancestor.
            alone = yield cursor, None
            if not alone:
                return
            found = alone[0]
        walk.visit(found)
        cursor = found.parent_config


def next_request(walking: Walking, page: list[CheckpointTuple] | None) -> PageRequest | None:
    """The walk's next page request once `page` is given (None: start), or
    None once it is done."""
    try:
        return next(walking) if page is None else walking.send(page)
    except StopIteration:
        return None
