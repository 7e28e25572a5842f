"""A PostgreSQL failover under load loses nothing acknowledged and answers
nothing but 503 meanwhile.

A real cluster (tests/ha_cluster.py: etcd, two Patroni nodes, synchronous
replication) and two `session-state serve` processes pointed at it by libpq's
multi-host URL with target_session_attrs=read-write. Writers append through
both servers, each to a session of its own, retrying the same event on a 503
or a connection error, as a client does; pollers ask /readyz and ingest
memories (the memory lock) meanwhile, and the servers sweep every second
(the sweeper's advisory lock). Faults: a graceful switchover, then a hard
crash of the primary (kill -9 of its Patroni and PostgreSQL), then its rejoin.

Afterwards every acknowledged event is stored exactly once, in order, with
the state it set; no answer was a 5xx other than 503 (each with Retry-After
and a problem+json body); both servers acknowledged appends again within
RECOVERY_BOUND_SECONDS of each fault. The gaps without acknowledgements are
printed (`pytest -rP tests/test_failover.py`). SESSION_STATE_TEST_FAILOVER_ROUNDS repeats the faults
(a longer run, as a benchmark).
"""

import asyncio
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import ServerProcess, run_blocking, unavailable
from tests.ha_cluster import HaCluster, missing_tools

pytestmark = pytest.mark.failover

APP = "failover"
DATABASE = "session_state_failover"
WRITERS_PER_SERVER = 4
RECOVERY_BOUND_SECONDS = 30.0
WARM_UP_APPENDS = 10
CALM_SECONDS = 2.0
RETRY_PAUSE_SECONDS = 0.05
POLL_SECONDS = 0.25
CLIENT_TIMEOUT_SECONDS = 30.0
ROUNDS = int(os.environ.get("SESSION_STATE_TEST_FAILOVER_ROUNDS", "1"))


@pytest.fixture(scope="module")
def cluster() -> Iterator[HaCluster]:
    missing = missing_tools()
    if missing is not None:
        unavailable("the failover test (a Patroni cluster)", missing)
    instance = HaCluster()
    try:
        instance.start()
        yield instance
    finally:
        instance.stop()


@dataclass
class Answers:
    """Everything the servers answered, as the test saw it."""

    started: float = field(default_factory=time.monotonic)
    # Each acknowledged append: (server, sent, acknowledged), in seconds
    # since `started`.
    appends: list[tuple[int, float, float]] = field(default_factory=list)
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    transport_errors: Counter[str] = field(default_factory=Counter)
    # (server, seconds since start, status) of each /readyz.
    readiness: list[tuple[int, float, int]] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.started

    def check(self, what: str, response: httpx.Response) -> None:
        """Counts an answer; a 503 must say when to retry, in problem+json;
        any other 5xx is a failure of the test."""
        self.statuses[(what, response.status_code)] += 1
        if response.status_code == 503:
            if "Retry-After" not in response.headers:
                self.unexpected.append(f"{what}: 503 without Retry-After")
            if response.headers.get("content-type") != "application/problem+json":
                self.unexpected.append(f"{what}: 503 not problem+json: {response.text[:200]}")
        elif response.status_code >= 500:
            self.unexpected.append(f"{what}: {response.status_code} {response.text[:300]}")


