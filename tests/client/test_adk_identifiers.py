"""ADK's identifier rules through HttpSessionService (on both backends), side by
side with ADK's own InMemorySessionService as the reference: session ids are
stripped and a blank one is generated, app names and user ids are any text
taken as given, and get or delete of an id nobody can hold finds nothing."""

import unicodedata

import pytest
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events import Event
from google.adk.sessions import Session

from session_state_client import AsyncSessionStateClient, SessionStateClient
from session_state_client.adk import HttpSessionService

ODD_NAMES = [
    "app/other-user",
    "a/b/c",
    "%41",
    "a%2Fb",
    "100%",
    ".",
    "..",
    "  padded  ",
    "a?b#c",
    unicodedata.normalize("NFC", "café"),
    unicodedata.normalize("NFD", "café"),
    "🧭 trip",
]
# ADK's services hold these; the server cannot store them.
UNSTORABLE = ["", "a\x00b", "a\nb", "a\x7fb", "x" * 129]


@pytest.fixture
def http_service(service):
    if not isinstance(service, HttpSessionService):
        pytest.skip("a rule of the server, not of ADK")
    return service


@pytest.mark.parametrize("given", ["order-42\n", " order-42 ", "\torder-42\u3000"])
async def test_a_session_id_is_stripped(service, app_name, given):
    created = await service.create_session(app_name=app_name, user_id="u", session_id=given)
    assert created.id == "order-42"
    for spelled in (given, "order-42", " order-42\n"):
        found = await service.get_session(app_name=app_name, user_id="u", session_id=spelled)
        assert found is not None and found.id == "order-42"
    await service.delete_session(app_name=app_name, user_id="u", session_id=given)
    assert await service.get_session(app_name=app_name, user_id="u", session_id="order-42") is None


@pytest.mark.parametrize("blank", [None, "", "  ", "\n"])
async def test_a_blank_session_id_gets_a_generated_one(service, app_name, blank):
    first = await service.create_session(app_name=app_name, user_id="u", session_id=blank)
    second = await service.create_session(app_name=app_name, user_id="u", session_id=blank)
    assert first.id and second.id and first.id != second.id
    assert first.id == first.id.strip()


@pytest.mark.parametrize("blank", ["", "  ", "\n"])
async def test_get_and_delete_of_a_blank_session_id_find_nothing(service, app_name, blank):
    await service.create_session(app_name=app_name, user_id="u", session_id="kept")
    assert await service.get_session(app_name=app_name, user_id="u", session_id=blank) is None
    await service.delete_session(app_name=app_name, user_id="u", session_id=blank)
    assert await service.get_session(app_name=app_name, user_id="u", session_id="kept")


@pytest.mark.parametrize("name", ODD_NAMES)
async def test_any_app_name_and_user_id_round_trip(service, app_name, name):
    app = f"{app_name}/{name}"
    created = await service.create_session(
        app_name=app, user_id=name, session_id=name.strip() or "s", state={"user:k": 1}
    )
    assert (created.app_name, created.user_id) == (app, name)
    event = await service.append_event(created, Event(author="agent", invocation_id="i"))
    fetched = await service.get_session(app_name=app, user_id=name, session_id=created.id)
    assert fetched is not None
    assert (fetched.app_name, fetched.user_id, fetched.id) == (app, name, created.id)
    assert [stored.id for stored in fetched.events] == [event.id]
    assert fetched.state == {"user:k": 1}
    listed = await service.list_sessions(app_name=app, user_id=name)
    assert [(s.app_name, s.user_id, s.id) for s in listed.sessions] == [(app, name, created.id)]
    await service.delete_session(app_name=app, user_id=name, session_id=created.id)
    assert await service.get_session(app_name=app, user_id=name, session_id=created.id) is None


