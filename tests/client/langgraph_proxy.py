"""A proxy before a started server, for the LangGraph saver's tests: it
passes every request on, unless `intercept` answers it itself or rewrites
its body first (a gateway's refusal, an older server, a batch made bad on
its way)."""

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import ClientSession, web

from tests.conftest import ServerProcess

# What the proxy does with a request (its path and body): its own answer, a
# body to send on in its place, or None (sent on as it came).
Intercept = Callable[[str, bytes], web.Response | bytes | None]


def problem_response(status: int, problem: dict[str, Any]) -> web.Response:
    body = {"title": "Refused", "status": status, **problem}
    return web.json_response(body, status=status, content_type="application/problem+json")


@contextlib.asynccontextmanager
async def proxy_before(server: ServerProcess, intercept: Intercept) -> AsyncIterator[str]:
    """The proxy's base URL."""

    async def forward(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        done = intercept(request.path, body)
        if isinstance(done, web.Response):
            return done
        async with session.request(
            request.method,
            server.base_url + request.path_qs,
            data=body if done is None else done,
            headers={
                k: v
                for k, v in request.headers.items()
                if k.lower() not in ("host", "content-length")
            },
        ) as answer:
            return web.Response(
                status=answer.status,
                body=await answer.read(),
                content_type=answer.content_type,
            )

    async with ClientSession() as session:
        proxy = web.Application()
        proxy.router.add_route("*", "/{tail:.*}", forward)
        runner = web.AppRunner(proxy)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # started
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            await runner.cleanup()
