"""One client shared by threads, with an end-user token from a callable
(`token=`), against a server that checks every token (its JWKS served at a
URL), on both backends: each thread runs its own event loop (the async
client) or calls the sync client, as a threaded web server does. Every
request carries a token fresh from the callable, called on the thread that
sends it: a thread's requests name its own user, so a token of another
thread's user would be refused (403). Closing the client, after the loops
ended or while they still run, leaves no connection open and warns of
nothing (run with `-W error`: a ResourceWarning, an unclosed session or
transport, would fail the test)."""

import asyncio
import gc
import threading
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from session_state_client import AsyncSessionStateClient, SessionStateClient

from ..conftest import ServerProcess
from ..test_end_user_tokens_served import JwksServer
from ..token_issuer import AUDIENCE, ISSUER, SigningKey

APP = "travel"
THREADS = 6
APPENDS = 4
# create, the appends, a read: one request each (no retries, appends alone).
REQUESTS_PER_THREAD = APPENDS + 2
DEADLINE_SECONDS = 60


@pytest.fixture(scope="module")
def signing_key() -> SigningKey:
    return SigningKey("k1")


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(
    request: pytest.FixtureRequest,
    signing_key: SigningKey,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServerProcess]:
    """A server checking tokens against a JWKS at a URL, on each backend in
    turn, for the module (each test names sessions of its own)."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('server') / 'server.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    jwks = JwksServer(signing_key)
    process = ServerProcess(
        url,
        SESSION_STATE_JWT_JWKS=jwks.url,
        SESSION_STATE_JWT_ISSUER=ISSUER,
        SESSION_STATE_JWT_AUDIENCE=AUDIENCE,
        SESSION_STATE_JWT_APPS=APP,
    ).start()
    yield process
    process.stop()
    jwks.close()


@pytest.fixture
def chat() -> str:
    """The id of the session each user's conversation writes, new per test."""
    return f"chat-{uuid.uuid4().hex[:8]}"


class ThreadTokens:
    """The token callable: a new token for the user of the thread that calls
    it, numbered by its `jti`; each call recorded as (user, thread)."""

    def __init__(self, key: SigningKey) -> None:
        self.key = key
        self.user_of: dict[int, str] = {}
        self.issued: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    def enter(self, user: str) -> None:
        self.user_of[threading.get_ident()] = user

    def __call__(self) -> str:
        thread = threading.get_ident()
        user = self.user_of[thread]
        with self.lock:
            number = len(self.issued)
            self.issued.append((user, thread))
        return self.key.token(user, jti=f"call-{number}")


def _in_threads(work: Callable[[str], None], tokens: ThreadTokens) -> list[str]:
    """`work(user)` on THREADS threads at once, each for a user of its own
    (its thread's token); the users."""
    users = [f"user-{index}" for index in range(THREADS)]
    failures: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def run(user: str) -> None:
        tokens.enter(user)
        try:
            start.wait()
            work(user)
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_SECONDS)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    assert not failures, failures
    return users


def _assert_one_fresh_token_per_request(tokens: ThreadTokens, users: list[str]) -> None:
    assert Counter(user for user, _ in tokens.issued) == dict.fromkeys(users, REQUESTS_PER_THREAD)
    # Each user's tokens were made on one thread, and no two threads share a user.
    threads_of = {
        user: {thread for owner, thread in tokens.issued if owner == user} for user in users
    }
    assert all(len(threads) == 1 for threads in threads_of.values()), threads_of
    assert len(set.union(*threads_of.values())) == THREADS


async def _conversation(client: AsyncSessionStateClient, user: str, chat: str) -> None:
    await client.create_session(app_name=APP, user_id=user, session_id=chat)
    for turn in range(APPENDS):
        await client.append_event(
            app_name=APP, user_id=user, session_id=chat, event={"author": user, "turn": turn}
        )
    session = await client.get_session(app_name=APP, user_id=user, session_id=chat)
    assert [event["author"] for event in session.events] == [user] * APPENDS


def test_the_async_client_on_many_loops_sends_each_thread_s_fresh_token(
    served: ServerProcess, signing_key: SigningKey, chat: str
) -> None:
    tokens = ThreadTokens(signing_key)
    with AsyncSessionStateClient(
        base_url=served.base_url, token=tokens, max_retries=0, appends_together=False
    ) as client:
        users = _in_threads(lambda user: asyncio.run(_conversation(client, user, chat)), tokens)
    _assert_one_fresh_token_per_request(tokens, users)


def test_the_sync_client_from_many_threads_sends_each_thread_s_fresh_token(
    served: ServerProcess, signing_key: SigningKey, chat: str
) -> None:
    tokens = ThreadTokens(signing_key)

    def conversation(user: str) -> None:
        client.create_session(app_name=APP, user_id=user, session_id=chat)
        for turn in range(APPENDS):
            client.append_event(
                app_name=APP, user_id=user, session_id=chat, event={"author": user, "turn": turn}
            )
        session = client.get_session(app_name=APP, user_id=user, session_id=chat)
        assert [event["author"] for event in session.events] == [user] * APPENDS

    with SessionStateClient(base_url=served.base_url, token=tokens, max_retries=0) as client:
        users = _in_threads(conversation, tokens)
    _assert_one_fresh_token_per_request(tokens, users)


@pytest.mark.parametrize("loops", ["ended", "still-running"])
def test_closing_the_async_client_used_on_many_loops_warns_of_nothing(
    served: ServerProcess, signing_key: SigningKey, chat: str, loops: str
) -> None:
    tokens = ThreadTokens(signing_key)
    closed = threading.Event()
    client = AsyncSessionStateClient(base_url=served.base_url, token=tokens, max_retries=0)

    finished: list[str] = []

    async def work(user: str) -> None:
        await _conversation(client, user, chat)
        finished.append(user)
        if loops == "still-running":
            # The loop runs on, idle, until the main thread has closed the client.
            await asyncio.to_thread(closed.wait, DEADLINE_SECONDS)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runner = threading.Thread(
            target=lambda: _in_threads(lambda user: asyncio.run(work(user)), tokens)
        )
        runner.start()
        if loops == "still-running":
            while len(finished) < THREADS and runner.is_alive():
                closed.wait(0.01)
        else:
            runner.join(DEADLINE_SECONDS)
        client.__exit__(None, None, None)
        closed.set()
        runner.join(DEADLINE_SECONDS)
        assert not runner.is_alive()
        gc.collect()

    assert len(tokens.issued) == THREADS * REQUESTS_PER_THREAD
    assert client._http._by_loop == {}
    problems = [_described(warning) for warning in caught]
    assert not problems, problems


def test_closing_the_sync_client_used_from_many_threads_warns_of_nothing(
    served: ServerProcess, signing_key: SigningKey, chat: str
) -> None:
    tokens = ThreadTokens(signing_key)
    client = SessionStateClient(base_url=served.base_url, token=tokens, max_retries=0)

    def conversation(user: str) -> None:
        client.create_session(app_name=APP, user_id=user, session_id=chat)
        client.get_session(app_name=APP, user_id=user, session_id=chat)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _in_threads(conversation, tokens)
        client.close()
        gc.collect()

    problems = [_described(warning) for warning in caught]
    assert not problems, problems


def _described(warning: Any) -> str:
    return f"{warning.category.__name__}: {warning.message}"
