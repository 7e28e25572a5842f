"""The API's page tokens: where a list's page ends, as an opaque token
(app.core.pagination) naming its list. What a token decodes to is checked in full
here, so the rules only ever see a well-formed cursor."""

from typing import Any

from ..core.errors import BadRequest
from ..core.identifiers import IDENTIFIER_MAX_LENGTH
from ..core.json_rules import text_problem
from ..core.limits import MAX_INT64, MAX_RUNNING_IN_HORIZON
from ..core.pagination import INVALID_TOKEN, decode_token, encode_token
from .domain import (
    ALL_SESSIONS,
    ChangeHorizon,
    SessionKey,
    SessionPosition,
    SessionQuery,
    SortOrder,
)

SESSIONS_TOKEN = "sessions"
APPS_TOKEN = "apps"
USERS_TOKEN = "users"
EVENTS_TOKEN = "events"
FORMER_SESSIONS_TOKEN = (
    "pageToken was made by an earlier version of the server, whose walks were"
    " pinned by its clock: start the list again without pageToken"
)


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


def session_position(
    token: str | None, app_name: str, user_id: str | None, query: SessionQuery = ALL_SESSIONS
) -> SessionPosition | None:
    """Where a sessions page token's page starts: a finite time and two
    identifiers, and the horizon its walk was pinned at (its first page's:
    docs/api.md, "Walking a list"). BadRequest for anything else, another
    list's token, or a token of before walks were pinned by change numbers
    (it carried no horizon, or a time)."""
    if token is None:
        return None
    position = decode_token(token, SESSIONS_TOKEN, _sessions_list(app_name, user_id, query))
    if len(position) in (3, 4):
        raise BadRequest(FORMER_SESSIONS_TOKEN)
    if len(position) != 5:
        raise BadRequest(INVALID_TOKEN)
    update_time, user, session_id, bound, offsets = position
    if not (
        _is_time(update_time)
        and _is_identifier(user)
        and _is_identifier(session_id)
        and _is_int64(bound)
        and isinstance(offsets, list)
        and len(offsets) <= MAX_RUNNING_IN_HORIZON
        and all(_is_int64(offset) and 1 <= offset <= bound for offset in offsets)
    ):
        raise BadRequest(INVALID_TOKEN)
    horizon = ChangeHorizon(bound, tuple(sorted(bound - offset for offset in offsets)))
    return SessionPosition((float(update_time), user, session_id), horizon)


def sessions_token(
    after: SessionPosition | None,
    app_name: str,
    user_id: str | None,
    query: SessionQuery = ALL_SESSIONS,
) -> str | None:
    """The next page's token: the cursor and the walk's horizon, the
    transactions in flight as distances below its bound (short numbers)."""
    if after is None:
        return None
    horizon = after.horizon
    position: list[Any] = [
        *after.cursor,
        horizon.bound,
        [horizon.bound - number for number in horizon.running],
    ]
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
