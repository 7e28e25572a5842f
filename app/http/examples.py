"""The request bodies the OpenAPI spec shows as examples, one at least for
every JSON body. The README's quick start and docs/api.md's examples send
exactly these (tests/test_openapi_examples.py holds both to it), so Swagger
UI's "Try it out" starts from a request the documents run as printed."""

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


# docs/api.md's examples, in the order its sections send them.
README = "The README's quick start"
API_DOCS = "The example of docs/api.md"
APPEND_EVENTS: dict[str, Any] = {
    "events": [
        {"id": "u1", "author": "user", "actions": {"stateDelta": {"topic": "tea"}}},
        {"id": "m1", "author": "model"},
    ]
}
# The second append names a revision its session has moved past: refused on its own.
APPEND_TO_SESSIONS: dict[str, Any] = {
    "appends": [
        {"userId": "dee", "sessionId": "one", "event": {"id": "d1", "author": "user"}},
        {
            "userId": "eve",
            "sessionId": "two",
            "ifMatch": 5,
            "event": {"id": "e1", "author": "user"},
        },
        {
            "userId": "dee",
            "sessionId": "one",
            "ifMatch": 1,
            "event": {"id": "d2", "author": "model"},
        },
    ]
}
REWIND: dict[str, Any] = {"beforeInvocationId": "inv-2"}
ADD_MEMORY_EVENTS: dict[str, Any] = {
    "sessionId": "s1",
    "events": [
        {
            "id": "ev1",
            "author": "user",
            "timestamp": 1700000000,
            "content": {"role": "user", "parts": [{"text": "I booked a hotel in Lisbon"}]},
        }
    ],
}
# LangGraph's serializer output: `data` is base64 of {"v": 4} and ["hi"], ["hello"].
PUT_CHECKPOINT: dict[str, Any] = {
    "checkpoint": {"type": "json", "data": "eyJ2IjogNH0="},
    "metadata": {"source": "input", "step": -1, "run_id": "run-1"},
    "channelVersions": {"messages": "1"},
    "newValues": [{"channel": "messages", "version": "1", "type": "json", "data": "WyJoaSJd"}],
    "userId": "ada",
}
PUT_WRITES: dict[str, Any] = {
    "writes": [
        {
            "taskId": "task-1",
            "taskPath": "~__pregel_pull, agent",
            "idx": 0,
            "channel": "messages",
            "type": "json",
            "data": "WyJoZWxsbyJd",
        }
    ],
    "userId": "ada",
}
CHECKPOINT_OPERATIONS: dict[str, Any] = {
    "operations": [
        {
            "op": "putWrites",
            "checkpointId": "cp-1",
            "writes": [
                {
                    "taskId": "task-2",
                    "idx": 0,
                    "channel": "messages",
                    "type": "json",
                    "data": "WyJoaSJd",
                }
            ],
        },
        {
            "op": "put",
            "checkpointId": "cp-1b",
            "parentCheckpointId": "cp-1",
            "checkpoint": {"type": "json", "data": "eyJ2IjogNH0="},
            "metadata": {"source": "loop", "step": 0, "run_id": "run-1"},
            "channelVersions": {"messages": "1"},
        },
    ],
    "userId": "ada",
}
_FIRST_CHECKPOINT: dict[str, Any] = {
    "op": "put",
    "checkpointId": "c1",
    "checkpoint": {"type": "json", "data": "eyJ2IjogMX0="},
    "metadata": {"source": "input", "step": -1},
    "channelVersions": {},
}
# Two threads' batches, the second refused on its own (a value without data).
THREAD_OPERATIONS: dict[str, Any] = {
    "threads": [
        {"threadId": "t7", "operations": [_FIRST_CHECKPOINT]},
        {
            "threadId": "t8",
            "operations": [{**_FIRST_CHECKPOINT, "checkpoint": {"type": "json"}}],
        },
    ]
}
COPY_THREAD: dict[str, Any] = {"targetThreadId": "t1-copy"}
PRUNE_THREADS: dict[str, Any] = {"threadIds": ["t1-copy"], "strategy": "keep_latest"}
DELETE_RUNS: dict[str, Any] = {"runIds": ["run-1"]}
STORE_BATCH: dict[str, Any] = {
    "ops": [
        {
            "op": "put",
            "namespace": ["ada", "memories"],
            "key": "m1",
            "value": {"text": "likes window seats", "kind": "preference"},
        },
        {
            "op": "put",
            "namespace": ["ada", "memories"],
            "key": "m2",
            "value": {"text": "flies to Lyon", "kind": "trip", "nights": 3},
            "ttlSeconds": 86400,
        },
    ]
}
PUT_ITEM: dict[str, Any] = {
    "value": {"text": "vegetarian", "kind": "preference"},
    "ttlSeconds": 3600,
}
SEARCH_STORE: dict[str, Any] = {"namespacePrefix": ["ada"], "filter": {"nights": {"$gte": 2}}}
LIST_NAMESPACES: dict[str, Any] = {"maxDepth": 1}


def media_examples(
    value: dict[str, Any], labelled: dict[str, Any] | None = None, *, summary: str = README
) -> dict[str, Any]:
    """The `examples` of a JSON request body's media type: the quick start's
    (or, with `summary`, the document's that sends it), and the README labels
    section's where it sends one to the same endpoint."""
    found = {"readme" if summary == README else "docs": {"summary": summary, "value": value}}
    if labelled is not None:
        found["labels"] = {"summary": "The README's labels", "value": labelled}
    return found
