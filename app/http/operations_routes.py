"""Operations endpoints: metrics, and API docs served from packaged assets."""

from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from ..core.metrics import render_metrics

# Swagger UI and ReDoc assets ship inside the installed fastapi-offline
# package, so the docs work with no network (no CDN).
DOCS_ASSETS = Path(fastapi_offline.__file__).parent / "static"
DOCS_ASSETS_URL = "/docs-assets"

router = APIRouter(tags=["operations"])

# The pages may load only what this server serves: ReDoc's footer would
# otherwise fetch its logo from a CDN.
DOCS_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; worker-src 'self' blob:; connect-src 'self'; font-src 'self' data:"
)


def _offline(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = DOCS_CONTENT_SECURITY_POLICY
    return page


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
    summary="Prometheus metrics",
)
async def metrics() -> Response:
    body, content_type = render_metrics()
    return Response(body, media_type=content_type)


def install_offline_docs(app: FastAPI) -> None:
    app.mount(DOCS_ASSETS_URL, StaticFiles(directory=DOCS_ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        page = get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_ASSETS_URL}/favicon.png",
            # No call to the public validator badge service.
            swagger_ui_parameters={"validatorUrl": None},
        )
        return _offline(page)

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        page = get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{DOCS_ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{DOCS_ASSETS_URL}/favicon.png",
            with_google_fonts=False,
        )
        return _offline(page)
