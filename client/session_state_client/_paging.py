"""The walk over a paginated list, written once for every list the clients
page through (sessions, apps, users, events): ask for the first page, then
for the page each answer's `next_page_token` names, until an answer names
none. One flavour per kind of client; the async client's walks become the
sync client's by client/tools/unasync.py renaming `async_pages` to `pages`."""

from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from typing import Protocol, TypeVar


class Paged(Protocol):
    """A page of a list: the token of the next page, None after the last."""

    @property
    def next_page_token(self) -> str | None: ...


PageT = TypeVar("PageT", bound=Paged)


def pages(fetch: Callable[[str | None], PageT]) -> Generator[PageT, None, None]:
    """Every page `fetch` gives, asked for by page token (None: the first).
    A page is asked for only once the one before it has been used."""
    token: str | None = None
    while True:
        page = fetch(token)
        yield page
        token = page.next_page_token
        if token is None:
            return


async def async_pages(
    fetch: Callable[[str | None], Awaitable[PageT]],
) -> AsyncGenerator[PageT, None]:
    """`pages` for a `fetch` that is awaited."""
    token: str | None = None
    while True:
        page = await fetch(token)
        yield page
        token = page.next_page_token
        if token is None:
            return