async def test_names_that_differ_are_different_sessions(service, app_name):
    names = [
        "%41",
        "A",
        "a/b",
        "a%2Fb",
        unicodedata.normalize("NFC", "é"),
        unicodedata.normalize("NFD", "é"),
        "u",
        " u",
    ]
    for name in names:
        await service.create_session(
            app_name=app_name, user_id=name, session_id="s", state={"owner": name}
        )
    for name in names:
        session = await service.get_session(app_name=app_name, user_id=name, session_id="s")
        assert session is not None and session.state == {"owner": name}


@pytest.mark.parametrize("unstorable", UNSTORABLE)
async def test_get_and_delete_of_an_id_the_server_refuses_find_nothing(
    service, app_name, unstorable
):
    keys = [
        {"app_name": unstorable, "user_id": "u", "session_id": "s"},
        {"app_name": app_name, "user_id": unstorable, "session_id": "s"},
        {"app_name": app_name, "user_id": "u", "session_id": unstorable},
    ]
    for key in keys:
        assert await service.get_session(**key) is None
        await service.delete_session(**key)
    listed = await service.list_sessions(app_name=unstorable, user_id="u")
    assert listed.sessions == []


@pytest.mark.parametrize("unstorable", UNSTORABLE[1:])
async def test_appending_to_a_session_the_server_cannot_hold_is_session_not_found(
    service, app_name, unstorable
):
    for ghost in [
        Session(app_name=unstorable, user_id="u", id="s"),
        Session(app_name=app_name, user_id=unstorable, id="s"),
        Session(app_name=app_name, user_id="u", id=unstorable),
    ]:
        with pytest.raises(SessionNotFoundError):
            await service.append_event(ghost, Event(author="agent", invocation_id="i"))


@pytest.mark.parametrize("unstorable", UNSTORABLE)
async def test_create_with_an_id_the_server_refuses_is_a_value_error(
    http_service, app_name, unstorable
):
    keys = [
        {"app_name": unstorable, "user_id": "u", "session_id": "s"},
        {"app_name": app_name, "user_id": unstorable, "session_id": "s"},
    ]
    if unstorable:  # a blank session id is generated, as ADK does
        keys.append({"app_name": app_name, "user_id": "u", "session_id": unstorable})
    for key in keys:
        with pytest.raises(ValueError, match="cannot store") as raised:
            await http_service.create_session(**key)
        assert repr(unstorable)[:20] in str(raised.value)
    assert (await http_service.list_sessions(app_name=app_name)).sessions == []


@pytest.mark.parametrize("name", ["a/b", "..", ".", "%2F", "?#"])
def test_the_sync_client_sends_any_name(base_url, app_name, name):
    with SessionStateClient(base_url=base_url) as client:
        created = client.create_session(app_name=name, user_id=app_name, session_id=name)
        assert (created.app_name, created.id) == (name, name)
        got = client.get_session(app_name=name, user_id=app_name, session_id=name)
        assert (got.app_name, got.user_id, got.id) == (name, app_name, name)
        client.delete_session(app_name=name, user_id=app_name, session_id=name)


@pytest.mark.parametrize("name", ["a/b", "..", ".", "%2F", "?#"])
async def test_the_async_client_sends_any_name(base_url, app_name, name):
    async with AsyncSessionStateClient(base_url=base_url) as client:
        created = await client.create_session(app_name=name, user_id=app_name, session_id=name)
        assert (created.app_name, created.id) == (name, name)
        got = await client.get_session(app_name=name, user_id=app_name, session_id=name)
        assert (got.app_name, got.user_id, got.id) == (name, app_name, name)
        await client.delete_session(app_name=name, user_id=app_name, session_id=name)


async def test_a_session_named_stream_is_an_ordinary_session(service, app_name):
    """The user stream's path (.../sessions/stream) answers only a GET that
    asks for text/event-stream: ADK's session id "stream" stays a session."""
    assert await service.get_session(app_name=app_name, user_id="u", session_id="stream") is None
    created = await service.create_session(
        app_name=app_name, user_id="u", session_id="stream", state={"k": 1}
    )
    found = await service.get_session(app_name=app_name, user_id="u", session_id="stream")
    assert found is not None and (found.id, found.state) == (created.id, {"k": 1})
