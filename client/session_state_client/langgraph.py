"""LangGraph's checkpointer on a session-state server.

    from session_state_client.langgraph import SessionStateSaver

    with SessionStateSaver("http://127.0.0.1:8000") as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke(inputs, {"configurable": {"thread_id": "t-1", "user_id": "alice"}})

Every method of `BaseCheckpointSaver`, sync and async, the optional ones
included (`delete_for_runs`, `copy_thread`, `prune`). Checkpoints go to the
server's `/apps/{app_name}/threads/...` resources (docs/api.md): the
checkpoint and each channel value as LangGraph's serializer writes them
(bytes, carried as base64), a channel's value sent and stored once per
version. A thread is recorded under `configurable.user_id` (default
"langgraph"), so that erasing that user removes it. `ttl_seconds` gives each
thread an idle timeout, swept by the server.

The async saver commits a thread's writes in groups: while a put or a
put_writes of a thread is on its way, LangGraph's next ones for that thread
(it sends them in the background, durability "async") wait, and go
together in one request when it is answered (`POST
/apps/{app_name}/threads/{thread_id}/operations`: applied in order, all or
none). Each call still returns only once what it wrote is stored, and a
failed batch's error is raised in each of its calls. A call with nothing
to wait for goes alone to its own route, as before; a server without the
batch route (a 404 or 405 whose problem is the unknown route's, an older
one) gets each call alone, after one logged warning. Many threads'
batches, and their calls with nothing to wait for, go together in turn
(`POST /apps/{app_name}/thread-operations`, each answered on its own:
session_state_client._thread_gathering). `batch_writes=False` turns
grouping off; the sync methods never group.

Both classes retry, as the main client does (`max_retries`, backoff with
jitter or the server's Retry-After), a request that did not reach the
server, and one answered 429, 502, 503 or 504 or cut off mid-way when
sending it again is harmless: every request but `copy_thread`'s (a put of
the same checkpoint id, the same writes, a batch of the same puts, a delete
or a prune leave what one would).
"""

import asyncio
import base64
import json
import logging
import random
import time
import weakref
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

import aiohttp
import httpx

from session_state_client._extras import extra_missing

try:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        DeltaChannelHistory,
        get_checkpoint_id,
        get_serializable_checkpoint_metadata,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        NotProvided,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
    )
except ModuleNotFoundError as missing:
    raise extra_missing(__name__, "LangGraph", "langgraph", missing) from missing

from session_state_client._client import TokenSource, token_headers
from session_state_client._constants import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    RETRYABLE_STATUSES,
)
from session_state_client._delta_history import PAGE as DELTA_PAGE
from session_state_client._delta_history import DeltaWalk, ancestry, next_request
from session_state_client._exceptions import (
    APIStatusError,
    error_from_response,
    result_error,
    route_unknown,
)
from session_state_client._requests import Answer, WireAnswer, retry_delay
from session_state_client._thread_gathering import ThreadBatch, ThreadGathering
from session_state_client._transport import (
    AiohttpTransport,
    aiohttp_failure,
    checked_api_key,
    checked_base_url,
    httpx_failure,
)

__all__ = ["DEFAULT_APP_NAME", "SessionStateSaver", "SessionStateStore"]

DEFAULT_APP_NAME = "langgraph"
EMPTY = "empty"
# The server's bounds: checkpoints per list page, ids per prune or delete call.
PAGE_SIZE = 1000
IDS_PER_CALL = 1000

_Body = dict[str, Any]
_Request = tuple[str, str, dict[str, Any], _Body | None]

logger = logging.getLogger("session_state_client")

# The server's bound on the operations of one batch request of a thread.
OPERATIONS_PER_CALL = 64
# A batch holds calls up to this many bytes of values (base64) and metadata, well
# within the server's default body limit (8 MiB): a larger batch would save
# little (its cost is its bytes) and could meet a smaller limit (413).
BATCH_BYTES = 1024 * 1024
_OWNER_FIELDS = ("userId", "ttlSeconds")
# A batch refused with this goes again one call at a time: too large together.
# (A server without the batch route, told by route_unknown, gets every later
# call alone.)
_BATCH_TOO_LARGE = 413
# A request of several threads' batches refused whole with these goes again
# batch by batch: too large together, or a wrapper the server reads otherwise.
# A thread's own batch refused with 422 is not sent again call by call: its
# body is its calls' (a bad value), so the 422 is their error.
_SENT_ALONE_AFTER = (413, 422)
# The loop turns a batch waits before it is taken (see _drain).
_LINGER_TURNS = 3


