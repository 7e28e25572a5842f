"""Forking a session: a new session of the same user with copies of the
source's events up to a point (`SessionForking`, a part of
`SessionService`)."""

from dataclasses import replace

from ..core.errors import InvalidInput, InvocationNotFound, SessionAlreadyExists, SessionNotFound
from . import fork_points
from .domain import Expiry, ForkSource, SessionKey, SessionView
from .labels import Labels
from .service_base import SessionServiceBase


class SessionForking(SessionServiceBase):
    async def fork_session(
        self,
        key: SessionKey,
        new_session_id: str | None,
        up_to_event_id: str | None,
        expiry: Expiry | None,
        labels: Labels | None = None,
        before_invocation_id: str | None = None,
    ) -> SessionView:
        """A new session of the same user with copies of the events up to and
        including `up_to_event_id`, or those before the first event of the
        invocation `before_invocation_id` (neither: all), and the session
        state they leave; app and user state are shared. `expiry` None: the
        defaults; `labels` None: the source's."""
        now = self.clock()
        source = await self.store.read_session(key, now)
        if source is None:
            raise SessionNotFound.of(key)
        fork = ForkSource(key, None, None, labels)
        if up_to_event_id is not None:
            fork = await fork_points.up_to_event(self.store, source, up_to_event_id, now, labels)
        elif before_invocation_id is not None:
            fork = await fork_points.before_invocation(
                self.store, source, before_invocation_id, now, labels
            )
        new_key = SessionKey(key.app_name, key.user_id, new_session_id or self.new_id())
        outcome = await self.store.fork_session(
            fork,
            new_key.session_id,
            now,
            self._expiry(expiry, key.app_name, now),
            forget_expired_memories=self.forget_expired_memories,
        )
        if outcome == "source_missing":
            raise SessionNotFound.of(key)
        if outcome == "source_changed":
            # The event before the fork point was removed after the state was derived.
            if before_invocation_id is not None:
                raise InvocationNotFound.of(key, before_invocation_id)
            raise InvalidInput.no_such_event(["body", "upToEventId"], key)
        if outcome == "id_taken":
            raise SessionAlreadyExists.of(new_key)
        forked = await self._latest_session(new_key, num_recent_events=0)
        self._published(new_key, "created", forked.revision)
        # The copies may be many: the answer leaves them out rather than
        # showing an empty list that reads as "no events".
        return replace(forked, events_json=None)
