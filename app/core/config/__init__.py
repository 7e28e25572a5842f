"""Settings, read from environment variables prefixed with ``SESSION_STATE_``.

There is one `Settings` object, flat: `settings.database_url` is read from
SESSION_STATE_DATABASE_URL whatever its group. Its fields are defined by
feature, one group per module of this package (the server, access control,
end-user tokens, limits, the database, session expiry, memory, live streams, logs, setting
names), each a base class of `Settings` holding its fields, their validators
and the rules between them. The groups live here rather than beside their
features because the foundation imports nothing above it
(tests/test_import_graph.py).

`Settings`' bases, in their order, are the groups: `serve --help` and
docs/configuration.md show the settings under the same titles in the same
order (tests/test_settings_documented.py)."""

from functools import lru_cache

from .access import AccessSettings
from .database import DEFAULT_DATABASE_URL, DatabaseSettings, Pooler
from .encryption import EncryptionSettings
from .expiry import MAX_TTL_SECONDS, ExpirySettings
from .group import ENVIRONMENT_PREFIX, SettingGroup
from .limits import RESPONSE_OVERHEAD_BYTES, RequestLimitSettings
from .logs import LogSettings
from .memory import (
    DEFAULT_MIN_SIMILARITY,
    DEFAULT_RELEVANCE_MARGIN,
    MAX_EMBEDDING_DIMENSIONS,
    MemorySettings,
)
from .name_policy import SettingNamePolicy
from .server import ServerSettings
from .streams import StreamSettings
from .tokens import TokenSettings

__all__ = [
    "DEFAULT_DATABASE_URL",
    "DEFAULT_MIN_SIMILARITY",
    "DEFAULT_RELEVANCE_MARGIN",
    "ENVIRONMENT_PREFIX",
    "MAX_EMBEDDING_DIMENSIONS",
    "MAX_TTL_SECONDS",
    "RESPONSE_OVERHEAD_BYTES",
    "SETTING_GROUPS",
    "EncryptionSettings",
    "Pooler",
    "SettingGroup",
    "SettingNamePolicy",
    "Settings",
    "TokenSettings",
    "get_settings",
    "group_of",
]


class Settings(
    ServerSettings,
    AccessSettings,
    TokenSettings,
    RequestLimitSettings,
    DatabaseSettings,
    ExpirySettings,
    MemorySettings,
    StreamSettings,
    EncryptionSettings,
    LogSettings,
    SettingNamePolicy,
):
    """Every setting of the service, its groups' fields side by side."""


# The groups in the order they are shown.
SETTING_GROUPS: tuple[type[SettingGroup], ...] = tuple(
    base for base in Settings.__bases__ if issubclass(base, SettingGroup)
)


def group_of(setting: str) -> type[SettingGroup]:
    """The group that defines `setting` (a field name, as `database_url`)."""
    for group in SETTING_GROUPS:
        if setting in group.model_fields:
            return group
    raise KeyError(setting)


@lru_cache
def get_settings() -> Settings:
    return Settings()
