"""The revision a client last saw of each session, sent back on its reads
(`minRevision`) so that a server serving reads from replicas answers with
that revision or a newer one: a client reads its own writes."""

import threading
from collections import OrderedDict
from typing import Any, Literal, TypeAlias

from session_state_client._constants import MAX_REMEMBERED_SESSIONS

# What a call does with its session's revision: a read sends the one seen
# ("bound") and, like a write ("note"), keeps the one its ETag reports if
# newer; a create starts the session again at its own ("restart"); a delete
# forgets it.
RevisionUse: TypeAlias = Literal["bound", "note", "restart", "forget"]


class SeenRevisions:
    """Session path -> the newest revision seen, for the most recently used
    `capacity` sessions (older ones are forgotten: their reads are then
    unbounded, as a new client's are). Used from many threads at once."""

    def __init__(self, capacity: int = MAX_REMEMBERED_SESSIONS) -> None:
        self.capacity = capacity
        self._revisions: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session: str) -> int | None:
        with self._lock:
            return self._revisions.get(session)

    def params(
        self, use: RevisionUse | None, session: str | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        """A read's query parameters with the session's seen revision."""
        if use != "bound" or session is None:
            return params
        revision = self.get(session)
        return params if revision is None else {**params, "minRevision": revision}

    def see(self, use: RevisionUse | None, session: str | None, revision: int | None) -> None:
        """Records what a successful call's answer reports."""
        if use is None or session is None:
            return
        with self._lock:
            if use == "forget":
                self._revisions.pop(session, None)
                return
            if revision is None:
                return
            known = self._revisions.get(session)
            # Answers of concurrent calls arrive in any order: keep the newest.
            if use == "restart" or known is None or revision > known:
                self._revisions[session] = revision
            self._revisions.move_to_end(session)
            while len(self._revisions) > self.capacity:
                self._revisions.popitem(last=False)
