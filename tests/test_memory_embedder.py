"""A remote embedder (SESSION_STATE_MEMORY_EMBEDDER=openai) against a local
HTTP server that speaks OpenAI's embeddings API, on both backends: memory
writes never wait for it; while it is slow or down the memories are found by
keywords and wait in the backlog (shown by /readyz and a metric), which
drains once it answers; answers that cannot be used are refused and logged
without the text. And `session-state memory reindex`."""

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from session_state.admin import commands as operator_commands
from session_state.core.config import Settings
from session_state.memory.embedding import open_embedder, wordllama_vectors
from session_state.memory.embedding_backlog import EmbeddingBacklog
from session_state.memory.reference_texts import REFERENCE_TEXTS
from session_state.sessions.domain import MemoryRecord
from session_state.stores import open_store
from tests.conftest import asgi_client, free_port, migrate

APP, USER = "remote", "ada"
MEMORY = f"/apps/{APP}/users/{USER}/memory"
DOG = "I adopted a golden retriever puppy last spring."
SECRET = "My flight to Lisbon leaves on Tuesday, booking code QX7-SECRET."
QUESTION = "What kind of dog does the user own?"
POISON = "the unembeddable zebra note"


class EmbeddingServer:
    """POST /v1/embeddings as OpenAI answers it (vectors from the local
    model, so that meaning is real), or as `mode` says it misbehaves."""

    def __init__(self) -> None:
        self.mode = "normal"
        # Seconds each answer waits (concurrent callers then overlap).
        self.delay = 0.0
        self.requests: list[dict[str, Any]] = []
        self.port = free_port()
        app = Starlette(routes=[Route("/v1/embeddings", self.embeddings, methods=["POST"])])
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def embeddings(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append({"body": body, "authorization": request.headers.get("authorization")})
        if self.mode == "down":
            return JSONResponse({"error": "overloaded"}, status_code=503)
        if self.mode == "poison" and any(POISON in text for text in body["input"]):
            # As OpenAI refuses an input it will not embed, whatever it is batched with.
            return JSONResponse({"error": {"message": "invalid input"}}, status_code=400)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.mode == "slow":
            await asyncio.sleep(0.8)
        vectors = wordllama_vectors(body["input"]).tolist()
        if self.mode == "wrong_dimension":
            vectors = [vector[:100] for vector in vectors]
        elif self.mode == "nan":
            vectors[0][0] = float("nan")
        elif self.mode == "wrong_count":
            vectors = vectors[:-1]
        data = [
            {"object": "embedding", "index": index, "embedding": vector}
            for index, vector in enumerate(vectors)
        ]
        # NaN is not JSON; written as Python's json writes it, as broken servers do.
        answer = {"object": "list", "data": data[::-1], "model": body["model"]}
        return Response(json.dumps(answer), media_type="application/json")

    def __enter__(self) -> "EmbeddingServer":
        self.thread.start()
        for _ in range(500):
            if self.server.started:
                return self
            threading.Event().wait(0.01)
        raise RuntimeError("the embedding server did not start")

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def embedding_server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as server:
        yield server


@pytest.fixture
def remote_settings(database_url, embedding_server, tmp_path) -> Settings:
    embedding_server.mode = "normal"
    embedding_server.delay = 0.0
    key_file = tmp_path / "key"
    key_file.write_text("sk-test-key\n")
    return Settings(
        database_url=database_url,
        memory_embedder="openai",
        memory_embedder_url=embedding_server.url,
        memory_embedder_model="test-embedding",
        memory_embedder_api_key_file=key_file,
        memory_embedder_dimensions=256,
        memory_embedder_batch_size=2,
        memory_embedder_timeout_seconds=0.3,
        sweep_interval_seconds=0,
    )


def _fast_retries(client) -> Any:
    backlog = client._transport.app.state.memory_backlog
    backlog.first_retry_seconds = 0.05
    backlog.last_retry_seconds = 0.2
    return backlog


async def _write(client, *more: dict[str, Any]) -> None:
    memories = [
        *more,
        {"id": "dog", "content": {"parts": [{"text": DOG}]}},
        {"id": "trip", "content": {"parts": [{"text": SECRET}]}},
        {"id": "other", "content": {"parts": [{"text": "The printer is broken again."}]}},
    ]
    written = await client.post(f"{MEMORY}/entries", json={"memories": memories})
    assert written.status_code == 200, written.text


async def _ids(client, query: str, mode: str = "hybrid") -> list[str]:
    response = await client.get(MEMORY, params={"query": query, "mode": mode})
    assert response.status_code == 200, response.text
    return [memory["id"] for memory in response.json()["memories"]]


async def _found_by_meaning(client) -> list[str]:
    """What a semantic search finds once it finds anything (the embedder may
    still be answering earlier slow calls)."""
    for _ in range(200):
        response = await client.get(MEMORY, params={"query": QUESTION, "mode": "semantic"})
        if response.status_code == 200 and response.json()["memories"]:
            return [memory["id"] for memory in response.json()["memories"]]
        await asyncio.sleep(0.05)
    raise AssertionError(f"never found by meaning: {response.text}")


async def _embedding_status(client, until) -> dict[str, Any]:
    for _ in range(500):
        status = (await client.get("/readyz")).json()["memoryEmbedding"]
        if until(status):
            return status
        await asyncio.sleep(0.02)
    raise AssertionError(f"never reached: {status}")


async def test_memories_are_embedded_in_the_background_and_found_by_meaning(
    remote_settings, embedding_server
):
    async with asgi_client(remote_settings) as client:
        await _write(client)
        # Stored without a vector; the background task embeds them soon after.
        assert (await _found_by_meaning(client))[:1] == ["dog"]
        status = await _embedding_status(client, lambda status: status["waiting"] == 0)
        assert status == {
            "embedder": "openai/test-embedding@256",
            "waiting": 0,
            "givenUp": 0,
            "lastError": None,
        }
        assert (await _ids(client, QUESTION, "semantic"))[:1] == ["dog"]
        assert (await _ids(client, "QX7-SECRET"))[:1] == ["trip"]
        sent = embedding_server.requests[-1]
        assert sent["authorization"] == "Bearer sk-test-key"
        assert sent["body"]["model"] == "test-embedding"
        assert sent["body"]["dimensions"] == 256
        # Batches of two texts (SESSION_STATE_MEMORY_EMBEDDER_BATCH_SIZE).
        assert max(len(request["body"]["input"]) for request in embedding_server.requests) == 2


@pytest.mark.parametrize("trouble", ["down", "slow"])
async def test_while_the_embedder_is_down_or_slow_the_backlog_fills_then_drains(
    remote_settings, embedding_server, trouble
):
    embedding_server.mode = trouble
    async with asgi_client(remote_settings) as client:
        _fast_retries(client)
        await _write(client)
        # Stored at once, and found by keywords meanwhile.
        assert await _ids(client, "QX7-SECRET") == ["trip"]
        refused = await client.get(MEMORY, params={"query": QUESTION, "mode": "semantic"})
        assert refused.status_code == 503
        assert refused.json()["code"] == "embedder_unavailable"
        status = await _embedding_status(
            client, lambda status: status["waiting"] == 3 and status["lastError"]
        )
        expected = "HTTP 503" if trouble == "down" else "did not answer in time"
        assert expected in status["lastError"]
        metrics = (await client.get("/metrics")).text
        assert "session_state_memory_embedding_backlog 3.0" in metrics

        embedding_server.mode = "normal"
        await _embedding_status(client, lambda status: status["waiting"] == 0)
        assert (await _found_by_meaning(client))[:1] == ["dog"]
        assert (await _ids(client, QUESTION))[:1] == ["dog"]


BAD_ANSWERS = {
    "wrong_dimension": "100 dimensions, not 256",
    "nan": "NaN",
    "wrong_count": "vectors for 2",
}


async def test_bad_answers_are_refused_and_logged_without_the_text(
    remote_settings, embedding_server, caplog
):
    async with asgi_client(remote_settings) as client:
        _fast_retries(client)
        for answer, reason in BAD_ANSWERS.items():
            embedding_server.mode = answer
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="session_state"):
                await _write(client)
                # The background task's pass (it claims the rows).
                status = await _embedding_status(
                    client,
                    lambda status, reason=reason: (
                        reason in (status["lastError"] or "") and status["waiting"] == 3
                    ),
                )
            assert status["givenUp"] == 0, answer
            logged = "\n".join(record.getMessage() for record in caplog.records)
            assert reason in logged
            assert "QX7-SECRET" not in logged and "retriever" not in logged
            # Nothing half-stored: by meaning, nothing is found yet.
            assert await _ids(client, QUESTION) == []


