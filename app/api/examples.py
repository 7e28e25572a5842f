"""The request bodies the OpenAPI spec shows as examples. The README's quick
start sends exactly these (tests/test_openapi_examples.py holds both to
it), so Swagger UI's "Try it out" runs the README's scenario as printed."""

from typing import Any

CREATE_SESSION: dict[str, Any] = {
    "sessionId": "trip-1",
    "state": {"user:login_count": 1, "stage": "new"},
}
APPEND_EVENT: dict[str, Any] = {
    "id": "e1",
    "author": "planner",
    "invocationId": "inv-1",
    "content": {"role": "model", "parts": [{"text": "Booked."}]},
    "actions": {
        "stateDelta": {
            "stage": "booked",
            "user:login_count": 2,
            "app:bookings_total": 41,
            "temp:scratch": "gone",
        }
    },
}
PATCH_STATE: dict[str, Any] = {"stateDelta": {"stage": "paid"}}
# The README's labels: a labelled session, and its labels replaced.
CREATE_LABELLED_SESSION: dict[str, Any] = {
    "sessionId": "trip-2",
    "labels": {"env": "prod", "team": "lisbon"},
}
REPLACE_LABELS: dict[str, Any] = {"labels": {"env": "prod", "team": "porto"}}
INGEST_MEMORY: dict[str, Any] = {"sessionId": "trip-1"}
FORK: dict[str, Any] = {"sessionId": "trip-1-retry", "upToEventId": "e1"}
# The README's memory search by meaning: a paraphrase finds "dog".
ADD_MEMORIES: dict[str, Any] = {
    "memories": [
        {
            "id": "dog",
            "content": {"parts": [{"text": "I adopted a golden retriever puppy last spring."}]},
        },
        {"id": "trip", "content": {"parts": [{"text": "My flight to Lisbon leaves on Tuesday."}]}},
    ]
}


def media_examples(value: dict[str, Any], labelled: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `examples` of a JSON request body's media type: the quick start's,
    and the labels section's where it sends one to the same endpoint."""
    found = {"readme": {"summary": "The README's quick start", "value": value}}
    if labelled is not None:
        found["labels"] = {"summary": "The README's labels", "value": labelled}
    return found
