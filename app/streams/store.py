"""The storage behind live streams: a session's changes by revision, and a
user's changes (tombstones of deleted sessions, live sessions by change
number). Implemented by both backends' stores (app.stores)."""

from typing import Protocol

from ..sessions.domain import ChangeCursor, SessionChanges, SessionKey, UserChanges


class ChangeLog(Protocol):
    async def read_user_changes(
        self,
        app_name: str,
        user_id: str,
        after_seq: int,
        after: ChangeCursor,
        limit: int,
        now: float,
    ) -> UserChanges:
        """In one snapshot: the user's tombstones after `after_seq` (at most
        `limit`, in order), the user's newest tombstone number (0: none),
        and at most `limit` of the user's live sessions changed after the
        cursor, in change order, below the horizon (UserChanges)."""
        ...

    async def prune_tombstones(self, before: float) -> int:
        """Deletes tombstones written before the time, except each user's
        newest; how many."""
        ...

    async def read_changes(
        self, key: SessionKey, after_revision: int, limit: int, max_bytes: int, now: float
    ) -> SessionChanges | None:
        """The session's changes after `after_revision`, in one snapshot: at
        most `limit` events and, after the first, `max_bytes` of event JSON,
        and the removals of events (stored with their ids by remove_events)
        up to the last event read or, when no more follow, the revision;
        None when there is no such session."""
        ...
