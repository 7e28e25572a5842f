"""The limits every request is held to, in one place: validation, errors,
the documents and the OpenAPI description read them from here."""

from dataclasses import dataclass
from typing import Protocol

# Limits on what one request may store or receive. The defaults are far above
# what an agent writes by accident; each can be lowered (or raised within the
# maximum) per deployment.
DEFAULT_MAX_JSON_DEPTH = 64
# orjson refuses to write documents nested deeper than 254 levels, and a stored
# event wraps a state value in three more levels.
MAX_JSON_DEPTH_CEILING = 200
DEFAULT_MAX_KEY_LENGTH = 256
# PostgreSQL's btree entries hold at most ~2,700 bytes: app name, user id and
# key (4 bytes a character at worst) must fit one.
MAX_KEY_LENGTH_CEILING = 256
DEFAULT_MAX_STATE_BYTES = 1024 * 1024
DEFAULT_MAX_EVENT_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
# Stored items one request may open and read with encryption at rest on,
# where a LangGraph store search's filter and keywords run in the server on
# opened values (app.langgraph.store.item_sql): a bound on the work a filter
# that never matches can ask for, far above what a page of a narrow
# namespace prefix needs.
DEFAULT_MAX_STORE_SCAN_ROWS = 10_000

# Event timestamps are epoch seconds from 1970-01-01 to 9999-12-31 (what
# every datetime library can show, memory entries included).
MIN_TIMESTAMP = 0.0
MAX_TIMESTAMP = 253402300799.0
# Integers a query or header may carry: what a PostgreSQL bigint holds.
MAX_INT64 = 2**63 - 1
# Events a removal may answer with (`returnRemoved`): a pop's worth, bounded
# so that the answer is read in one go.
MAX_RETURNED_REMOVED_EVENTS = 100
# Transactions in flight a walk's horizon names, at most (PostgreSQL):
# past them, its bound is lowered to the first left out, so that a sessions
# page token stays within MAX_TOKEN_LENGTH (app.core.pagination).
MAX_RUNNING_IN_HORIZON = 128
# Bodies above this are parsed and checked off the event loop.
OFFLOAD_BODY_BYTES = 256 * 1024


class LimitSettings(Protocol):
    """The settings a deployment's limits are read from (app.core.config.Settings
    has them); named here so that the settings depend on this module and not
    the reverse."""

    @property
    def max_json_depth(self) -> int: ...
    @property
    def max_key_length(self) -> int: ...
    @property
    def max_state_bytes(self) -> int: ...
    @property
    def max_event_bytes(self) -> int: ...
    @property
    def max_response_bytes(self) -> int: ...
    @property
    def max_store_scan_rows(self) -> int: ...


@dataclass(frozen=True)
class Limits:
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    max_key_length: int = DEFAULT_MAX_KEY_LENGTH
    max_state_bytes: int = DEFAULT_MAX_STATE_BYTES
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_store_scan_rows: int = DEFAULT_MAX_STORE_SCAN_ROWS

    @classmethod
    def from_settings(cls, settings: LimitSettings) -> "Limits":
        return cls(
            max_json_depth=settings.max_json_depth,
            max_key_length=settings.max_key_length,
            max_state_bytes=settings.max_state_bytes,
            max_event_bytes=settings.max_event_bytes,
            max_response_bytes=settings.max_response_bytes,
            max_store_scan_rows=settings.max_store_scan_rows,
        )

    def describe(self) -> str:
        """The limits in Markdown, for the OpenAPI description."""
        mib = 1024 * 1024
        return "\n".join(
            [
                "**Limits** (this deployment's; each is a `SESSION_STATE_` setting):",
                "",
                f"- JSON bodies nest at most {self.max_json_depth} levels of arrays and "
                "objects (`MAX_JSON_DEPTH`); numbers are finite; strings hold no NUL "
                "(U+0000) and no lone surrogate: 422 `validation_error` naming the field.",
                f"- State keys are at most {self.max_key_length} characters, prefix "
                "included (`MAX_KEY_LENGTH`): 422 `validation_error`.",
                f"- Each scope's state (an app's, a user's, a session's) is at most "
                f"{self.max_state_bytes / mib:g} MiB as JSON (`MAX_STATE_BYTES`): a write "
                "past it is 422 `state_too_large`, with nothing written.",
                f"- One event is at most {self.max_event_bytes / mib:g} MiB as JSON "
                "(`MAX_EVENT_BYTES`): 413 `event_too_large`.",
                f"- A response carries at most {self.max_response_bytes / mib:g} MiB "
                "(`MAX_RESPONSE_BYTES`): event and session pages end early (follow "
                "`nextPageToken`); a session read whose events pass it is 413 "
                "`response_too_large` (use `numRecentEvents`, `afterTimestamp` or the "
                "events pages).",
                f"- With encryption at rest on, one request's LangGraph store searches "
                f"with a filter or a query read at most {self.max_store_scan_rows} items "
                "(`MAX_STORE_SCAN_ROWS`): a search that cannot fill its page within them "
                "is 400 `store_search_too_broad`.",
                f"- Event timestamps are epoch seconds from {MIN_TIMESTAMP:.0f} to "
                f"{MAX_TIMESTAMP:.0f} (1970 to 9999); `If-Match` and integer query values "
                f"are ASCII digits up to {MAX_INT64}.",
            ]
        )
