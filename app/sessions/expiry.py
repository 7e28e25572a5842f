"""Session expiry: the deployment's defaults, and what a request may ask.

A session expires `ttlSeconds` after its last stored append (an idle
timeout), or at `expireTime` (epoch seconds); a request naming neither gets
its app's default, else the deployment's, else no expiry. From its expiry
time on, a session is missing for every API call; the sweeper deletes it
later (`sweeper.py`).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.config import MAX_TTL_SECONDS
from ..core.errors import FieldError, InvalidInput
from .domain import NEVER_EXPIRES, Expiry


@dataclass(frozen=True)
class ExpiryDefaults:
    """SESSION_STATE_DEFAULT_TTL_SECONDS and SESSION_STATE_APP_TTL_SECONDS."""

    ttl_seconds: float | None = None
    app_ttl_seconds: Mapping[str, float] = field(default_factory=dict)

    def for_app(self, app_name: str) -> Expiry:
        ttl = self.app_ttl_seconds.get(app_name, self.ttl_seconds)
        return NEVER_EXPIRES if ttl is None else Expiry(ttl_seconds=ttl)


def check_requested(expiry: Expiry, now: float, *, where: str = "body") -> None:
    """Refuses an `expireTime` that is not in the future (such a session
    would be gone before the response arrives; to delete a session now,
    DELETE it) or more than MAX_TTL_SECONDS ahead."""
    if expiry.expire_time is None:
        return
    problem = None
    if expiry.expire_time <= now:
        problem = (
            f"must be later than now ({now:.3f} by the server's clock); "
            "to remove a session now, DELETE it"
        )
    elif expiry.expire_time - now > MAX_TTL_SECONDS:
        problem = "must be at most 100 years from now"
    if problem is not None:
        raise InvalidInput([FieldError([where, "expireTime"], problem)])
