"""Settings, read from environment variables prefixed with ``SESSION_STATE_``."""

import ipaddress
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from sqlalchemy.engine import make_url

from .api_keys import ApiKeys
from .database_url import PostgresqlAddress, is_postgresql_url, parse_postgresql_url
from .host_names import split_host
from .limits import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_JSON_DEPTH,
    DEFAULT_MAX_KEY_LENGTH,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_STATE_BYTES,
    MAX_JSON_DEPTH_CEILING,
    MAX_KEY_LENGTH_CEILING,
)

ENVIRONMENT_PREFIX = "SESSION_STATE_"
DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./session_state.db"
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
# The connection pooler in front of PostgreSQL, by its pool mode (app.db.poolers).
Pooler = Literal["none", "session", "transaction"]
# Schemes people write for the same databases -> the one the service needs
# (libpq's postgresql:// and postgres:// are read with asyncpg as they are).
_SYNCHRONOUS_SCHEMES = {
    "postgresql+psycopg2": "postgresql+asyncpg",
    "postgresql+psycopg": "postgresql+asyncpg",
    "sqlite": "sqlite+aiosqlite",
}

DEFAULT_REQUEST_HEAD_TIMEOUT_SECONDS = 10.0
MAX_REQUEST_HEAD_TIMEOUT_SECONDS = 30.0
# The longest expiry a request or a setting may give: far beyond any
# retention policy, and far inside what a float holds exactly to the ms.
MAX_TTL_SECONDS = 100 * 365 * 24 * 3600.0
# Search by meaning (app.memory.embedding): OpenAI's largest model has 3,072 dimensions.
MAX_EMBEDDING_DIMENSIONS = 8192
# A memory found by meaning alone needs both: a cosine of at least
# DEFAULT_MIN_SIMILARITY (a floor whatever the script), and a relevance
# (app.memory.relevance: the cosine less how near either text sits to
# unrelated text) of at least DEFAULT_RELEVANCE_MARGIN: wordllama scores
# unrelated texts of one script above many a paraphrase, and the relevance
# tells them apart (docs/memory.md, "Relevance").
DEFAULT_MIN_SIMILARITY = 0.2
DEFAULT_RELEVANCE_MARGIN = 0.0
# Room in a response for everything but events and state (ids, field names).
RESPONSE_OVERHEAD_BYTES = 64 * 1024


def _comma_separated(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class SettingNamePolicy(BaseSettings):
    """The one setting read before the others: which SESSION_STATE_ variables
    that are no setting to let be (see app.core.setting_names)."""

    # inf and nan are never a meaningful timeout, interval or size.
    model_config = SettingsConfigDict(
        env_prefix=ENVIRONMENT_PREFIX, extra="ignore", allow_inf_nan=False
    )

    allow_unknown_settings: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Names (comma-separated) of SESSION_STATE_ variables that are no setting "
        "but are set for something else, and so are not refused.",
    )

    @field_validator("allow_unknown_settings", mode="before")
    @classmethod
    def _split_names(cls, value: object) -> object:
        return _comma_separated(value)

    @field_validator("allow_unknown_settings")
    @classmethod
    def _require_full_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name.upper().startswith(ENVIRONMENT_PREFIX):
                raise ValueError(
                    f"{name!r} is not a variable's full name: write {ENVIRONMENT_PREFIX}..."
                )
        return [name.upper() for name in names]


def _is_sqlite_in_memory(url: str) -> bool:
    database = make_url(url).database
    return database in (None, "", ":memory:") or "mode=memory" in url


