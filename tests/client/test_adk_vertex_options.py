"""HttpSessionService.create_session takes the options ADK's
VertexAiSessionService takes (`ttl`, `expire_time`/`expireTime`, `labels`),
so that code written for Vertex AI's sessions runs unchanged: the server
session gets that lifetime and those labels, on both backends; an option it
cannot honour is a ValueError before anything is written."""

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from session_state_client import AsyncSessionStateClient, ValidationError
from session_state_client.adk import HttpSessionService


@pytest.fixture(params=["sqlite", "postgresql"])
def base_url(request: pytest.FixtureRequest) -> str:
    server = request.getfixturevalue(f"{request.param}_server")
    url: str = server.base_url
    return url


async def _stored(base_url: str, app: str, session_id: str) -> Any:
    async with AsyncSessionStateClient(base_url=base_url) as client:
        return await client.get_session(app_name=app, user_id="u", session_id=session_id)


@pytest.mark.parametrize("ttl", ["7200s", " 7200s ", 7200, 7200.0, timedelta(hours=2)], ids=repr)
async def test_a_ttl_makes_the_session_expire_that_long_after_its_last_event(base_url, ttl):
    app = f"vx-{uuid.uuid4().hex[:8]}"
    async with HttpSessionService(base_url=base_url) as service:
        before = time.time()
        session = await service.create_session(
            app_name=app, user_id="u", ttl=ttl, labels={"team": "search", "tier": ""}
        )
    stored = await _stored(base_url, app, session.id)
    assert stored.labels == {"team": "search", "tier": ""}
    assert before + 7200 - 5 <= stored.expire_time <= time.time() + 7200 + 5


@pytest.mark.parametrize(
    "option",
    [
        {"expire_time": "2031-01-02T03:04:05Z"},
        {"expireTime": "2031-01-02T04:04:05+01:00"},
        {"expire_time": datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC)},
        {"expire_time": datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()},
    ],
    ids=repr,
)
async def test_an_expire_time_is_when_the_session_expires(base_url, option):
    app = f"vx-{uuid.uuid4().hex[:8]}"
    async with HttpSessionService(base_url=base_url) as service:
        session = await service.create_session(app_name=app, user_id="u", **option)
    stored = await _stored(base_url, app, session.id)
    assert stored.expire_time == datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()
    assert stored.labels == {}


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"display_name": "Trip"}, "keeps no display names"),
        ({"displayName": "Trip"}, "keeps no display names"),
        ({"colour": "red"}, "Unsupported create_session option(s): 'colour'"),
        ({"ttl": "7200s", "expire_time": "2031-01-02T03:04:05Z"}, "both 'ttl' and"),
        ({"expire_time": "2031-01-02T03:04:05Z", "expireTime": "2031-01-02T03:04:05Z"}, "both"),
        ({"ttl": "two hours"}, "ttl must be a duration"),
        ({"ttl": "-5s"}, "ttl must be a duration"),
        ({"ttl": 0}, "more than 0 seconds"),
        ({"ttl": float("nan")}, "more than 0 seconds"),
        ({"ttl": True}, "ttl must be a duration"),
        ({"expire_time": "next tuesday"}, "RFC 3339"),
        ({"expire_time": float("nan")}, "finite"),
        ({"expireTime": float("inf")}, "finite"),
        ({"ttl": float("inf")}, "more than 0 seconds"),
        ({"expire_time": datetime(2031, 1, 2)}, "time zone"),
        ({"expire_time": "2031-01-02T03:04:05"}, "time zone"),
        ({"labels": ["team"]}, "labels must be a mapping"),
    ],
    ids=repr,
)
async def test_an_option_it_cannot_honour_is_a_value_error_and_writes_nothing(
    base_url, option, message
):
    app = f"vx-{uuid.uuid4().hex[:8]}"
    async with HttpSessionService(base_url=base_url) as service:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            await service.create_session(app_name=app, user_id="u", session_id="s", **option)
        assert (await service.list_sessions(app_name=app, user_id="u")).sessions == []


async def test_a_label_against_the_rules_is_the_servers_validation_error(base_url):
    app = f"vx-{uuid.uuid4().hex[:8]}"
    async with HttpSessionService(base_url=base_url) as service:
        with pytest.raises(ValidationError, match="Team"):
            await service.create_session(app_name=app, user_id="u", labels={"Team": "x"})
        assert (await service.list_sessions(app_name=app, user_id="u")).sessions == []