class Writer:
    """Appends numbered events to one session through one server, retrying
    the same event (same id, same body) until it is acknowledged."""

    def __init__(self, server: int, base_url: str, session_id: str, answers: Answers) -> None:
        self.server = server
        self.path = f"{base_url}/apps/{APP}/users/u{server}/sessions/{session_id}"
        self.session_id = session_id
        self.answers = answers
        self.acknowledged: list[str] = []
        # Set once WARM_UP_APPENDS were acknowledged.
        self.warm = asyncio.Event()

    async def run(self, http: httpx.AsyncClient, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self._append(http, len(self.acknowledged) + 1)

    async def _append(self, http: httpx.AsyncClient, number: int) -> None:
        event_id = f"{self.session_id}-{number:06d}"
        event = {
            "id": event_id,
            "author": "user",
            "invocationId": f"i{number}",
            "timestamp": 1_800_000_000.0 + number,
            "actions": {"stateDelta": {"count": number, "last": event_id}},
        }
        while True:
            sent = self.answers.now()
            try:
                response = await http.post(f"{self.path}/events", json=event)
            except httpx.TransportError as error:
                self.answers.transport_errors[type(error).__name__] += 1
                await asyncio.sleep(RETRY_PAUSE_SECONDS)
                continue
            self.answers.check("append", response)
            if response.status_code in (200, 201):
                done = self.answers.now()
                self.acknowledged.append(event_id)
                if len(self.acknowledged) >= WARM_UP_APPENDS:
                    self.warm.set()
                self.answers.appends.append((self.server, sent, done))
                return
            if response.status_code != 503:
                self.answers.unexpected.append(f"append {event_id}: {response.status_code}")
            await asyncio.sleep(RETRY_PAUSE_SECONDS)


async def _poll_readiness(
    http: httpx.AsyncClient, server: int, base_url: str, answers: Answers, stop: asyncio.Event
) -> None:
    while not stop.is_set():
        try:
            response = await http.get(f"{base_url}/readyz")
        except httpx.TransportError as error:
            answers.transport_errors[type(error).__name__] += 1
        else:
            answers.check("readyz", response)
            answers.readiness.append((server, answers.now(), response.status_code))
        await asyncio.sleep(POLL_SECONDS)


async def _ingest_memories(
    http: httpx.AsyncClient, writers: list[Writer], answers: Answers, stop: asyncio.Event
) -> None:
    """Takes the sessions into memory over and over (each holds the user's
    memory lock while it runs)."""
    while not stop.is_set():
        for writer in writers:
            user_path = writer.path.rsplit("/sessions/", 1)[0]
            try:
                response = await http.post(
                    f"{user_path}/memory", json={"sessionId": writer.session_id}
                )
            except httpx.TransportError as error:
                answers.transport_errors[type(error).__name__] += 1
                continue
            answers.check("memory", response)
            if response.status_code not in (200, 503):
                answers.unexpected.append(f"memory: {response.status_code} {response.text[:200]}")
        await asyncio.sleep(POLL_SECONDS)


@dataclass
class Recovery:
    """What one fault cost each server."""

    fault: str
    # Seconds from the fault's start to the first acknowledged append that
    # was sent after the cluster had its new primary.
    back_after: dict[int, float]
    # The longest time without an acknowledged append, around the fault.
    longest_gap: dict[int, float]


def _longest_gap(answers: Answers, server: int, start: float, end: float) -> float:
    times = sorted(t for s, _, t in answers.appends if s == server and start <= t <= end)
    edges = [start, *times, end]
    return max(later - earlier for earlier, later in itertools.pairwise(edges))


async def _await_recovery(
    answers: Answers, servers: int, fault: str, fault_start: float, primary_ready: float
) -> Recovery:
    """Waits until every server acknowledged an append sent after
    `primary_ready`; AssertionError past RECOVERY_BOUND_SECONDS."""
    back_after: dict[int, float] = {}
    deadline = fault_start + RECOVERY_BOUND_SECONDS
    while len(back_after) < servers:
        for server, sent, done in answers.appends:
            if sent >= primary_ready and server not in back_after:
                back_after[server] = done - fault_start
        if answers.now() > deadline + 1:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(CALM_SECONDS)
    end = answers.now()
    gaps = {server: _longest_gap(answers, server, fault_start, end) for server in range(servers)}
    recovery = Recovery(fault, back_after, gaps)
    print(
        f"{fault}: "
        + "; ".join(
            f"server {server}: longest gap {gaps[server]:.2f} s, acknowledging again "
            f"{back_after.get(server, float('inf')):.2f} s after the fault"
            for server in range(servers)
        )
    )
    assert set(back_after) == set(range(servers)), (fault, back_after, answers.statuses)
    for server in range(servers):
        assert back_after[server] <= RECOVERY_BOUND_SECONDS, recovery
        assert gaps[server] <= RECOVERY_BOUND_SECONDS, recovery
    return recovery


async def _stored_events(http: httpx.AsyncClient, writer: Writer) -> tuple[list[str], dict]:
    """The session's event ids, oldest first, and its state."""
    ids: list[str] = []
    page_token = None
    while True:
        params = {"pageSize": "1000"} | ({"pageToken": page_token} if page_token else {})
        response = await http.get(f"{writer.path}/events", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        ids += [event["id"] for event in page["events"]]
        page_token = page.get("nextPageToken")
        if not page_token:
            break
    session = await http.get(writer.path, params={"numRecentEvents": "0"})
    assert session.status_code == 200, session.text
    return ids, session.json()["state"]


def _start_servers(cluster: HaCluster, folder: Path) -> list[ServerProcess]:
    url = cluster.database_url(DATABASE)
    servers = []
    for index in range(2):
        server = ServerProcess(
            url,
            log=folder / f"server{index}.log",
            SESSION_STATE_SWEEP_INTERVAL_SECONDS="1",
            SESSION_STATE_LOG_FORMAT="text",
        )
        servers.append(server.start())
    return servers


def _migrate(cluster: HaCluster) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "session_state.cli", "migrate", "--create-database"],
        env={**os.environ, "SESSION_STATE_DATABASE_URL": cluster.database_url(DATABASE)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


async def _fault_rounds(cluster: HaCluster, answers: Answers, servers: int) -> list[Recovery]:
    recoveries = []
    for _ in range(ROUNDS):
        # A graceful switchover to the synchronous standby.
        start = answers.now()
        old, new = await asyncio.to_thread(cluster.switchover)
        recoveries.append(
            await _await_recovery(answers, servers, "switchover", start, answers.now())
        )
        await asyncio.to_thread(cluster.wait_healthy)

        # A hard crash of the primary: its standby is promoted once the
        # leader key expires.
        start = answers.now()
        crashed = await asyncio.to_thread(cluster.crash_primary)
        await asyncio.to_thread(
            cluster.wait_until,
            lambda crashed=crashed: cluster.leader() not in (None, crashed),
            60,
            "the standby's promotion",
        )
        promoted = answers.now()
        recoveries.append(await _await_recovery(answers, servers, "crash", start, promoted))
        # No writable primary between the crash and the promotion: not ready.
        unready = [
            status
            for _, when, status in answers.readiness
            if start + 1 <= when <= promoted - 1 and status == 503
        ]
        assert unready, "no /readyz answered 503 while there was no primary"

        # The crashed node comes back as the new primary's synchronous standby.
        start = answers.now()
        await asyncio.to_thread(cluster.rejoin, crashed)
        recoveries.append(await _await_recovery(answers, servers, "rejoin", start, start))
        # Both nodes were primary in turn.
        assert old != new and crashed == new
    return recoveries


def test_a_failover_loses_nothing_acknowledged_and_answers_only_503_meanwhile(
    cluster: HaCluster,
) -> None:
    _migrate(cluster)
    # Not pytest's tmp_path: other pytest runs on this machine may remove it.
    logs = Path(tempfile.mkdtemp(prefix="session-state-failover-"))
    servers = _start_servers(cluster, logs)
    try:
        run_blocking(_load_through_faults(cluster, servers))
    except BaseException:
        print(f"the servers' logs are kept in {logs}")
        raise
    finally:
        for server in servers:
            server.stop()
    for index in range(len(servers)):
        log = (logs / f"server{index}.log").read_text()
        assert "Traceback" not in log and "ERROR" not in log, f"{logs}: {log[-5000:]}"
    shutil.rmtree(logs)


async def _load_through_faults(cluster: HaCluster, servers: list[ServerProcess]) -> None:
    answers = Answers()
    limits = httpx.Limits(max_connections=100)
    async with httpx.AsyncClient(timeout=CLIENT_TIMEOUT_SECONDS, limits=limits) as http:
        writers = []
        for index, server in enumerate(servers):
            for number in range(WRITERS_PER_SERVER):
                session_id = f"s{index}-{number}"
                created = await http.post(
                    f"{server.base_url}/apps/{APP}/users/u{index}/sessions",
                    json={"sessionId": session_id},
                )
                assert created.status_code == 201, created.text
                writers.append(Writer(index, server.base_url, session_id, answers))
        stop = asyncio.Event()
        tasks = [asyncio.create_task(writer.run(http, stop)) for writer in writers]
        tasks += [
            asyncio.create_task(_poll_readiness(http, index, server.base_url, answers, stop))
            for index, server in enumerate(servers)
        ]
        tasks.append(asyncio.create_task(_ingest_memories(http, writers, answers, stop)))
        try:
            # Every writer is appending before the first fault.
            warm = asyncio.gather(*(writer.warm.wait() for writer in writers))
            await asyncio.wait_for(warm, timeout=60)
            recoveries = await _fault_rounds(cluster, answers, len(servers))
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        print(
            "longest gaps without an acknowledged append, per server: "
            + ", ".join(
                f"{recovery.fault} "
                + "/".join(f"{gap:.2f} s" for _, gap in sorted(recovery.longest_gap.items()))
                for recovery in recoveries
            )
        )
        print(
            f"answers: {dict(answers.statuses)}; transport errors: {dict(answers.transport_errors)}"
        )
        assert answers.unexpected == []
        assert answers.transport_errors == Counter()
        for writer in writers:
            ids, state = await _stored_events(http, writer)
            assert ids == writer.acknowledged, writer.session_id
            assert state == {
                "count": len(writer.acknowledged),
                "last": writer.acknowledged[-1],
            }