class Settings(SettingNamePolicy):
    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="sqlite+aiosqlite:///file.db, or a PostgreSQL URL: postgresql://... (libpq's "
        "form, several hosts and target_session_attrs included) or postgresql+asyncpg://...",
    )
    read_database_url: str | None = Field(
        default=None,
        description="PostgreSQL only: the read replicas (libpq's URL forms, several hosts "
        "allowed) that serve session reads, lists, event pages and memory search.",
    )
    listen_database_url: str | None = Field(
        default=None,
        description="PostgreSQL only: a direct URL (not through a transaction-mode pooler such "
        "as PgBouncer, where LISTEN does not work) for the one connection per process that "
        "hears other processes' changes for live streams. Unset: the database URL.",
    )
    max_replica_lag_seconds: float = Field(
        default=5.0,
        gt=0,
        description="A replica further behind the primary than this serves no reads.",
    )
    host: str = Field(default="127.0.0.1", description="The address `serve` binds.")
    port: int = Field(default=8000, ge=1, le=65535, description="The port `serve` binds.")
    workers: int = Field(default=1, ge=1, description="Worker processes of `serve`.")
    max_body_bytes: int = Field(
        default=DEFAULT_MAX_BODY_BYTES,
        ge=1024,
        description="Larger request bodies are refused (413 payload_too_large).",
    )
    db_pool_size: int = Field(
        default=10, ge=1, description="PostgreSQL: connections of a process's pool."
    )
    # PostgreSQL: a process opens up to db_pool_size + db_max_overflow
    # connections as requests need them, and closes those idle for 5 minutes.
    db_max_overflow: int = Field(
        default=0, ge=0, description="PostgreSQL: connections a pool may open beyond its size."
    )
    db_pooler: Pooler = Field(
        default="none",
        description="PostgreSQL: the connection pooler between the service and the database, "
        "by its pool mode (PgBouncer's pool_mode=transaction: transaction). A pooler found "
        "while this is none is refused at start-up.",
    )
    append_batch_size: int = Field(
        default=64,
        ge=1,
        le=1000,
        description="PostgreSQL: the most concurrent appends sent in one statement and"
        " committed together (group commit); 1 sends each by itself.",
    )
    db_timeout_seconds: float = Field(
        default=5.0,
        gt=0,
        description="Bounds connecting, waiting for a pooled connection, an append's wait for"
        " its batch and every statement.",
    )
    log_level: Literal["critical", "error", "warning", "info", "debug"] = Field(
        default="info", description="debug, info, warning, error or critical."
    )
    log_format: Literal["json", "text"] = Field(
        default="json", description="json (one object per line) or text."
    )
    api_keys: dict[str, list[str]] = Field(
        default_factory=dict,
        description='JSON object: API key -> app names it may use, ["*"] for all apps.',
    )
    api_keys_file: Path | None = Field(
        default=None, description="A JSON file of the same shape as api_keys, merged with it."
    )
    max_json_depth: int = Field(
        default=DEFAULT_MAX_JSON_DEPTH,
        ge=4,
        le=MAX_JSON_DEPTH_CEILING,
        description="Deepest nesting of arrays and objects in a request body.",
    )
    max_key_length: int = Field(
        default=DEFAULT_MAX_KEY_LENGTH,
        ge=1,
        le=MAX_KEY_LENGTH_CEILING,
        description="Longest state key, in characters, prefix included.",
    )
    max_state_bytes: int = Field(
        default=DEFAULT_MAX_STATE_BYTES,
        ge=1024,
        description="Largest serialized state of one scope (an app's, a user's, a session's).",
    )
    max_event_bytes: int = Field(
        default=DEFAULT_MAX_EVENT_BYTES, ge=1024, description="Largest stored event (its JSON)."
    )
    max_response_bytes: int = Field(
        default=DEFAULT_MAX_RESPONSE_BYTES,
        ge=64 * 1024,
        description="Largest session read, event page or session page.",
    )
    request_head_timeout_seconds: float = Field(
        default=DEFAULT_REQUEST_HEAD_TIMEOUT_SECONDS,
        gt=0,
        le=MAX_REQUEST_HEAD_TIMEOUT_SECONDS,
        description="A connection that has not sent a whole request head by then is closed.",
    )
    default_ttl_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TTL_SECONDS,
        description="Idle timeout of a session created without ttlSeconds or expireTime "
        "(unset: such sessions never expire).",
    )
    app_ttl_seconds: dict[str, Annotated[float, Field(gt=0, le=MAX_TTL_SECONDS)]] = Field(
        default_factory=dict,
        description="JSON object: app name -> idle timeout of its new sessions, overriding "
        "default_ttl_seconds.",
    )
    expired_session_memories: Literal["keep", "delete"] = Field(
        default="keep",
        description="What the sweeper does with the memories taken from an expired session: "
        "keep them (they are long-term) or delete them with it.",
    )
    sweep_interval_seconds: float = Field(
        default=60.0,
        ge=0,
        description="How often `serve` deletes expired sessions (0: never; run "
        "`session-state sweep` from cron instead).",
    )
    memory_embedder: Literal["wordllama", "openai", "none"] = Field(
        default="wordllama",
        description="What embeds memories for search by meaning: wordllama (a local model "
        "installed with the server), openai (an OpenAI-compatible POST {url}/embeddings) or "
        "none (keyword search only).",
    )
    memory_embedder_url: str | None = Field(
        default=None,
        description="openai: the API's base URL, such as https://api.openai.com/v1 or "
        "http://localhost:11434/v1 (Ollama).",
    )
    memory_embedder_model: str = Field(
        default="text-embedding-3-small",
        min_length=1,
        max_length=200,
        description="openai: the model asked for.",
    )
    memory_embedder_api_key: SecretStr | None = Field(
        default=None, description="openai: the API key (sent as a bearer token)."
    )
    memory_embedder_api_key_file: Path | None = Field(
        default=None, description="openai: a file holding the API key (read at start-up)."
    )
    memory_embedder_dimensions: int | None = Field(
        default=None,
        ge=1,
        le=MAX_EMBEDDING_DIMENSIONS,
        description="openai: the vector length asked for and required of answers (unset: the "
        "model's own).",
    )
    memory_embedder_batch_size: int = Field(
        default=64, ge=1, le=2048, description="openai: texts sent in one request."
    )
    memory_embedder_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="openai: how long a call may take (a search waits at most 2 s of it, then "
        "ranks by keywords alone).",
    )
    memory_min_similarity: float = Field(
        default=DEFAULT_MIN_SIMILARITY,
        ge=-1,
        le=1,
        description="The cosine similarity a memory needs to be found by meaning alone.",
    )
    memory_relevance_margin: float = Field(
        default=DEFAULT_RELEVANCE_MARGIN,
        ge=-1,
        le=1,
        description="How much nearer a memory found by meaning alone must be to the question "
        "than either of them is to unrelated text (higher: fewer, surer answers).",
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Host names (comma-separated) accepted in the Host header in open mode, "
        "besides localhost and the bound address; '*' accepts any.",
    )

    stream_heartbeat_seconds: float = Field(
        default=15.0,
        gt=0,
        le=15,
        description="Live streams: a comment line goes out after this long without a "
        "message, and storage is read again (a lost change notification costs at most this).",
    )
    stream_send_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="Live streams: a reader that takes no data for this long, its "
        "connection's buffer full, is cut off (it resumes with Last-Event-ID).",
    )
    tombstone_retention_seconds: float = Field(
        default=7 * 24 * 3600.0,
        gt=0,
        le=10 * 365 * 24 * 3600.0,
        description="User streams: how long deletions and expiries are kept for a "
        "resuming stream; a cursor older than that gets `reset` (the sweeper prunes them).",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Origins (comma-separated, as https://ui.example.com) allowed to call "
        "the API from a browser (CORS); in open mode they also pass the browser guard.",
    )

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        origins = _comma_separated(value)
        return [origin.rstrip("/") for origin in origins] if isinstance(origins, list) else origins

    @field_validator("cors_origins")
    @classmethod
    def _refuse_what_is_no_origin(cls, origins: list[str]) -> list[str]:
        for origin in origins:
            scheme, separator, rest = origin.partition("://")
            if scheme not in ("http", "https") or not separator or not rest or "/" in rest:
                raise ValueError(
                    f"{origin!r} is not an origin: write scheme://host[:port], as "
                    "https://ui.example.com, comma-separated"
                )
        return origins

    @field_validator("database_url")
    @classmethod
    def _refuse_unsupported_driver(cls, url: str) -> str:
        if is_postgresql_url(url):
            # Held in the form SQLAlchemy reads, the servers as host= parameters.
            return parse_postgresql_url(url).canonical()
        # A synchronous driver would block the event loop; say so at start-up.
        if url.startswith("sqlite+aiosqlite:"):
            if _is_sqlite_in_memory(url):
                raise ValueError(
                    "an in-memory SQLite database cannot be shared by the service's "
                    "connections (each would open its own): name a file, as "
                    "sqlite+aiosqlite:///session_state.db"
                )
            return url
        scheme = url.split("://", 1)[0] if "://" in url else None
        if scheme in _SYNCHRONOUS_SCHEMES:
            driver = _SYNCHRONOUS_SCHEMES[scheme]
            raise ValueError(
                f"write {driver}:// instead of {scheme}:// (the service needs the asyncio "
                f"driver, {driver.split('+')[1]})"
            )
        # The URL itself is not repeated: it may hold a password.
        raise ValueError(
            "must start with sqlite+aiosqlite://, postgresql:// or postgresql+asyncpg://"
        )

    @field_validator("read_database_url", "listen_database_url")
    @classmethod
    def _refuse_a_replica_url_not_postgresql(cls, url: str | None) -> str | None:
        if url is None or not url.strip():
            return None
        if not is_postgresql_url(url):
            raise ValueError("must start with postgresql:// or postgresql+asyncpg://")
        return parse_postgresql_url(url).canonical()

    @field_validator("host")
    @classmethod
    def _refuse_a_port_or_scheme(cls, host: str) -> str:
        # Empty binds every interface, as 0.0.0.0 does.
        if not host or _is_ip_address(host) or split_host(host) == (host.lower(), None):
            return host
        raise ValueError(
            f"{host!r} is not an address or a host name: write one such as 127.0.0.1, "
            "0.0.0.0 or ::, without a scheme or port (the port is SESSION_STATE_PORT)"
        )

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_case_level(cls, level: object) -> object:
        return level.lower() if isinstance(level, str) else level

    @field_validator("api_keys")
    @classmethod
    def _refuse_unsafe_keys(cls, keys: dict[str, list[str]]) -> dict[str, list[str]]:
        ApiKeys(keys)  # its refusal names the rule, never the key
        return keys

    @field_validator("api_keys_file")
    @classmethod
    def _refuse_an_unreadable_keys_file(cls, file: Path | None) -> Path | None:
        if file is not None:
            ApiKeys.from_settings({}, file)
        return file

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        hosts = _comma_separated(value)
        return [host.lower() for host in hosts] if isinstance(hosts, list) else hosts

    @field_validator("allowed_hosts")
    @classmethod
    def _refuse_what_is_no_host(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if host != "*" and split_host(host) is None:
                raise ValueError(
                    f"{host!r} is not a host name: write names such as api or "
                    "api.example.com (a port may follow), comma-separated, or *"
                )
        return hosts

    @model_validator(mode="after")
    def _responses_hold_one_of_everything(self) -> Self:
        # A response must always be able to carry one event and one session's
        # merged state (three scopes), or something stored could never be read.
        needed = self.max_event_bytes + 3 * self.max_state_bytes + RESPONSE_OVERHEAD_BYTES
        if self.max_response_bytes < needed:
            raise ValueError(
                f"SESSION_STATE_MAX_RESPONSE_BYTES ({self.max_response_bytes}) must be at least "
                f"SESSION_STATE_MAX_EVENT_BYTES + 3 x SESSION_STATE_MAX_STATE_BYTES "
                f"+ {RESPONSE_OVERHEAD_BYTES} ({needed})"
            )
        return self

    @model_validator(mode="after")
    def _replicas_only_beside_postgresql(self) -> Self:
        if self.read_database_url is not None and self.is_sqlite:
            raise ValueError(
                "SESSION_STATE_READ_DATABASE_URL needs a PostgreSQL SESSION_STATE_DATABASE_URL "
                "(SQLite has no replicas)"
            )
        if self.listen_database_url is not None and self.is_sqlite:
            raise ValueError(
                "SESSION_STATE_LISTEN_DATABASE_URL needs a PostgreSQL SESSION_STATE_DATABASE_URL "
                "(on SQLite, streams follow the changes of their own process)"
            )
        return self

    @field_validator("memory_embedder_url")
    @classmethod
    def _refuse_what_is_no_base_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError(
                "write the API's base URL with its scheme, such as https://api.openai.com/v1"
            )
        return url

    @field_validator("memory_embedder_api_key")
    @classmethod
    def _refuse_a_key_no_header_can_carry(cls, key: SecretStr | None) -> SecretStr | None:
        # The refusal names the rule, never the key.
        if key is not None and not re.fullmatch(r"[\x21-\x7e]+", key.get_secret_value()):
            raise ValueError(
                "must be printable ASCII without spaces (it is sent as a bearer token)"
            )
        return key

    @model_validator(mode="after")
    def _remote_embedder_needs_a_url(self) -> Self:
        if self.memory_embedder == "openai":
            url = self.memory_embedder_url or ""
            if not url.startswith(("http://", "https://")):
                raise ValueError(
                    "SESSION_STATE_MEMORY_EMBEDDER=openai needs SESSION_STATE_MEMORY_EMBEDDER_URL, "
                    "an http:// or https:// base URL such as https://api.openai.com/v1"
                )
        if self.memory_embedder_api_key_file is not None:
            try:
                self.memory_embedder_api_key_file.read_text()
            except (OSError, UnicodeDecodeError) as error:
                raise ValueError(
                    "SESSION_STATE_MEMORY_EMBEDDER_API_KEY_FILE cannot be read "
                    f"({type(error).__name__})"
                ) from None
        return self

    def memory_embedder_api_key_value(self) -> str | None:
        """The key from its file, else from its setting."""
        if self.memory_embedder_api_key_file is not None:
            return self.memory_embedder_api_key_file.read_text().strip() or None
        if self.memory_embedder_api_key is not None:
            return self.memory_embedder_api_key.get_secret_value() or None
        return None

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def postgresql_address(self) -> PostgresqlAddress:
        """The servers, user, database and options of a PostgreSQL database_url."""
        return parse_postgresql_url(self.database_url)


def _is_ip_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@lru_cache
def get_settings() -> Settings:
    return Settings()