class _Queued:
    """A put or put_writes waiting for its thread's request in flight."""

    def __init__(self, request: _Request, operation: _Body, done: "asyncio.Future[None]") -> None:
        self.request = request  # as it goes alone
        self.operation = operation  # as it goes in a batch
        body = request[3] or {}
        self.owner = tuple(body.get(name) for name in _OWNER_FIELDS)
        self.weight = _weight(operation)
        self.done = done

    def settle(self, error: Exception | None) -> None:
        if not self.done.done():  # its caller may have been cancelled
            if error is None:
                self.done.set_result(None)
            else:
                self.done.set_exception(error)


def _weight(operation: _Body) -> int:
    """The bytes of an operation's values, as sent (base64), and of a put's
    metadata (the caller's own: it may be as large as a value)."""
    values = [operation.get("checkpoint"), *operation.get("newValues", ())]
    values += operation.get("writes", ())
    weight = sum(len(value.get("data") or "") for value in values if isinstance(value, dict))
    metadata = operation.get("metadata")
    if metadata:
        weight += len(json.dumps(metadata, separators=(",", ":")))
    return weight


class _Lane:
    """A thread's writes on one event loop: whether a request is in flight,
    and the calls queued behind it."""

    def __init__(self) -> None:
        self.queue: list[_Queued] = []
        self.task: asyncio.Task[None] | None = None


def _batch_weight(batch: Sequence[_Queued]) -> int:
    return sum(queued.weight for queued in batch)


_Batches = list[ThreadBatch[_Queued]]


def _thread_entry(batch: ThreadBatch[_Queued]) -> _Body:
    """A thread's batch as one entry of a request of several threads: its
    calls as operations, its owner the first's (a batch has one)."""
    first = batch.items[0].request[3] or {}
    entry: _Body = {"threadId": batch.thread_id}
    entry.update((name, first.get(name)) for name in _OWNER_FIELDS)
    entry["operations"] = [queued.operation for queued in batch.items]
    return entry


def _settle_all(batches: Sequence[ThreadBatch[_Queued]], error: Exception) -> None:
    for batch in batches:
        for queued in batch.items:
            queued.settle(error)


def _segment(value: str) -> str:
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _bytes(text: str | None) -> bytes:
    return b"" if text is None else base64.b64decode(text)


def _json(body: _Body | None) -> bytes | None:
    """JSON as the server takes it: NaN and infinities are refused here, as
    JSON has none."""
    if body is None:
        return None
    return json.dumps(body, allow_nan=False, separators=(",", ":")).encode()


# The longest string kept inside a checkpoint rather than stored once per
# version: every checkpoint repeats what it holds inline.
MAX_INLINE_TEXT = 128


def _inline(value: Any) -> bool:
    kind = type(value)
    if kind is str:
        return len(value) <= MAX_INLINE_TEXT
    return value is None or kind in (int, float, bool)


def _chunks(items: Sequence[str]) -> list[list[str]]:
    ids = list(items)
    return [ids[start : start + IDS_PER_CALL] for start in range(0, len(ids), IDS_PER_CALL)]


