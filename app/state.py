"""Pure rules of scoped state: prefixes, ``temp:`` keys, deltas and the merged view."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

APP_PREFIX = "app:"
USER_PREFIX = "user:"
TEMP_PREFIX = "temp:"

StateDict = dict[str, Any]


@dataclass(frozen=True)
class ScopedDelta:
    """A delta split by scope; app and user keys are stored without their prefix."""

    app: StateDict = field(default_factory=dict)
    user: StateDict = field(default_factory=dict)
    session: StateDict = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.app or self.user or self.session)


def drop_temp_keys(delta: Mapping[str, Any]) -> StateDict:
    """The delta without ``temp:`` keys, which are never stored."""
    return {key: value for key, value in delta.items() if not key.startswith(TEMP_PREFIX)}


def split_delta(delta: Mapping[str, Any]) -> ScopedDelta:
    """Routes each key to the scope its prefix names; ``temp:`` keys go nowhere."""
    scoped = ScopedDelta()
    for key, value in delta.items():
        if key.startswith(APP_PREFIX):
            scoped.app[key.removeprefix(APP_PREFIX)] = value
        elif key.startswith(USER_PREFIX):
            scoped.user[key.removeprefix(USER_PREFIX)] = value
        elif not key.startswith(TEMP_PREFIX):
            scoped.session[key] = value
    return scoped


def apply_delta(state: Mapping[str, Any], delta: Mapping[str, Any]) -> StateDict:
    """Shallow update: a new value replaces the old one whole, ``None`` is kept."""
    return {**state, **delta}


def merge_scopes(
    session_state: Mapping[str, Any],
    app_state: Mapping[str, Any],
    user_state: Mapping[str, Any],
) -> StateDict:
    """The view a reader sees: session keys plus prefixed app and user keys."""
    merged = dict(session_state)
    for key, value in app_state.items():
        merged[APP_PREFIX + key] = value
    for key, value in user_state.items():
        merged[USER_PREFIX + key] = value
    return merged


def find_nul_character(
    value: Any, path: tuple[str | int, ...] = ()
) -> tuple[str | int, ...] | None:
    """The path of the first string (key or value) holding U+0000, if any.

    PostgreSQL's JSONB cannot store that character; refusing it everywhere
    keeps the two backends' behaviour the same.
    """
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                return (*path, key)
            found = find_nul_character(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = find_nul_character(item, (*path, index))
            if found is not None:
                return found
    return None
