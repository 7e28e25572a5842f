"""The storage side of what is asked of every feature at once: erasing a user
or an app, and sweeping expired sessions. Implemented by both backends'
stores (app.stores); which tables each asks is in lifecycle.tables."""

from typing import Protocol

from ..sessions.domain import Erased, SessionKey, Swept


class LifecycleStore(Protocol):
    # -- erasure -------------------------------------------------------------
    # Sessions go with their events in transactions of at most `batch_events`
    # events (a bigger session alone in its own), so an erasure never holds
    # many rows locked and a session is never left with part of its events;
    # the scope's state and memories go last, in one transaction.

    async def erase_user(self, app_name: str, user_id: str, batch_events: int) -> Erased:
        """Everything of the user in the app: sessions, events, user state,
        memories (forgotten ids included)."""
        ...

    async def erase_app(self, app_name: str, batch_events: int) -> Erased:
        """Everything of the app: every user's sessions, events, user state and
        memories, and the app state."""
        ...

    # -- the sweeper ---------------------------------------------------------

    async def sweep_expired(
        self,
        now: float,
        batch_events: int,
        *,
        with_memories: bool,
        expired: list[SessionKey] | None = None,
    ) -> Swept | None:
        """Deletes the sessions expired at `now` with their events (and, if
        asked, their memories), a transaction per batch as an erasure does,
        each leaving an `expired` tombstone (and added to `expired` once
        committed); None when another process is sweeping this database."""
        ...

    async def count_expired(self, now: float) -> int:
        """Expired sessions not deleted yet."""
        ...
