"""Shared by the hostile-input tests: requests, and the check that matters
most after an attack: the app still answers every reader with valid JSON."""

import json

PROBLEM_MEDIA_TYPE = "application/problem+json"


def strict_json(text: str):
    """Parses as a strict reader would: no NaN or Infinity."""

    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


class App:
    """Paths of one app, one user and one session."""

    def __init__(self, app="hostile", user="u", session="s"):
        self.app, self.user, self.session = app, user, session
        self.sessions = f"/apps/{app}/users/{user}/sessions"
        self.session_path = f"{self.sessions}/{session}"
        self.events = f"{self.session_path}/events"
        self.canary = f"{self.sessions}/canary"

    async def create(self, client, session_id=None, **body):
        response = await client.post(
            self.sessions, json={"sessionId": session_id or self.session, **body}
        )
        assert response.status_code == 201, response.text
        return response

    async def append(self, client, event, **headers):
        return await client.post(self.events, json=event, headers=headers)

    async def append_raw(self, client, body: bytes, **headers):
        return await client.post(self.events, content=body, headers=headers)


def assert_problem(response, status, code):
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE
    body = strict_json(response.text)
    assert body["code"] == code, body
    return body


async def assert_app_still_readable(client, app: App):
    """Every kind of read of the app answers 200 with valid JSON, and new
    sessions can still be created: one request broke nobody else's reads."""
    canary = await client.get(app.canary)
    if canary.status_code == 404:
        await app.create(client, "canary")
        canary = await client.get(app.canary)
    reads = [
        canary,
        await client.get(app.session_path),
        await client.get(app.sessions),
        await client.get(f"/apps/{app.app}/sessions"),
        await client.get(f"/apps/{app.app}/state"),
        await client.get(f"/apps/{app.app}/users/{app.user}/state"),
        await client.get(f"{app.canary}/events"),
    ]
    for response in reads:
        assert response.status_code in (200, 404), (response.request.url, response.text)
        strict_json(response.text)
    assert canary.status_code == 200
    created = await client.post(f"/apps/{app.app}/users/other/sessions", json={})
    assert created.status_code == 201, created.text
    strict_json(created.text)