class _Server:
    """The two transports the saver and the store send through: httpx for
    sync callers, an aiohttp session per event loop for async ones (so any
    thread and any loop may call), with the errors of both mapped alike and
    the same retries."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float | httpx.Timeout,
        max_retries: int,
        token: TokenSource | None = None,
    ) -> None:
        headers = {"Accept": "application/json"}
        if api_key is not None and token is not None:
            raise ValueError("give api_key or token, not both: each is sent as the bearer")
        if api_key is not None:
            headers["Authorization"] = f"Bearer {checked_api_key(api_key)}"
        self._credentials = token_headers(token)
        url = checked_base_url(base_url)
        self.max_retries = max_retries
        self._sync = httpx.Client(base_url=url, headers=headers, timeout=timeout)
        self._async = AiohttpTransport(url, headers, timeout, None)

    def close(self) -> None:
        self._sync.close()
        self._async.close()

    async def aclose(self) -> None:
        self._sync.close()
        await self._async.aclose()

    def url_of(self, path: str) -> str:
        return self._async.url_of(path)

    def _retry(self, attempt: int, repeatable: bool, answer: Answer) -> bool:
        return (
            attempt < self.max_retries and repeatable and answer.status_code in RETRYABLE_STATUSES
        )

    def _headers(self, body: Any) -> dict[str, str]:
        """A request's own headers: its token (read anew: a callable's), its body's type."""
        headers = self._credentials()
        return headers if body is None else {**headers, "Content-Type": "application/json"}

    def send(self, request: _Request, *, missing_ok: bool = False, repeatable: bool = True) -> Any:
        """`repeatable`: sending it twice leaves what sending it once does."""
        method, path, params, body = request
        headers = self._headers(body)
        content = _json(body)
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = self._sync.request(
                    method, path, params=params, content=content, headers=headers
                )
            except httpx.TransportError as error:
                failure, sent = httpx_failure(error, method, str(self._sync.base_url) + path)
                if attempt >= self.max_retries or (sent and not repeatable):
                    raise failure from error
            else:
                if not self._retry(attempt, repeatable, response):
                    return _read(response.status_code, response, missing_ok)
            time.sleep(retry_delay(attempt, response))
            attempt += 1

    async def asend(
        self, request: _Request, *, missing_ok: bool = False, repeatable: bool = True
    ) -> Any:
        method, path, params, body = request
        headers = self._headers(body)
        content = _json(body)
        attempt = 0
        while True:
            answer: WireAnswer | None = None
            try:
                answer = await self._async.send(method, path, params, content, headers)
            except (aiohttp.ClientError, TimeoutError) as error:
                failure, sent = aiohttp_failure(error, method, self._async.url_of(path))
                if attempt >= self.max_retries or (sent and not repeatable):
                    raise failure from error
            else:
                if not self._retry(attempt, repeatable, answer):
                    return _read(answer.status_code, answer, missing_ok)
            await asyncio.sleep(retry_delay(attempt, answer))
            attempt += 1


def _read(status: int, answer: Answer, missing_ok: bool) -> Any:
    if missing_ok and status == 404:
        return None
    if status >= 400:
        raise error_from_response(answer.to_httpx() if isinstance(answer, WireAnswer) else answer)
    return json.loads(answer.content) if answer.content else None


class _Closing:
    """close()/aclose() and both kinds of `with` for a holder of a _Server."""

    _server: _Server

    def close(self) -> None:
        self._server.close()

    async def aclose(self) -> None:
        await self._server.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        error_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        error_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


