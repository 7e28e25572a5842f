"""The options ADK's VertexAiSessionService takes on create_session (its
`**kwargs`), read for HttpSessionService: a session's lifetime and labels."""

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

# As VertexAiSessionService accepts them (google-adk 2.15), camelCase aliases
# included.
_EXPIRE_TIME_KEYS = ("expire_time", "expireTime")
_SUPPORTED = ("ttl", *_EXPIRE_TIME_KEYS, "labels")
_DISPLAY_NAME_KEYS = ("display_name", "displayName")
# A protobuf Duration as JSON: seconds with an "s".
_DURATION = re.compile(r"(\d+(?:\.\d+)?)s")


@dataclass(frozen=True)
class SessionOptions:
    ttl_seconds: float | None = None
    expire_time: float | None = None
    labels: Mapping[str, str] | None = None


def session_options(options: Mapping[str, Any]) -> SessionOptions:
    """The create_session options as the server takes them; ValueError for
    one it cannot honour."""
    if shown := sorted(set(options) & set(_DISPLAY_NAME_KEYS)):
        raise ValueError(
            f"Unsupported create_session option {shown[0]!r}: session-state keeps no display"
            " names (put one in `labels`)."
        )
    if unknown := sorted(set(options) - set(_SUPPORTED)):
        raise ValueError(
            f"Unsupported create_session option(s): {', '.join(map(repr, unknown))}."
            f" Supported options are: {', '.join(map(repr, _SUPPORTED))}."
        )
    times = [options[key] for key in _EXPIRE_TIME_KEYS if options.get(key) is not None]
    ttl = options.get("ttl")
    if len(times) > 1 or (times and ttl is not None):
        raise ValueError("Cannot specify both 'ttl' and 'expire_time' simultaneously.")
    labels = options.get("labels")
    if labels is not None and not isinstance(labels, Mapping):
        raise ValueError(f"labels must be a mapping of strings, not {type(labels).__name__}")
    return SessionOptions(
        ttl_seconds=None if ttl is None else _seconds(ttl),
        expire_time=_epoch(times[0]) if times else None,
        labels=labels,
    )


def _seconds(ttl: object) -> float:
    if isinstance(ttl, timedelta):
        seconds = ttl.total_seconds()
    elif isinstance(ttl, str) and (match := _DURATION.fullmatch(ttl.strip())):
        seconds = float(match.group(1))
    elif isinstance(ttl, int | float) and not isinstance(ttl, bool):
        seconds = float(ttl)
    else:
        raise ValueError(f"ttl must be a duration such as '7200s', seconds or a timedelta: {ttl!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"ttl must be more than 0 seconds: {ttl!r}")
    return seconds


def _epoch(expire_time: object) -> float:
    if isinstance(expire_time, int | float) and not isinstance(expire_time, bool):
        if not math.isfinite(expire_time):
            raise ValueError(f"expire_time must be a finite number of seconds: {expire_time!r}")
        return float(expire_time)
    if isinstance(expire_time, str):
        try:
            expire_time = datetime.fromisoformat(expire_time.strip())
        except ValueError:
            raise ValueError(
                f"expire_time must be RFC 3339 text such as '2025-10-01T00:00:00Z': {expire_time!r}"
            ) from None
    if isinstance(expire_time, datetime):
        if expire_time.tzinfo is None:
            raise ValueError(f"expire_time must name its time zone: {expire_time.isoformat()!r}")
        return expire_time.timestamp()
    raise ValueError(f"expire_time must be RFC 3339 text, a datetime or seconds: {expire_time!r}")
