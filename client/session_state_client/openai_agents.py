"""The OpenAI Agents SDK's `Session` protocol on a session-state server
(extra `openai-agents`): conversation history shared by every agent process
that names the same session, with the server's revisions, idempotent
retries, auth and limits.

Each item is one event of the session, stored as

    {"id": "<uuid4>", "author": "<role>", "invocationId": "openai-agents",
     "item": <the item, verbatim>}

with the author taken from the item's `role` ("user", "assistant",
"system", "developer"); items without one are "tool" for tool outputs
(`type` ending in "_output") and "assistant" otherwise (tool calls,
reasoning). The server gives each event its timestamp.
"""

import contextlib
import uuid
from typing import TYPE_CHECKING, Any, cast

from session_state_client._extras import extra_missing
from session_state_client._paging import async_pages

try:
    from agents import SessionSettings
    from agents.items import TResponseInputItem
    from agents.memory import Session, await_session_mutation
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
except ModuleNotFoundError as missing:
    raise extra_missing(__name__, "the OpenAI Agents SDK", "openai-agents", missing) from missing

from session_state_client._async_client import AsyncSessionStateClient
from session_state_client._exceptions import (
    AlreadyExistsError,
    NotFoundError,
    PayloadTooLargeError,
    StaleSessionError,
)

__all__ = ["ITEM_FIELD", "SessionStateSession", "event_of"]

ITEM_FIELD = "item"
INVOCATION_ID = "openai-agents"
# The server's bound on one batch append (events per request).
MAX_BATCH_EVENTS = 1000
# Events read per page when the whole history is asked for.
PAGE_SIZE = 1000


def _author(item: Any) -> str:
    role = item.get("role") if isinstance(item, dict) else None
    if isinstance(role, str) and role:
        return role
    kind = item.get("type") if isinstance(item, dict) else None
    if isinstance(kind, str) and kind.endswith("_output"):
        return "tool"
    return "assistant"


def event_of(item: TResponseInputItem) -> dict[str, Any]:
    """The event an item is stored as, with its id (so that a retried
    request is recognised)."""
    return {
        "id": str(uuid.uuid4()),
        "author": _author(item),
        "invocationId": INVOCATION_ID,
        ITEM_FIELD: item,
    }


def _items_of(events: list[dict[str, Any]]) -> list[TResponseInputItem]:
    # Events of the session that carry no item (written by something else)
    # are not conversation items: left out, as the SDK's SQLiteSession skips
    # rows it cannot read.
    return [cast(TResponseInputItem, event[ITEM_FIELD]) for event in events if ITEM_FIELD in event]


