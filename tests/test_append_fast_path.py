"""The append route as the fast path in front of FastAPI serves it, over a
real socket to a started server: what an ASGI test client cannot show."""

import asyncio

import httpx


async def test_a_body_cut_short_by_a_disconnect_stores_nothing(server):
    base = f"{server.base_url}/apps/cut/users/u/sessions"
    async with httpx.AsyncClient() as client:
        await client.post(base, json={"sessionId": "s"})
        # A complete JSON event, but the request announced more bytes than that
        # and the client went away before sending them.
        event = b'{"id": "half", "author": "a", "actions": {"stateDelta": {"k": 1}}}'
        host, port = server.base_url.removeprefix("http://").split(":")
        _, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /apps/cut/users/u/sessions/s/events HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(event) + 100, event)
        )
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.close()
        await writer.wait_closed()
        await asyncio.sleep(0.2)
        session = (await client.get(f"{base}/s")).json()
    assert session["events"] == []
    assert session["state"] == {}


async def test_appends_are_counted_under_the_route_template(server):
    async with httpx.AsyncClient(base_url=server.base_url) as client:
        await client.post("/apps/counted/users/u/sessions", json={"sessionId": "s"})
        response = await client.post(
            "/apps/counted/users/u/sessions/s/events", json={"author": "a"}
        )
        assert response.status_code == 201
        metrics = (await client.get("/metrics")).text
    template = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/events"
    assert f'route="{template}"' in metrics and 'status="201"' in metrics
