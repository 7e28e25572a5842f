"""Live streams (Server-Sent Events) as both clients read them: the messages,
parsed line by line, and where to resume after a dropped connection."""

import json
from dataclasses import dataclass
from typing import Any

# How long a stream may be silent before the client takes it as dropped: the
# server sends a heartbeat at least every 15 s.
STREAM_READ_TIMEOUT = 45.0
STREAM_CONNECT_TIMEOUT = 10.0


@dataclass(frozen=True)
class StreamMessage:
    """One change of a followed session.

    event: "appended" (data: the event, as GET returns it), "removed" (data:
        {"removedEventIds": [...], "revision": n}) or "deleted" (the session
        was deleted, expired or erased; the iteration ends after it).
    revision: the session revision after the change (an appended event's is
        the ETag its append answered); None for "deleted".
    """

    event: str
    data: Any
    revision: int | None


class StreamReader:
    """Lines in, messages out; remembers the last revision, which a
    reconnection resumes after (sent as Last-Event-ID)."""

    def __init__(self, after: int | None) -> None:
        self.last = after
        self.opened = False  # a stream of this session was answered once
        self._fields: dict[str, str] = {}
        self._data: list[str] = []

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.last is not None:
            headers["Last-Event-ID"] = str(self.last)
        return headers

    def restart(self) -> None:
        """A new connection: a message cut off by the old one is dropped."""
        self._fields = {}
        self._data = []

    def feed(self, line: str) -> StreamMessage | None:
        line = line.rstrip("\r\n")
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name in ("event", "id"):
            self._fields[name] = value
        return None

    def _dispatch(self) -> StreamMessage | None:
        fields, data = self._fields, self._data
        self.restart()
        if "event" not in fields:
            return None
        revision = int(fields["id"]) if fields.get("id") else None
        if revision is not None:
            self.last = revision
        return StreamMessage(fields["event"], json.loads("\n".join(data)), revision)

    def deleted_while_away(self, session_id: str) -> StreamMessage:
        """What a reconnection that finds the session gone reports."""
        return StreamMessage("deleted", {"sessionId": session_id, "revision": self.last}, None)