class SessionStateSession:
    """Conversation history of one OpenAI Agents SDK session, kept by a
    session-state server as the session (`app_name`, `user_id`,
    `session_id`), created on first use.

    Args:
        session_id: the session, as the SDK names it.
        app_name, user_id: where it lives on the server.
        session_settings: the SDK's settings, or a dict of them (unknown
            keys are a TypeError, as in the SDK); `limit` bounds get_items()
            as in the SDK's own sessions.
        client: an AsyncSessionStateClient to use (not closed by close(),
            and the session stays usable after it); otherwise one is made
            from `client_options` (base_url, api_key, timeout, max_retries,
            http_client).

    Raises:
        TypeError: `session_id` is not a string, or `session_settings` is
            neither SessionSettings nor a dict of its fields.
        ValueError: `session_id` is empty (SQLiteSession takes it; the
            server's ids are never empty).
    """

    def __init__(
        self,
        session_id: str,
        *,
        app_name: str,
        user_id: str,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        client: AsyncSessionStateClient | None = None,
        **client_options: Any,
    ) -> None:
        if not isinstance(session_id, str):  # a dict or a number would become a path
            raise TypeError("session_id must be a string")
        if not session_id:
            # ".../sessions/" is the URL of the user's sessions, not of a session.
            raise ValueError("session_id must not be empty: the server names no session ''")
        self.session_id = session_id
        # Typed as the SDK's protocol declares it (a Session may hold None).
        self.session_settings: SessionSettings | None = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self.app_name = app_name
        self.user_id = user_id
        self._owns_client = client is None
        self._closed = False
        self.client = client or AsyncSessionStateClient(**client_options)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history in order; with a limit (or session_settings.limit),
        the latest `limit` items. A session never written to has none."""
        self._check_open()
        limit = resolve_session_limit(limit, self.session_settings)
        if limit == 0:
            return []
        if limit is not None and limit < 0:  # as the SDK's SQLiteSession: all of them
            limit = None
        try:
            return await self._read_items(limit)
        except NotFoundError:
            return []

    async def _read_items(self, limit: int | None) -> list[TResponseInputItem]:
        """One session read (one statement on the server) when the items fit
        in a response and every event read is an item; else page by page."""
        try:
            session = await self.client.get_session(
                app_name=self.app_name,
                user_id=self.user_id,
                session_id=self.session_id,
                num_recent_events=limit,
            )
        except PayloadTooLargeError:  # more than one response may carry
            return await self._paged_items(limit)
        items = _items_of(session.events)
        if limit is None or len(items) == len(session.events) or len(session.events) < limit:
            return items
        return await self._paged_items(limit)  # events that are not items took places

    async def _paged_items(self, limit: int | None) -> list[TResponseInputItem]:
        if limit is None:
            items: list[TResponseInputItem] = []
            async for event in self.client.iter_events(
                app_name=self.app_name,
                user_id=self.user_id,
                session_id=self.session_id,
                page_size=PAGE_SIZE,
            ):
                items.extend(_items_of([event]))
            return items
        # Newest first, until `limit` items are found: each page asks for no
        # more events than items are still missing.
        newest_first: list[TResponseInputItem] = []
        if limit <= 0:
            return newest_first
        walk = async_pages(
            lambda token: self.client.list_events(
                app_name=self.app_name,
                user_id=self.user_id,
                session_id=self.session_id,
                order="desc",
                page_size=min(limit - len(newest_first), PAGE_SIZE),
                page_token=token,
            )
        )
        async with contextlib.aclosing(walk):
            async for page in walk:
                newest_first.extend(_items_of(page.events))
                if len(newest_first) >= limit:
                    break
        return newest_first[:limit][::-1]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Stores the items in order: one request, all or none, for up to
        1,000 items that fit in one request; more go in several requests,
        each all or none, in order. A request repeated after a lost answer
        is recognised by the server and stored once."""
        self._check_open()
        if not items:
            return
        events = [event_of(item) for item in items]
        await await_session_mutation(self._add_events(events))

    async def _add_events(self, events: list[dict[str, Any]]) -> None:
        for start in range(0, len(events), MAX_BATCH_EVENTS):
            await self._append(events[start : start + MAX_BATCH_EVENTS])

    async def _append(self, batch: list[dict[str, Any]]) -> None:
        """One batch append; a batch larger than the server takes in one
        request (or in one answer) goes as two halves, in order."""
        try:
            await self._append_creating(batch)
        except PayloadTooLargeError as error:
            if error.code != "payload_too_large" or len(batch) == 1:
                raise  # an item alone too large: nothing to split
            middle = len(batch) // 2
            await self._append(batch[:middle])
            await self._append(batch[middle:])

    async def _append_creating(self, batch: list[dict[str, Any]]) -> None:
        try:
            await self._send(batch)
        except NotFoundError:  # first use: the session is made here
            await self._create()
            await self._send(batch)

    async def _send(self, batch: list[dict[str, Any]]) -> None:
        if len(batch) == 1:
            # The single append: the server's lean path, committed together
            # with other sessions' appends (docs/performance.md).
            await self.client.append_event(
                app_name=self.app_name,
                user_id=self.user_id,
                session_id=self.session_id,
                event=batch[0],
            )
            return
        await self.client.append_events(
            app_name=self.app_name, user_id=self.user_id, session_id=self.session_id, events=batch
        )

    async def _create(self) -> None:
        with contextlib.suppress(AlreadyExistsError):  # another process made it first
            await self.client.create_session(
                app_name=self.app_name, user_id=self.user_id, session_id=self.session_id
            )

    async def pop_item(self) -> TResponseInputItem | None:
        """Removes and returns the newest item; None when there is none. One
        request: the server removes the newest event and answers with it,
        so two concurrent pops never take the same item, and a concurrent
        add_items is never undone."""
        self._check_open()
        return await await_session_mutation(self._pop())

    async def _pop(self) -> TResponseInputItem | None:
        while True:
            try:
                removal = await self.client.remove_events(
                    app_name=self.app_name,
                    user_id=self.user_id,
                    session_id=self.session_id,
                    last=1,
                    return_removed=True,
                )
            except StaleSessionError:
                continue  # the session kept changing under the server's tries
            except NotFoundError:
                return None
            if not removal.removed_events:
                return None
            newest = removal.removed_events[-1]
            if ITEM_FIELD in newest:
                return cast(TResponseInputItem, newest[ITEM_FIELD])
            # An event without an item is dropped, as the SDK drops rows it
            # cannot read; look at the next one.

    async def clear_session(self) -> None:
        """Removes every item (the server's session stays, empty)."""
        self._check_open()
        await await_session_mutation(self._clear())

    async def _clear(self) -> None:
        with contextlib.suppress(NotFoundError):  # never written to: nothing to clear
            await self.client.remove_events(
                app_name=self.app_name, user_id=self.user_id, session_id=self.session_id
            )

    async def close(self) -> None:
        """Closes the client this session made; from then on the session
        refuses every call with RuntimeError, as the SDK's own sessions do.
        With a client it was given, nothing is closed and the session stays
        usable (the client is the caller's). Closing again does nothing."""
        if not self._owns_client or self._closed:
            return
        self._closed = True
        await self.client.close()

    async def aclose(self) -> None:
        """The same as `close`."""
        await self.close()

    async def __aenter__(self) -> "SessionStateSession":
        return self

    async def __aexit__(self, *_exc_info: object) -> None:
        await self.close()

    def __enter__(self) -> "SessionStateSession":
        """For code that runs the SDK's `Runner.run_sync` (a loop per call,
        from any thread): leaving the block closes, as `close` does, the
        connections of every loop the session was used on."""
        return self

    def __exit__(self, *_exc_info: object) -> None:
        if not self._owns_client or self._closed:
            return
        self._closed = True
        self.client.__exit__(None, None, None)


if TYPE_CHECKING:

    def _is_a_session_of_the_sdk(session: SessionStateSession) -> Session:
        """mypy (strict, in CI) checks that the class meets the SDK's protocol."""
        return session