def test_a_remote_embedder_needs_a_url():
    with pytest.raises(ValueError, match="SESSION_STATE_MEMORY_EMBEDDER_URL"):
        Settings(memory_embedder="openai")


async def test_reindex_embeds_what_waits_resumably(tmp_path, capsys):
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    await asyncio.to_thread(migrate, url)
    async with asgi_client(Settings(database_url=url, memory_embedder="none")) as client:
        await _write(client)
        other = await client.post(
            f"/apps/{APP}/users/bob/memory/entries",
            json={"memories": [{"id": "b", "content": {"parts": [{"text": DOG}]}}]},
        )
        assert other.status_code == 200

    # The command, once as a process (the rest in this one: 5 s saved each).
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "session_state.cli", "memory", "reindex", "--user", "bob"],
        env={**os.environ, "SESSION_STATE_DATABASE_URL": url},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["embedded"] == 1

    async def reindex(app: str | None = None) -> dict[str, Any]:
        settings = Settings(database_url=url)
        arguments = argparse.Namespace(app=app, user=None)
        assert (
            await operator_commands.reindex_memory(settings, arguments, open_store=open_store) == 0
        )
        result: dict[str, Any] = json.loads(capsys.readouterr().out)
        return result

    assert (await reindex(APP))["embedded"] == 3
    assert (await reindex())["embedded"] == 0
    async with asgi_client(Settings(database_url=url, sweep_interval_seconds=0)) as client:
        assert (await _ids(client, QUESTION, "semantic"))[:1] == ["dog"]


