"""Erasing a user, or an app: every feature's rows (lifecycle.tables), in
one transaction of the store, so that a reader sees all of them or none and
a failure leaves everything for a retry. The HTTP routes call it."""

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import asdict

from ..core.audit import AuditDetail, audit_event
from ..core.end_user_tokens import acting_end_user
from ..core.errors import ServiceError
from ..langgraph.checkpoints.metrics import THREADS_REMOVED
from ..langgraph.store.metrics import STORE_ITEMS_REMOVED
from ..lifecycle.store import LifecycleStore as Store
from ..sessions.changes import Change
from ..sessions.domain import Erased
from ..streams.changes import ChangeHub

logger = logging.getLogger("session_state")

# Events deleted per statement (a session with more goes alone), so that no
# statement holds a huge list of keys; all in the erasure's one transaction.
ERASE_BATCH_EVENTS = 10_000


class Erasure:
    def __init__(
        self, store: Store, changes: ChangeHub, *, batch_events: int = ERASE_BATCH_EVENTS
    ) -> None:
        self.store = store
        self.changes = changes
        self.batch_events = batch_events

    async def erase_user(self, app_name: str, user_id: str) -> Erased:
        """Everything of the user in the app; nothing when there is nothing."""
        with _audited("erase_user", app=app_name, user=user_id):
            erased = await self.store.erase_user(app_name, user_id, self.batch_events)
        self.changes.publish(Change(app_name, user_id, None, "deleted"))
        _record(erased, "erase_user", app=app_name, user=user_id)
        return erased

    async def erase_app(self, app_name: str) -> Erased:
        """Everything of the app, every user's included."""
        with _audited("erase_app", app=app_name):
            erased = await self.store.erase_app(app_name, self.batch_events)
        self.changes.publish(Change(app_name, None, None, "deleted"))
        _record(erased, "erase_app", app=app_name)
        return erased


def _record(erased: Erased, action: str, **whose: str) -> None:
    THREADS_REMOVED.labels("erased").inc(erased.threads)
    STORE_ITEMS_REMOVED.labels("erased").inc(erased.store_items)
    # Who and how much, never what: counts only.
    logger.info("erased", extra={**whose, **asdict(erased)})
    details: dict[str, AuditDetail] = {**whose, **asdict(erased), **_asked_by()}
    audit_event(action, "ok", **details)


def _asked_by() -> dict[str, str | None]:
    """Who asked: the end user whose token it was, or None (an API key, or
    open mode; the request id joins the line to the request's)."""
    user = acting_end_user()
    return {"end_user": user.user_id if user is not None else None}


@contextlib.contextmanager
def _audited(action: str, **whose: str) -> Iterator[None]:
    """A failed erasure is in the audit trail too, with why (its error's code)."""
    try:
        yield
    except ServiceError as error:
        details: dict[str, AuditDetail] = {**whose, **_asked_by()}
        audit_event(action, error.code, **details)
        raise
