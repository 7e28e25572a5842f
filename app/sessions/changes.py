"""What a committed write tells: a `Change` about a session, published to
whoever follows sessions (in a server, the live streams' ChangeHub of
app.streams.changes). Sessions know only this publisher, not the streams."""

from dataclasses import dataclass
from typing import Literal, Protocol

ChangeKind = Literal["created", "appended", "removed", "deleted", "expired", "changed"]


@dataclass(frozen=True)
class Change:
    """Something committed about a session: `user_id` None is every user of
    the app, `session_id` None every session of the user (an erasure)."""

    app_name: str
    user_id: str | None
    session_id: str | None
    kind: ChangeKind
    revision: int | None = None


class ChangePublisher(Protocol):
    def publish(self, change: Change) -> None:
        """Tells the followers, after the commit; never blocks, never raises."""
        ...


class NoFollowers:
    """The publisher where nothing follows sessions (a command's service)."""

    def publish(self, change: Change) -> None:
        pass