class SessionStateSaver(_Closing, BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on a session-state server, usable from sync
    and async code, any thread and any event loop."""

    def __init__(
        self,
        base_url: str,
        *,
        app_name: str = DEFAULT_APP_NAME,
        api_key: str | None = None,
        token: TokenSource | None = None,
        ttl_seconds: float | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        serde: SerializerProtocol | None = None,
        batch_writes: bool = True,
    ) -> None:
        """`app_name`: the server's app these threads are in (API keys are
        scoped to apps). `ttl_seconds`: each thread expires this long after
        its last write (None: never). `max_retries`: extra attempts (see
        the module's text). `token`: an end-user token in place of an API
        key, a string or a callable returning a valid one (called per
        request): the threads are then that user's. `batch_writes`: the
        async methods group a thread's puts and put_writes made while one
        is in flight into one request (see the module's text)."""
        super().__init__(serde=serde)
        self.app_name = app_name
        self.ttl_seconds = ttl_seconds
        self.batch_writes = batch_writes
        # False once the server answered a batch 404 or 405 (an older one).
        self._batch_route = True
        # False once it answered a request of several threads so.
        self._threads_route = True
        self._gathering: ThreadGathering[_Queued] = ThreadGathering(
            self._send_batch, self._send_threads, _batch_weight, BATCH_BYTES
        )
        self._server = _Server(base_url, api_key, timeout, max_retries, token)
        # Per event loop, each thread's lane of writes.
        self._lanes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Lane]] = (
            weakref.WeakKeyDictionary()
        )

    # -- requests ----------------------------------------------------------------

    def _thread_path(self, thread_id: str) -> str:
        return f"/apps/{_segment(self.app_name)}/threads/{_segment(thread_id)}"

    def _checkpoint_path(self, thread_id: str, checkpoint_id: str) -> str:
        return f"{self._thread_path(thread_id)}/checkpoints/{_segment(checkpoint_id)}"

    def _owner(self, config: RunnableConfig) -> _Body:
        user_id = config["configurable"].get("user_id")
        return {
            "userId": user_id if isinstance(user_id, str) and user_id else None,
            "ttlSeconds": self.ttl_seconds,
        }

    def _put_request(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> tuple[_Request, RunnableConfig]:
        configurable = config["configurable"]
        thread_id = configurable["thread_id"]
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        header: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = header.pop("channel_values", {})
        # Small plain values ride in the checkpoint itself, as PostgresSaver
        # keeps them: a row of their own would cost more than they weigh.
        inline = {channel: value for channel, value in values.items() if _inline(value)}
        if inline:
            header["channel_values"] = inline
        # The server keeps the versions (channelVersions): not sent twice.
        if all(isinstance(version, str) for version in checkpoint["channel_versions"].values()):
            del header["channel_versions"]
        new_values = []
        for channel, version in new_versions.items():
            if channel in inline:
                continue
            kind, data = (
                self.serde.dumps_typed(values[channel]) if channel in values else (EMPTY, None)
            )
            new_values.append(
                {"channel": channel, "version": str(version), "type": kind, "data": _b64(data)}
            )
        kind, data = self.serde.dumps_typed(header)
        body = {
            **self._owner(config),
            "parentCheckpointId": configurable.get("checkpoint_id"),
            "checkpoint": {"type": kind, "data": _b64(data)},
            "metadata": get_serializable_checkpoint_metadata(config, metadata),
            "channelVersions": {
                channel: str(version) for channel, version in checkpoint["channel_versions"].items()
            },
            "newValues": new_values,
        }
        request: _Request = (
            "PUT",
            self._checkpoint_path(thread_id, checkpoint["id"]),
            {"checkpointNs": checkpoint_ns},
            body,
        )
        stored: RunnableConfig = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }
        return request, stored

    def _writes_request(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> _Request:
        configurable = config["configurable"]
        encoded = []
        for index, (channel, value) in enumerate(writes):
            kind, data = self.serde.dumps_typed(value)
            encoded.append(
                {
                    "taskId": task_id,
                    "taskPath": task_path,
                    "idx": WRITES_IDX_MAP.get(channel, index),
                    "channel": channel,
                    "type": kind,
                    "data": _b64(data),
                }
            )
        return (
            "POST",
            self._checkpoint_path(configurable["thread_id"], configurable["checkpoint_id"])
            + "/writes",
            {"checkpointNs": configurable.get("checkpoint_ns", "")},
            {**self._owner(config), "writes": encoded},
        )

    def _get_request(self, config: RunnableConfig) -> tuple[_Request, bool]:
        """The request for get_tuple, and whether it reads one checkpoint (by
        id) rather than a list page of the latest."""
        configurable = config["configurable"]
        thread_id = configurable["thread_id"]
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            path = self._checkpoint_path(thread_id, checkpoint_id)
            return ("GET", path, {"checkpointNs": checkpoint_ns}, None), True
        path = self._thread_path(thread_id) + "/checkpoints"
        return ("GET", path, {"checkpointNs": checkpoint_ns, "limit": 1}, None), False

    def _list_request(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
        page_token: str | None,
    ) -> _Request:
        """A page of a thread's checkpoints, or of the app's (of the user
        the config names, if any) when it names no thread."""
        configurable: Mapping[str, Any] = (config or {}).get("configurable", {})
        params: dict[str, Any] = {"limit": min(limit or PAGE_SIZE, PAGE_SIZE)}
        if configurable.get("checkpoint_ns") is not None:
            params["checkpointNs"] = configurable["checkpoint_ns"]
        if filter:
            params["metadata"] = json.dumps(filter, allow_nan=False)
        if before is not None and (before_id := get_checkpoint_id(before)):
            params["before"] = before_id
        if page_token is not None:
            params["pageToken"] = page_token
        thread_id = configurable.get("thread_id")
        if thread_id:
            return ("GET", self._thread_path(thread_id) + "/checkpoints", params, None)
        if user_id := configurable.get("user_id"):
            params["userId"] = user_id
        return ("GET", f"/apps/{_segment(self.app_name)}/checkpoints", params, None)

    def _list_cursor(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> "_ListCursor":
        return _ListCursor(self, config, filter, before, limit)

    def _tuple(self, thread_id: str, document: Mapping[str, Any]) -> CheckpointTuple:
        checkpoint_ns = document["checkpointNs"]
        header = document["checkpoint"]
        checkpoint: Checkpoint = self.serde.loads_typed((header["type"], _bytes(header["data"])))
        checkpoint.setdefault("channel_versions", dict(document["channelVersions"]))
        checkpoint["channel_values"] = {
            **checkpoint.get("channel_values", {}),
            **{
                value["channel"]: self.serde.loads_typed((value["type"], _bytes(value["data"])))
                for value in document["channelValues"]
                if value["type"] != EMPTY
            },
        }
        parent = document["parentCheckpointId"]
        return CheckpointTuple(
            config={
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": checkpoint_ns,
                    "checkpoint_id": document["checkpointId"],
                }
            },
            checkpoint=checkpoint,
            metadata=document["metadata"],
            parent_config=None
            if parent is None
            else {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": checkpoint_ns,
                    "checkpoint_id": parent,
                }
            },
            pending_writes=[
                (
                    write["taskId"],
                    write["channel"],
                    self.serde.loads_typed((write["type"], _bytes(write["data"]))),
                )
                for write in document["pendingWrites"]
            ],
        )

    def _found(self, config: RunnableConfig, answer: Any, by_id: bool) -> CheckpointTuple | None:
        if answer is None:
            return None
        document = answer if by_id else next(iter(answer["checkpoints"]), None)
        if document is None:
            return None
        return self._tuple(config["configurable"]["thread_id"], document)

    def _prune_requests(self, thread_ids: Sequence[str], strategy: str) -> list[_Request]:
        path = f"/apps/{_segment(self.app_name)}/threads/prune"
        return [
            ("POST", path, {}, {"threadIds": chunk, "strategy": strategy})
            for chunk in _chunks(thread_ids)
        ]

    def _runs_requests(self, run_ids: Sequence[str]) -> list[_Request]:
        path = f"/apps/{_segment(self.app_name)}/runs/delete"
        return [("POST", path, {}, {"runIds": chunk}) for chunk in _chunks(run_ids)]

    def _copy_request(self, source_thread_id: str, target_thread_id: str) -> _Request:
        path = self._thread_path(source_thread_id) + "/copy"
        return ("POST", path, {}, {"targetThreadId": target_thread_id})

    # -- BaseCheckpointSaver, sync -------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        request, by_id = self._get_request(config)
        return self._found(config, self._server.send(request, missing_ok=by_id), by_id)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        cursor = self._list_cursor(config, filter, before, limit)
        while (request := cursor.next_request()) is not None:
            yield from cursor.read(self._server.send(request, missing_ok=cursor.by_id))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        request, stored = self._put_request(config, checkpoint, metadata, new_versions)
        self._server.send(request)
        return stored

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._server.send(self._writes_request(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._server.send(("DELETE", self._thread_path(thread_id), {}, None))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        for request in self._runs_requests(run_ids):
            self._server.send(request)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        # Not repeated once it may have arrived: a second copy finds the target taken.
        self._server.send(self._copy_request(source_thread_id, target_thread_id), repeatable=False)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        for request in self._prune_requests(thread_ids, strategy):
            self._server.send(request)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The base saver's answer, read from pages of the thread's
        checkpoints instead of one request per ancestor
        (session_state_client._delta_history)."""
        walk = DeltaWalk(channels)
        if not walk.channels:
            return {}
        target = self.get_tuple(config)
        if target is not None:
            walking = ancestry(target, walk)
            request = next_request(walking, None)
            while request is not None:
                page = list(self.list(request[0], before=request[1], limit=DELTA_PAGE))
                request = next_request(walking, page)
        return walk.history()

    # -- BaseCheckpointSaver, async ------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        request, by_id = self._get_request(config)
        return self._found(config, await self._server.asend(request, missing_ok=by_id), by_id)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        cursor = self._list_cursor(config, filter, before, limit)
        while (request := cursor.next_request()) is not None:
            for found in cursor.read(await self._server.asend(request, missing_ok=cursor.by_id)):
                yield found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        request, stored = self._put_request(config, checkpoint, metadata, new_versions)
        await self._write(stored, "put", request)
        return stored

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        request = self._writes_request(config, writes, task_id, task_path)
        await self._write(config, "putWrites", request)

    # -- a thread's writes, grouped ------------------------------------------------

    async def _write(self, config: RunnableConfig, kind: str, request: _Request) -> None:
        """Sends a put or put_writes: alone when its thread has no request
        in flight on this loop, else in the next batch of the thread's
        queued calls; returns once it is stored."""
        loop = asyncio.get_running_loop()
        lanes = self._lanes.get(loop)
        if lanes is None:
            lanes = self._lanes[loop] = {}
        thread_id: str = config["configurable"]["thread_id"]
        lane = lanes.get(thread_id)
        # Not grouped: each call alone, once the thread's queued ones are sent.
        if lane is None and not (self.batch_writes and self._batch_route):
            await self._server.asend(request)
            return
        configurable = config["configurable"]
        body = dict(request[3] or {})
        for name in _OWNER_FIELDS:
            body.pop(name, None)
        operation = {
            "op": kind,
            "checkpointId": configurable["checkpoint_id"],
            "checkpointNs": configurable.get("checkpoint_ns", ""),
            **body,
        }
        queued = _Queued(request, operation, loop.create_future())
        if lane is None:
            # Nothing of the thread in flight: it goes now, with the batches
            # other threads make in this turn of the loop.
            lane = lanes[thread_id] = _Lane()
            try:
                await self._gathering.send(thread_id, [queued])
            finally:
                self._next(lanes, thread_id, lane)
        else:
            lane.queue.append(queued)
        await queued.done

    def _next(self, lanes: dict[str, _Lane], thread_id: str, lane: _Lane) -> None:
        """After a thread's request: its queued calls go, or the lane closes."""
        if lane.queue:
            lane.task = asyncio.get_running_loop().create_task(self._drain(lanes, thread_id, lane))
        elif lanes.get(thread_id) is lane:
            del lanes[thread_id]

    async def _drain(self, lanes: dict[str, _Lane], thread_id: str, lane: _Lane) -> None:
        batch: list[_Queued] = []
        try:
            # A few turns of the loop first: LangGraph calls a step's aput
            # only once the previous aput has returned (it keeps them in
            # order), a turn or two after the request that held it back, so
            # that it joins the writes queued meanwhile.
            for _ in range(_LINGER_TURNS):
                await asyncio.sleep(0)
            while lane.queue:
                # The longest run from the front with one owner (the batch
                # has one) and within BATCH_BYTES, in the order the calls
                # were made; a call larger than that goes alone.
                owner = lane.queue[0].owner
                size, weight = 1, lane.queue[0].weight
                while (
                    size < min(len(lane.queue), OPERATIONS_PER_CALL)
                    and lane.queue[size].owner == owner
                    and weight + lane.queue[size].weight <= BATCH_BYTES
                ):
                    weight += lane.queue[size].weight
                    size += 1
                batch = lane.queue[:size]
                del lane.queue[:size]
                await self._gathering.send(thread_id, batch)
        except asyncio.CancelledError:
            for queued in [*batch, *lane.queue]:
                queued.done.cancel()
            raise
        finally:
            if lanes.get(thread_id) is lane:
                del lanes[thread_id]

    async def _send_batch(self, thread_id: str, batch: Sequence[_Queued]) -> None:
        """Settles each call of the batch: stored, or the error it met."""
        if len(batch) > 1 and self._batch_route:
            first = batch[0].request[3] or {}
            body = {name: first.get(name) for name in _OWNER_FIELDS}
            body["operations"] = [queued.operation for queued in batch]
            path = self._thread_path(thread_id) + "/operations"
            try:
                await self._server.asend(("POST", path, {}, body))
            except APIStatusError as error:
                if route_unknown(error):
                    logger.warning(
                        "the server has no route for a thread's batch of writes "
                        "(%s): each is sent alone from now on",
                        error.status_code,
                    )
                    self._batch_route = False
                elif error.status_code != _BATCH_TOO_LARGE:
                    for queued in batch:
                        queued.settle(error)
                    return
            except Exception as error:
                for queued in batch:
                    queued.settle(error)
                return
            else:
                for queued in batch:
                    queued.settle(None)
                return
        for queued in batch:
            try:
                await self._server.asend(queued.request)
            except Exception as error:
                queued.settle(error)
            else:
                queued.settle(None)

    async def _send_threads(self, batches: Sequence[ThreadBatch[_Queued]]) -> None:
        """Settles each call of several threads' batches, sent in one request
        when the server takes it; a batch's refusal is its own calls' error."""
        if self._threads_route:
            path = f"/apps/{_segment(self.app_name)}/thread-operations"
            body = {"threads": [_thread_entry(batch) for batch in batches]}
            try:
                answer = await self._server.asend(("POST", path, {}, body))
            except APIStatusError as error:
                if route_unknown(error):
                    logger.warning(
                        "the server has no route for several threads' batches (%s): "
                        "each thread's is sent alone from now on",
                        error.status_code,
                    )
                    self._threads_route = False
                elif error.status_code not in _SENT_ALONE_AFTER:
                    _settle_all(batches, error)
                    return
            except Exception as error:
                _settle_all(batches, error)
                return
            else:
                try:
                    batches = self._settle_results(batches, answer["results"], path)
                except (KeyError, TypeError, ValueError) as error:
                    # Not this route's answer (a proxy's, say): each call raises.
                    _settle_all(batches, ValueError(f"{path} answered without results: {error!r}"))
                    return
        await asyncio.gather(*(self._send_batch(batch.thread_id, batch.items) for batch in batches))

    def _settle_results(
        self, batches: Sequence[ThreadBatch[_Queued]], results: Sequence[Any], path: str
    ) -> Sequence[ThreadBatch[_Queued]]:
        """Settles each batch by its result; returns those to send again
        alone (a status its own request would have retried)."""
        again: _Batches = []
        for batch, result in zip(batches, results, strict=True):
            status = result["status"]
            if status in RETRYABLE_STATUSES:
                again.append(batch)
                continue
            error = None
            if status >= 400:
                url = self._server.url_of(path)
                error = result_error(url, status, result.get("problem"))
            for queued in batch.items:
                queued.settle(error)
        return again

    async def adelete_thread(self, thread_id: str) -> None:
        await self._server.asend(("DELETE", self._thread_path(thread_id), {}, None))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        for request in self._runs_requests(run_ids):
            await self._server.asend(request)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        request = self._copy_request(source_thread_id, target_thread_id)
        await self._server.asend(request, repeatable=False)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        for request in self._prune_requests(thread_ids, strategy):
            await self._server.asend(request)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """As get_delta_channel_history."""
        walk = DeltaWalk(channels)
        if not walk.channels:
            return {}
        target = await self.aget_tuple(config)
        if target is not None:
            walking = ancestry(target, walk)
            request = next_request(walking, None)
            while request is not None:
                listed = self.alist(request[0], before=request[1], limit=DELTA_PAGE)
                request = next_request(walking, [found async for found in listed])
        return walk.history()

    # -- versions ------------------------------------------------------------------

    def get_next_version(self, current: str | None, channel: None) -> str:
        """As LangGraph's PostgresSaver: a counter and a random part, so that
        two branches of a thread (a fork, update_state on an old checkpoint)
        never give one (channel, version) two different values; shorter
        than its 51 characters (a version is stored with each checkpoint and
        value). Versions compare as strings: a 12-digit counter sorts after
        the 32-digit ones of earlier releases (numbers below 10**20)."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(current.split(".")[0])
        return f"{number + 1:012}.{random.getrandbits(32):08x}"


class _ListCursor:
    """Where a list of checkpoints is: the next request to send (None: done)
    and what an answer holds; list and alist only send."""

    def __init__(
        self,
        saver: SessionStateSaver,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> None:
        self.saver, self.config, self.filter, self.before = saver, config, filter, before
        self.remaining = limit
        self.token: str | None = None
        # No thread named: the app's threads (LangGraph's list(None)).
        self.thread_id: str | None = (config or {}).get("configurable", {}).get("thread_id")
        # A config naming a thread and a checkpoint lists that one (get_tuple's request).
        self.by_id = bool(self.thread_id and config and get_checkpoint_id(config))
        self.done = False

    def next_request(self) -> _Request | None:
        if self.done or (self.remaining is not None and self.remaining <= 0):
            return None
        if self.by_id and self.config is not None:
            return self.saver._get_request(self.config)[0]
        return self.saver._list_request(
            self.config, self.filter, self.before, self.remaining, self.token
        )

    def read(self, answer: Any) -> list[CheckpointTuple]:
        if self.by_id and self.config is not None:
            self.done = True
            found = self.saver._found(self.config, answer, by_id=True)
            return [] if found is None else [found]
        documents = answer["checkpoints"]
        if self.remaining is not None:
            self.remaining -= len(documents)
        self.token = answer["nextPageToken"]
        self.done = self.token is None
        return [
            self.saver._tuple(document.get("threadId", self.thread_id), document)
            for document in documents
        ]


# -- the long-term store ---------------------------------------------------------

# The server's bound on operations in one batch request.
OPS_PER_CALL = 1000


class SessionStateStore(_Closing, BaseStore):
    """LangGraph's long-term store (`BaseStore`) on a session-state server,
    usable from sync and async code.

        with SessionStateStore("http://127.0.0.1:8000") as store:
            store.put(("alice", "memories"), "m-1", {"text": "likes tea"})
            store.search(("alice",), filter={"kind": "preference"})

    A batch is one request and one transaction on the server
    (`/apps/{app_name}/store/batch`, docs/api.md): its reads see the store as
    it was before the batch, its puts apply after them, as in LangGraph's
    InMemoryStore. The first label of a namespace is its user: erasing that
    user on the server removes the item. TTLs are in minutes, as LangGraph's
    `TTLConfig` has them; the server sweeps expired items. `query` is a
    keyword match for now (every word in the item's text).
    """

    supports_ttl = True

    def __init__(
        self,
        base_url: str,
        *,
        app_name: str = DEFAULT_APP_NAME,
        api_key: str | None = None,
        token: TokenSource | None = None,
        ttl: TTLConfig | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        """`app_name`: the server's app the items are in (API keys are scoped
        to apps). `ttl`: LangGraph's TTLConfig (default_ttl in minutes,
        refresh_on_read); the server does the sweeping. `max_retries`: extra
        attempts on connection errors, 429, 502, 503 and 504. `token`: an
        end-user token in place of an API key (as SessionStateSaver's):
        it reaches only namespaces whose first label is its user."""
        self.app_name = app_name
        self.ttl_config = ttl
        self._server = _Server(base_url, api_key, timeout, max_retries, token)
        self._path = f"/apps/{_segment(app_name)}/store/batch"

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        answers = [self._server.send(request) for request in self._batch_requests(listed)]
        return _results(listed, answers)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        answers = [await self._server.asend(request) for request in self._batch_requests(listed)]
        return _results(listed, answers)

    def _batch_requests(self, ops: list[Op]) -> list[_Request]:
        """One request per OPS_PER_CALL operations."""
        wire = [self._wire_op(op) for op in ops]
        return [
            ("POST", self._path, {}, {"ops": wire[start : start + OPS_PER_CALL]})
            for start in range(0, len(wire), OPS_PER_CALL)
        ]

    def _wire_op(self, op: Op) -> _Body:
        if isinstance(op, GetOp):
            return {
                "op": "get",
                "namespace": list(op.namespace),
                "key": op.key,
                "refreshTtl": op.refresh_ttl,
            }
        if isinstance(op, PutOp):
            ttl = op.ttl
            if isinstance(ttl, NotProvided):
                ttl = (self.ttl_config or {}).get("default_ttl")
            return {
                "op": "put",
                "namespace": list(op.namespace),
                "key": op.key,
                "value": None if op.value is None else dict(op.value),
                "ttlSeconds": None if ttl is None else ttl * 60,
            }
        if isinstance(op, SearchOp):
            return {
                "op": "search",
                "namespacePrefix": list(op.namespace_prefix),
                "filter": None if op.filter is None else dict(op.filter),
                "query": op.query,
                "limit": op.limit,
                "offset": op.offset,
                "refreshTtl": op.refresh_ttl,
            }
        if isinstance(op, ListNamespacesOp):
            return {
                "op": "listNamespaces",
                "matchConditions": [
                    {"matchType": condition.match_type, "path": list(condition.path)}
                    for condition in op.match_conditions or ()
                ],
                "maxDepth": op.max_depth,
                "limit": op.limit,
                "offset": op.offset,
            }
        raise ValueError(f"unknown store operation: {type(op).__name__}")


def _time(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def _item(document: Mapping[str, Any]) -> Item:
    return Item(
        value=document["value"],
        key=document["key"],
        namespace=tuple(document["namespace"]),
        created_at=_time(document["createdAt"]),
        updated_at=_time(document["updatedAt"]),
    )


def _results(ops: list[Op], answers: list[Any]) -> list[Result]:
    results = [result for answer in answers for result in answer["results"]]
    return [_result(op, result) for op, result in zip(ops, results, strict=True)]


def _result(op: Op, answer: Any) -> Result:
    if isinstance(op, GetOp):
        return None if answer is None else _item(answer)
    if isinstance(op, SearchOp):
        return [
            SearchItem(
                namespace=tuple(document["namespace"]),
                key=document["key"],
                value=document["value"],
                created_at=_time(document["createdAt"]),
                updated_at=_time(document["updatedAt"]),
            )
            for document in answer
        ]
    if isinstance(op, ListNamespacesOp):
        return [tuple(namespace) for namespace in answer]
    return None
