"""The event contract: what the service checks of an ADK event, defined once.
`events.py` validates by these names, bounds and messages (by hand: appends
are the hot path) and `schemas.Event` documents them in the OpenAPI spec;
tests/test_event_contract.py sends each documented bound to the validator.
Every other field of an event is stored as sent."""

from ..core.identifiers import IDENTIFIER_MAX_LENGTH
from ..core.limits import MAX_TIMESTAMP, MIN_TIMESTAMP

ID_MIN_LENGTH = 1
ID_MAX_LENGTH = IDENTIFIER_MAX_LENGTH
ID_MESSAGE = f"must be a string of {ID_MIN_LENGTH} to {ID_MAX_LENGTH} characters"
ID_DESCRIPTION = "Assigned (uuid4) when missing; unique within its session."

AUTHOR_MESSAGE = "is required and must be a string"

TIMESTAMP_MINIMUM = MIN_TIMESTAMP
TIMESTAMP_MAXIMUM = MAX_TIMESTAMP
TIMESTAMP_MESSAGE = (
    f"must be a number of epoch seconds from {TIMESTAMP_MINIMUM:.0f} to "
    f"{TIMESTAMP_MAXIMUM:.0f} (1970 to 9999)"
)
TIMESTAMP_DESCRIPTION = (
    f"Epoch seconds, 1970 to 9999 ({TIMESTAMP_MINIMUM:.0f} to {TIMESTAMP_MAXIMUM:.0f}); "
    "server time if missing."
)

# Both spellings are accepted, camelCase first, as ADK's own models accept them.
INVOCATION_ID = ("invocationId", "invocation_id")
STATE_DELTA = ("stateDelta", "state_delta")
STRING_MESSAGE = "must be a string"
OBJECT_MESSAGE = "must be an object"
BOOLEAN_MESSAGE = "must be a boolean"
NOT_AN_OBJECT_MESSAGE = "an event must be a JSON object"

PARTIAL_DESCRIPTION = "Partial events are not stored."
STATE_DELTA_DESCRIPTION = (
    "Applied to the state: app: and user: keys to their scopes, temp: keys dropped."
)

# Events one batch append may carry.
MAX_BATCH_EVENTS = 1000
# Appends one request to several sessions may carry (POST /apps/{app}/appends).
MAX_APPENDS_PER_REQUEST = 100
