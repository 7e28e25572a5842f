"""Which SESSION_STATE_ variables there are, so that a misspelled setting is
refused instead of ignored (a typo in the database URL's name once served a
new, empty SQLite file in place of the configured PostgreSQL)."""

import difflib
from collections.abc import Collection, Iterable, Mapping

from .config import ENVIRONMENT_PREFIX, SettingNamePolicy, Settings

# Read by others, never by the server: the Python client
# (client/session_state_client/_constants.py), docker-compose.yml (the
# address it publishes on) and CI (.ci/docker-engine.sh).
USED_ELSEWHERE = frozenset(
    {
        "SESSION_STATE_BASE_URL",
        "SESSION_STATE_API_KEY",
        "SESSION_STATE_PUBLISH_ADDRESS",
        "SESSION_STATE_CI_DOCKER_ROOT",
    }
)
# The test suite's own (the PostgreSQL to test on, the ports it may use).
TEST_PREFIX = ENVIRONMENT_PREFIX + "TEST_"
ALLOW_SETTING = ENVIRONMENT_PREFIX + "ALLOW_UNKNOWN_SETTINGS"


class UnknownSetting(ValueError):
    """A SESSION_STATE_ variable that no part of session-state reads."""


def setting_names() -> list[str]:
    return [ENVIRONMENT_PREFIX + field.upper() for field in Settings.model_fields]


def unknown_settings(names: Iterable[str], allowed: Collection[str]) -> list[str]:
    """The names among `names` that are SESSION_STATE_ variables nothing reads
    and that are not `allowed`, sorted. Case does not matter, as in Settings."""
    known = {*setting_names(), *USED_ELSEWHERE, *(name.upper() for name in allowed)}
    return sorted(
        name
        for name in names
        if name.upper().startswith(ENVIRONMENT_PREFIX)
        and not name.upper().startswith(TEST_PREFIX)
        and name.upper() not in known
    )


def refuse_unknown_settings(environment: Mapping[str, str]) -> None:
    """UnknownSetting naming each unknown variable and the closest known name."""
    unknown = unknown_settings(environment, SettingNamePolicy().allow_unknown_settings)
    if not unknown:
        return
    named = ", ".join(_with_closest_name(name) for name in unknown)
    plural = "s" if len(unknown) > 1 else ""
    raise UnknownSetting(
        f"unknown setting{plural} {named}: correct the name, or list it in "
        f"{ALLOW_SETTING} if something else reads it"
    )


def _with_closest_name(name: str) -> str:
    # Compared without the prefix they all share, which would make any two
    # names look alike.
    candidates = {known.removeprefix(ENVIRONMENT_PREFIX): known for known in setting_names()}
    candidates |= {known.removeprefix(ENVIRONMENT_PREFIX): known for known in USED_ELSEWHERE}
    bare = name.upper().removeprefix(ENVIRONMENT_PREFIX)
    closest = difflib.get_close_matches(bare, candidates, n=1)
    return f"{name} (did you mean {candidates[closest[0]]}?)" if closest else name
