"""What the two clients share besides their calls (`_requests`): where the
server is and the credentials, and the types of their arguments.

AsyncSessionStateClient (`_async_client.py`) is written by hand;
SessionStateClient (`_sync_client.py`) is generated from it by
client/tools/unasync.py."""

import os
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

import httpx

from session_state_client._constants import API_KEY_ENV, BASE_URL_ENV, DEFAULT_BASE_URL
from session_state_client._transport import checked_api_key, checked_base_url

JSON_HEADERS = {"Content-Type": "application/json"}
Order: TypeAlias = Literal["asc", "desc"]
EventJSON: TypeAlias = Mapping[str, Any]
# Seconds, or httpx's bounds (connect, read, write, pool): both clients take either.
Timeout: TypeAlias = float | httpx.Timeout


# An end-user token: the token itself, or what returns a valid one each time
# it is called (an identity library's cached, refreshed token).
TokenSource: TypeAlias = str | Callable[[], str]


def token_headers(token: TokenSource | None) -> Callable[[], dict[str, str]]:
    """What each request adds to its headers: the token's Authorization,
    read anew per request when `token` is a callable, so that a long-lived
    client always sends an unexpired one."""
    if token is None:
        return dict
    if isinstance(token, str):
        fixed = {"Authorization": f"Bearer {checked_api_key(token, 'token')}"}
        return lambda: fixed
    if not callable(token):
        raise TypeError("token must be a string or a callable returning one")

    def fresh() -> dict[str, str]:
        value = checked_api_key(token(), "what the token callable returned")
        return {"Authorization": f"Bearer {value}"}

    return fresh


def client_settings(
    base_url: str | None, api_key: str | None, token: TokenSource | None = None
) -> tuple[str, dict[str, str]]:
    """The base URL and the headers to send, the environment filling in what
    is not given (the API key only when no token is)."""
    if api_key is not None and token is not None:
        raise ValueError("give api_key or token, not both: each is sent as the bearer")
    if base_url is not None:
        url = checked_base_url(base_url)
    elif os.environ.get(BASE_URL_ENV):
        url = checked_base_url(os.environ[BASE_URL_ENV], BASE_URL_ENV)
    else:
        url = DEFAULT_BASE_URL
    key = api_key if api_key is not None or token is not None else os.environ.get(API_KEY_ENV)
    headers = {"Authorization": f"Bearer {checked_api_key(key)}"} if key else {}
    return url, headers
