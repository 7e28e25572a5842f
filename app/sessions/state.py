"""Pure rules of scoped state: prefixes, ``temp:`` keys, deltas and the merged view."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.encryption import ENVELOPE_TEXT_PREFIX
from ..core.errors import FieldError
from ..core.limits import Limits

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


def merge_deltas(deltas: Iterable[ScopedDelta]) -> ScopedDelta:
    """Deltas applied one after another, as one delta: a key written twice
    keeps its last value (updates are shallow, see apply_delta)."""
    merged = ScopedDelta()
    for delta in deltas:
        merged.app.update(delta.app)
        merged.user.update(delta.user)
        merged.session.update(delta.session)
    return merged


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


def find_long_key(state: Mapping[str, Any], limits: Limits) -> FieldError | None:
    """A key longer than the limit (prefix included), located in `state`."""
    for key in state:
        if len(key) > limits.max_key_length:
            return FieldError(
                [key[:40] + "..."],
                f"state keys are at most {limits.max_key_length} characters, prefix included "
                f"(this one has {len(key)})",
            )
    return None


def find_sealed_lookalike(state: Mapping[str, Any]) -> FieldError | None:
    """A value that is a string starting with the sealed values' prefix,
    located in `state`: refused whether or not encryption is on, so that a
    plaintext value can never be taken for a sealed one (docs/security.md)."""
    for key, value in state.items():
        if isinstance(value, str) and value.startswith(ENVELOPE_TEXT_PREFIX):
            return FieldError(
                [key[:40] + ("..." if len(key) > 40 else "")],
                "a state value may not be a string starting with the reserved prefix "
                "U+0001 'ss1:' (sealed values' mark)",
            )
    return None


def find_refused_entry(state: Mapping[str, Any], limits: Limits) -> FieldError | None:
    """A key too long or a value with the sealed values' prefix, located."""
    return find_long_key(state, limits) or find_sealed_lookalike(state)
