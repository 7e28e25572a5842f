"""Several threads' batches in one request (`POST
/apps/{app}/thread-operations`), each answered in a result of its own
exactly as its thread's own batch route would have answered it.

What it is for: an async saver running many threads at once (an agent
server's concurrent graphs) sends the batches that wait behind its
requests in flight together, so that one request's cost (HTTP, the ASGI
stack, the client's) is shared among them, as the appends to several
sessions share theirs (app.sessions.session_appends).

The wrapper and every batch's fields are checked first: a problem there
refuses the whole request and nothing is written. Each batch is then read
and applied by its own route's code, in a transaction of its own, and its
problem (403, 422, 503, ...) is its own result, never its neighbours'. A
thread's batches run in the order given; threads run at once.
"""

import asyncio
from typing import Any

from fastapi.responses import Response

from ...core import json_codec
from ...core.errors import ServiceError
from ...http import rendering
from ...http.bodies import validate_body
from ...http.problems import service_error_document
from .domain import ThreadKey
from .schemas import ThreadOperations, ThreadOperationsRequest
from .service import CheckpointService
from .write_bodies import apply_batch

_STORED = b'{"status":204}'


async def apply_thread_batches(
    service: CheckpointService, app_name: str, document: Any
) -> Response:
    """200 with each batch's result, in order. Raises ServiceError for a
    request refused whole."""
    request = validate_body(ThreadOperationsRequest, document)
    results: list[bytes] = [b""] * len(request.threads)
    by_thread: dict[str, list[int]] = {}
    for index, batch in enumerate(request.threads):
        by_thread.setdefault(batch.thread_id, []).append(index)

    async def run(thread_id: str, indexes: list[int]) -> None:
        key = ThreadKey(app_name, thread_id)
        for index in indexes:
            results[index] = await _result(service, key, request.threads[index])

    await asyncio.gather(*(run(thread_id, indexes) for thread_id, indexes in by_thread.items()))
    return Response(
        b'{"results":[' + b",".join(results) + b"]}", media_type=rendering.JSON_MEDIA_TYPE
    )


async def _result(service: CheckpointService, key: ThreadKey, batch: ThreadOperations) -> bytes:
    try:
        await apply_batch(service, key, batch)
    except ServiceError as error:
        problem = json_codec.dumps(service_error_document(error))
        return b'{"status":%d,"problem":%s}' % (error.status, problem)
    return _STORED
