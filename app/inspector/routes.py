"""Serves the inspector's page and its files (app/inspector/static/), with a
Content-Security-Policy that allows only this origin's scripts and styles and
no inline ones: whatever text an agent stored, the page cannot be made to run
it. The files are read once, at import, from the package (they ship in the
wheel); only those names are served, so no path reaches the file system."""

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import RedirectResponse, Response
from starlette.exceptions import HTTPException

STATIC = Path(__file__).parent / "static"
PAGE = "index.html"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Upgrades of the server take effect at the next load: the browser asks
    # again each time (the files are small, and served from memory).
    "Cache-Control": "no-cache",
}


def _files() -> dict[str, tuple[bytes, str]]:
    return {
        path.name: (path.read_bytes(), CONTENT_TYPES[path.suffix])
        for path in sorted(STATIC.iterdir())
        if path.suffix in CONTENT_TYPES
    }


FILES = _files()
router = APIRouter(include_in_schema=False)


def _answer(name: str) -> Response:
    found = FILES.get(name)
    if found is None:
        raise HTTPException(404, f"the inspector has no file {name!r}")
    body, content_type = found
    return Response(body, media_type=content_type, headers=HEADERS)


@router.get("/ui")
async def page_without_slash() -> Response:
    # The page's files are relative to /ui/ (so the inspector works under a
    # proxy's path prefix too); a redirect keeps the #fragment of a shared link.
    return RedirectResponse("ui/", status_code=308, headers=HEADERS)


@router.get("/ui/")
async def page() -> Response:
    return _answer(PAGE)


@router.get("/ui/static/{name}")
async def static_file(name: str) -> Response:
    return _answer(name)
