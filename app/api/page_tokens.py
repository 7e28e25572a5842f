"""The API's page tokens: where a list's page ends, as an opaque token
(app.pagination) naming its list. What a token decodes to is checked in full
here, so the rules only ever see a well-formed cursor."""

import math
from dataclasses import replace
from typing import Any

from ..domain import ALL_SESSIONS, SessionCursor, SessionKey, SessionQuery, SortOrder
from ..errors import BadRequest
from ..identifiers import IDENTIFIER_MAX_LENGTH
from ..json_rules import text_problem
from ..limits import MAX_INT64
from ..pagination import INVALID_TOKEN, decode_token, encode_token

SESSIONS_TOKEN = "sessions"
APPS_TOKEN = "apps"
USERS_TOKEN = "users"
EVENTS_TOKEN = "events"


def _sessions_list(app_name: str, user_id: str | None, query: SessionQuery) -> tuple[str, ...]:
    # The filter and the order are the list's: a token of one filter is
    # foreign to another (includeState changes what is shown, not which).
    labels = query.labels
    return (
        app_name,
        user_id or "",
        ",".join(f"{key}:{value}" for key, value in sorted(labels.equal.items())),
        ",".join(labels.present),
        repr(query.updated_after),
        repr(query.updated_before),
        query.order,
    )


def _events_list(key: SessionKey, order: SortOrder) -> tuple[str, ...]:
    return (key.app_name, key.user_id, key.session_id, order)


def session_walk(
    token: str | None, app_name: str, user_id: str | None, query: SessionQuery, now: float
) -> tuple[SessionCursor | None, SessionQuery]:
    """Where a page of a walk starts, and the query it runs: without the
    caller's `updatedBefore`, the walk's end is pinned at the time its first
    page was asked for (`now` then, carried by the tokens after it), so that
    a session an update moves past the walk's position is not listed again
    (docs/api.md, "Walking a list")."""
    after, pinned_end = _session_position(token, app_name, user_id, query)
    if query.updated_before is not None:
        return after, query
    if token is None:
        # updatedBefore is exclusive: a session written at this very time
        # was there when the walk began.
        pinned_end = math.nextafter(now, math.inf)
    if pinned_end is None:  # a token of before the walk's end was pinned
        return after, query
    return after, replace(query, updated_before=pinned_end)


def _session_position(
    token: str | None, app_name: str, user_id: str | None, query: SessionQuery
) -> tuple[SessionCursor | None, float | None]:
    if token is None:
        return None, None
    position = decode_token(token, SESSIONS_TOKEN, _sessions_list(app_name, user_id, query))
    if len(position) not in (3, 4):
        raise BadRequest(INVALID_TOKEN)
    update_time, user, session_id = position[:3]
    pinned_end = position[3] if len(position) == 4 else None
    if not (
        _is_time(update_time)
        and (pinned_end is None or _is_time(pinned_end))
        and _is_identifier(user)
        and _is_identifier(session_id)
    ):
        raise BadRequest(INVALID_TOKEN)
    return (float(update_time), user, session_id), (
        None if pinned_end is None else float(pinned_end)
    )


def sessions_token(
    after: SessionCursor | None,
    app_name: str,
    user_id: str | None,
    query: SessionQuery = ALL_SESSIONS,
    walk: SessionQuery | None = None,
) -> str | None:
    """The next page's token; `walk` (what session_walk gave), when its end
    was pinned, carries that end on."""
    if after is None:
        return None
    position: list[Any] = list(after)
    if walk is not None and query.updated_before is None and walk.updated_before is not None:
        position.append(walk.updated_before)
    return encode_token(SESSIONS_TOKEN, _sessions_list(app_name, user_id, query), position)


def event_cursor(token: str | None, key: SessionKey, order: SortOrder) -> int | None:
    """The event seq an events page token's page starts after."""
    if token is None:
        return None
    position = decode_token(token, EVENTS_TOKEN, _events_list(key, order))
    if not (len(position) == 2 and position[0] == order and _is_int64(position[1])):
        raise BadRequest(INVALID_TOKEN)
    after_seq: int = position[1]
    return after_seq


def events_token(after_seq: int | None, key: SessionKey, order: SortOrder) -> str | None:
    if after_seq is None:
        return None
    return encode_token(EVENTS_TOKEN, _events_list(key, order), [order, after_seq])


def name_cursor(token: str | None, kind: str, app_name: str = "") -> str | None:
    """The name (app or user) a page of apps or of an app's users starts
    after; `kind` is APPS_TOKEN or USERS_TOKEN."""
    if token is None:
        return None
    position = decode_token(token, kind, (app_name,))
    if not (len(position) == 1 and _is_identifier(position[0])):
        raise BadRequest(INVALID_TOKEN)
    after: str = position[0]
    return after


def name_token(after: str | None, kind: str, app_name: str = "") -> str | None:
    if after is None:
        return None
    return encode_token(kind, (app_name,), [after])


def _is_time(value: Any) -> bool:
    return type(value) in (int, float) and abs(value) <= 1e300 and value == value  # not NaN


def _is_int64(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_INT64


def _is_identifier(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 1 <= len(value) <= IDENTIFIER_MAX_LENGTH
        and text_problem(value) is None
    )
