"""API keys checked once per request, before routing and validation, for every
path under /apps/{app_name}, and for GET /apps (which lists the apps the key
may use: put in the request's state as `visible_apps`); health, readiness,
metrics and docs stay open.

The app name is decoded from its own segment of the path as sent
(app.http.encoded_paths runs first): a key for 'team' is not a key for
'team/travel' (team%2Ftravel)."""

from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.api_keys import ApiKeys
from ..core.errors import ServiceError
from .encoded_paths import decode_segment
from .problems import service_error_response

PROTECTED_PREFIX = "/apps/"
APPS_PATH = "/apps"
# request.state.visible_apps: the apps GET /apps may show (None: all).
VISIBLE_APPS = "visible_apps"
_AUTHORIZATION = b"authorization"


def _bearer_token(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == _AUTHORIZATION:
            header: str = value.decode("latin-1")
            scheme, _, token = header.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


class ApiKeyMiddleware:
    def __init__(self, app: ASGIApp, api_keys: ApiKeys) -> None:
        self.app = app
        self.api_keys = api_keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == APPS_PATH:
            try:
                visible = self.api_keys.visible_apps(_bearer_token(scope))
            except ServiceError as error:
                await service_error_response(error)(scope, receive, send)
                return
            scope.setdefault("state", {})[VISIBLE_APPS] = visible
            await self.app(scope, receive, send)
            return
        if (
            scope["type"] == "http"
            and self.api_keys.enabled
            and scope["path"].startswith(PROTECTED_PREFIX)
        ):
            app_name = decode_segment(scope["path"][len(PROTECTED_PREFIX) :].split("/", 1)[0])
            try:
                self.api_keys.authorize(_bearer_token(scope), app_name)
            except ServiceError as error:
                await service_error_response(error)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def document_bearer_security(schema: dict[str, object]) -> dict[str, object]:
    """Adds the API key scheme to an OpenAPI document, on every /apps/ operation."""
    components = schema.setdefault("components", {})
    assert isinstance(components, dict)
    components.setdefault("securitySchemes", {})["ApiKey"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key, when keys are configured (SESSION_STATE_API_KEYS).",
    }
    paths = schema.get("paths", {})
    assert isinstance(paths, dict)
    for path, operations in paths.items():
        if path.startswith(PROTECTED_PREFIX) or path == APPS_PATH:
            for operation in operations.values():
                operation["security"] = [{"ApiKey": []}]
    return schema
