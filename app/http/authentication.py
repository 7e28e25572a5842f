"""Who is calling, checked once per request, before routing and validation,
for every path under /apps/{app_name} and for GET /apps: an API key, or an
end-user token (a JWT, when SESSION_STATE_JWT_JWKS is set); health, readiness,
metrics and docs stay open.

A bearer value shaped as a JWT (three base64url parts joined by dots) is
checked as a token when tokens are on, anything else as an API key (a key of
that shape stops the start-up then, app.main). A valid token acts as its user
only: app.http.end_user_paths judges the path, and the request runs with the
user set (app.core.end_user_tokens.acting_end_user) for the rules that look
at bodies and rows. GET /apps lists the apps the key may use: put in the
request's state as `visible_apps`.

The app name is decoded from its own segment of the path as sent
(app.http.encoded_paths runs first): a key for 'team' is not a key for
'team/travel' (team%2Ftravel)."""

from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.api_keys import ApiKeys
from ..core.audit import audit_event
from ..core.end_user_tokens import EndUserTokens, acting_for, looks_like_token, stop_acting
from ..core.errors import Forbidden, InvalidToken, ServiceError, Unauthorized
from .encoded_paths import decode_segment
from .end_user_paths import PROTECTED_PREFIX, end_user_refusal
from .problems import service_error_response

APPS_PATH = "/apps"
# request.state.visible_apps: the apps GET /apps may show (None: all).
VISIBLE_APPS = "visible_apps"
# request.state.end_user: the EndUser a token acts for (absent: none).
END_USER = "end_user"
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


def _app_of(path: str) -> str:
    return decode_segment(path[len(PROTECTED_PREFIX) :].split("/", 1)[0])


class ApiKeyMiddleware:
    def __init__(
        self, app: ASGIApp, api_keys: ApiKeys, tokens: EndUserTokens | None = None
    ) -> None:
        self.app = app
        self.api_keys = api_keys
        self.tokens = tokens
        # Without keys nor tokens the API is open (app.http.browser_guard).
        self.protected = api_keys.enabled or tokens is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        is_list = path == APPS_PATH
        if not is_list and not path.startswith(PROTECTED_PREFIX):
            await self.app(scope, receive, send)
            return
        bearer = _bearer_token(scope)
        if self.tokens is not None and bearer is not None and looks_like_token(bearer):
            await self._as_end_user(bearer, scope, receive, send)
            return
        try:
            if is_list:
                visible = self._visible_apps(bearer)
                scope.setdefault("state", {})[VISIBLE_APPS] = visible
            elif self.protected:
                self._authorize_key(bearer, _app_of(path))
        except ServiceError as error:
            await service_error_response(error)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _visible_apps(self, bearer: str | None) -> frozenset[str] | None:
        if not self.api_keys.enabled and self.tokens is not None:
            raise _credentials_required()
        return self.api_keys.visible_apps(bearer)

    def _authorize_key(self, bearer: str | None, app_name: str) -> None:
        if not self.api_keys.enabled:
            if bearer is None:
                raise _credentials_required()
            raise InvalidToken("malformed", "the bearer value is not a JWT")
        self.api_keys.authorize(bearer, app_name)

    async def _as_end_user(self, token: str, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.tokens is not None
        path: str = scope["path"]
        method: str = scope["method"]
        try:
            user = await self.tokens.verify(token)
            if path == APPS_PATH:
                raise Forbidden(
                    "an end-user token may not list apps (the counts are of every user): "
                    "use an API key"
                )
            refusal = end_user_refusal(user, method, path)
        except InvalidToken as error:
            audit_event("token_refused", error.reason, method=method, path=path)
            await service_error_response(error)(scope, receive, send)
            return
        except ServiceError as error:
            await service_error_response(error)(scope, receive, send)
            return
        if refusal is not None:
            audit_event("token_forbidden", "forbidden", user=user.user_id, method=method, path=path)
            await service_error_response(refusal)(scope, receive, send)
            return
        scope.setdefault("state", {})[END_USER] = user
        acting = acting_for(user)
        try:
            await self.app(scope, receive, send)
        finally:
            stop_acting(acting)


def _credentials_required() -> Unauthorized:
    return Unauthorized("a token or an API key is required: Authorization: Bearer <credential>")


def document_bearer_security(schema: dict[str, object]) -> dict[str, object]:
    """Adds the bearer scheme (API key or end-user token) to an OpenAPI
    document, on every /apps/ operation."""
    components = schema.setdefault("components", {})
    assert isinstance(components, dict)
    components.setdefault("securitySchemes", {})["ApiKey"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key, when keys are configured (SESSION_STATE_API_KEYS), or an "
        "end-user token (a JWT, when SESSION_STATE_JWT_JWKS is set) acting as its user only.",
    }
    paths = schema.get("paths", {})
    assert isinstance(paths, dict)
    for path, operations in paths.items():
        if path.startswith(PROTECTED_PREFIX) or path == APPS_PATH:
            for operation in operations.values():
                operation["security"] = [{"ApiKey": []}]
    return schema
