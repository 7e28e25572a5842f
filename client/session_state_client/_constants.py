"""Defaults, each overridable per client."""

import httpx

BASE_URL_ENV = "SESSION_STATE_BASE_URL"
API_KEY_ENV = "SESSION_STATE_API_KEY"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
DEFAULT_MAX_RETRIES = 2
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
# Sessions whose last seen revision a client keeps (for read-your-writes).
MAX_REMEMBERED_SESSIONS = 4096