async def test_a_text_the_embedder_always_refuses_does_not_hold_back_its_batch(
    remote_settings, embedding_server
):
    embedding_server.mode = "poison"
    embedding_server.requests.clear()
    async with asgi_client(remote_settings) as client:
        _fast_retries(client)
        # First in its batch (two texts per call).
        await _write(client, {"id": "zebra", "content": {"parts": [{"text": POISON}]}})

        # The others are embedded; the refused text is tried alone, then
        # given up on after 3 refusals, and shown as such.
        status = await _embedding_status(client, lambda status: status["givenUp"] == 1)
        assert status["waiting"] == 0 and status["lastError"] is None
        assert (await _ids(client, QUESTION, "semantic"))[:1] == ["dog"]
        metrics = (await client.get("/metrics")).text
        assert "session_state_memory_embedding_given_up 1.0" in metrics
        # Still found by keywords.
        assert await _ids(client, "unembeddable zebra", "keyword") == ["zebra"]
        sent = [request["body"]["input"] for request in embedding_server.requests]
        # Sent with another text first, then alone (once per try; a pass that
        # timed out under load may add one).
        assert [POISON, DOG] in sent
        assert sent.count([POISON]) >= 3
        # Given up on: not sent again.
        await client._transport.app.state.memory_backlog.pass_once()
        assert not any(
            POISON in request["body"]["input"] for request in embedding_server.requests[len(sent) :]
        )


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_two_processes_embed_each_waiting_memory_once(database_url, embedding_server):
    """Two backlogs (as two `serve` processes have) on one database: each
    claims its rows, so the embedder sees each text once."""
    embedding_server.mode = "normal"
    embedding_server.delay = 0.02
    embedding_server.requests.clear()
    settings = Settings(
        database_url=database_url,
        memory_embedder="openai",
        memory_embedder_url=embedding_server.url,
        memory_embedder_model="test-embedding",
        memory_embedder_batch_size=2,
    )
    stores = [await open_store(settings) for _ in range(2)]
    embedders = [open_embedder(settings) for _ in range(2)]
    try:
        texts = [f"memory number {index} about topic {index % 7}" for index in range(60)]
        records = [MemoryRecord("s", f"e{n}", "user", "user", 1.0, t) for n, t in enumerate(texts)]
        await stores[0].add_memories(APP, USER, records)
        backlogs = [
            EmbeddingBacklog(store, embedder, batch=4)
            for store, embedder in zip(stores, embedders, strict=True)
            if embedder is not None
        ]
        embedded = await asyncio.gather(*(backlog.embed_waiting() for backlog in backlogs))

        # Both worked (the race happened), and together embedded each once.
        assert sum(embedded) == 60 and min(embedded) > 0, embedded
        sent = [text for request in embedding_server.requests for text in request["body"]["input"]]
        assert sorted(sent) == sorted(texts)
        assert await backlogs[0].count_waiting() == 0
    finally:
        for store in stores:
            await store.close()
        for embedder in embedders:
            if embedder is not None:
                await embedder.close()


async def test_a_remote_embedder_embeds_the_reference_texts_once_and_then_judges_relevance(
    remote_settings, embedding_server
):
    """The relevance test (app.memory.relevance) against the remote model's
    own vectors of the reference texts, embedded in the background after the
    first search; an unrelated question in Arabic, which the cosine floor
    alone lets through beside an Arabic memory, then finds nothing."""
    coffee = "أشرب القهوة كل صباح مع أمي."
    unrelated = "كم عمر الشمس؟"
    vectors = wordllama_vectors([coffee, unrelated])
    assert float(vectors[0] @ vectors[1]) >= remote_settings.memory_min_similarity
    earlier = len(embedding_server.requests)  # the server serves the module's tests
    async with asgi_client(remote_settings) as client:
        await _write(client, {"id": "coffee", "content": {"parts": [{"text": coffee}]}})
        assert (await _found_by_meaning(client))[:1] == ["dog"]
        for _ in range(500):
            sent = [
                text
                for request in embedding_server.requests[earlier:]
                for text in request["body"]["input"]
            ]
            if set(REFERENCE_TEXTS) <= set(sent):
                break
            await asyncio.sleep(0.02)
        assert set(REFERENCE_TEXTS) <= set(sent)
        assert [text for text in REFERENCE_TEXTS if sent.count(text) != 1] == []
        for _ in range(200):
            if await _ids(client, unrelated, "semantic") == []:
                break
            await asyncio.sleep(0.02)
        assert await _ids(client, unrelated, "semantic") == []
        assert await _ids(client, unrelated) == []
        assert (await _ids(client, QUESTION))[:1] == ["dog"]
