"""The audit trail: one structured log line per operation a data-protection
officer asks about (erasures, exports, imports, key rotation, refused end-user
tokens), on the logger `session_state.audit`.

Log lines rather than a table: they leave the database with the events they
describe (an erasure must not erase its own record), they reach the log
pipeline an operator already keeps and retains, and writing one costs no
transaction. Each line holds `audit_action`, `audit_outcome` and the
operation's identifiers, never the content it touched."""

import logging

AUDIT_LOGGER_NAME = "session_state.audit"
audit_logger = logging.getLogger(AUDIT_LOGGER_NAME)

AuditDetail = str | int | bool | None


def audit_event(action: str, outcome: str = "ok", **details: AuditDetail) -> None:
    """Records one audited operation: `action` such as "erase_user", `outcome`
    "ok" or why it failed, and the identifiers it concerned."""
    fields = {f"audit_{name}": value for name, value in details.items()}
    audit_logger.info(
        "audit %s %s",
        action,
        outcome,
        extra={"audit_action": action, "audit_outcome": outcome, **fields},
    )
