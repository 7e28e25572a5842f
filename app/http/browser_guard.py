"""Open mode (no API keys) kept safe from the web pages its user visits.

With no keys, anything that reaches the port may read and write. A page on
another site can still reach a service on the user's own machine: a plain
cross-site POST (text/plain, no CORS preflight) writes, since bodies are read
as JSON whatever their type; and DNS rebinding (the page's own name made to
resolve to 127.0.0.1) makes the page same-origin, so it reads too. So, in open
mode only, this refuses with 403:

- cross-site browser requests: a `Sec-Fetch-Site` other than `same-origin` or
  `none`, or an `Origin` other than the request's own (`null` included);
- a `Host` that is not a loopback name, the bound address or one of
  SESSION_STATE_ALLOWED_HOSTS (`*` for any): rebinding sends the attacker's.

curl, the Python client and same-origin pages (/docs) send neither header or
matching ones. /healthz and /readyz stay open to any Host (they reveal nothing,
and load balancers probe them by address). With API keys this does nothing: a
page cannot add an Authorization header cross-site without a CORS preflight,
which this service never grants. End-user tokens (SESSION_STATE_JWT_JWKS)
end open mode as keys do.
"""

import ipaddress

from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.config import Settings
from ..core.errors import Forbidden
from ..core.host_names import canonical_name, is_ipv6, split_host
from .problems import service_error_response

EXEMPT_PATHS = frozenset({"/healthz", "/readyz"})
ANY_HOST = "*"
# `*.localhost` is not accepted: only some resolvers pin it to loopback (RFC
# 6761), others ask DNS; list such names in SESSION_STATE_ALLOWED_HOSTS.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
SAME_ORIGIN_SITES = frozenset({"same-origin", "none"})
DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST = b"host"
_ORIGIN = b"origin"
_SEC_FETCH_SITE = b"sec-fetch-site"
_SHOWN_CHARACTERS = 100
_WHAT_TO_DO_CROSS_SITE = (
    "cross-site browser requests are refused when no API keys are configured: "
    "use this service's own pages (/docs) or a client outside the browser, "
    "or configure API keys (SESSION_STATE_API_KEYS)"
)


def _shown(value: str) -> str:
    if len(value) > _SHOWN_CHARACTERS:
        value = value[:_SHOWN_CHARACTERS] + "..."
    return repr(value)


def _configured_name(entry: str) -> str:
    """A name from the settings: `::1`, `[::1]`, `api` or `api:8000` alike."""
    bare = entry.strip().strip("[]")
    if is_ipv6(bare):
        return canonical_name(bare)
    parsed = split_host(entry.strip())
    return parsed[0] if parsed is not None else entry.strip().lower()


def _is_wildcard(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.strip("[]")).is_unspecified
    except ValueError:
        return address in ("", ANY_HOST)


# Hosts seen are judged once: a client sends the same Host on every request,
# and parsing it on every request is a visible share of an append's server
# CPU (docs/performance.md, "Small costs the code is shaped by").
_HOST_CACHE_SIZE = 256
HostVerdict = tuple[str, int | None] | str  # (name, port), or why it is refused


class BrowserGuardMiddleware:
    def __init__(self, app: ASGIApp, open_mode: bool, settings: Settings) -> None:
        self.app = app
        self.enabled = open_mode
        configured = [host.strip() for host in settings.allowed_hosts if host.strip()]
        self.any_host = ANY_HOST in configured
        allowed = {_configured_name(name) for name in (*LOOPBACK_HOSTS, *configured)}
        if not _is_wildcard(settings.host):
            allowed.add(_configured_name(settings.host))
        self.allowed_hosts = frozenset(allowed)
        self._host_verdicts: dict[bytes, HostVerdict] = {}
        # Origins the operator serves a UI from (SESSION_STATE_CORS_ORIGINS).
        self.cors_origins = frozenset(settings.cors_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.enabled and scope["type"] == "http" and not self._exempt(scope):
            refusal = self._refusal(scope)
            if refusal is not None:
                await service_error_response(Forbidden(refusal))(scope, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def _exempt(scope: Scope) -> bool:
        path: str = scope["path"]
        root_path: str = scope.get("root_path", "")
        if root_path and path.startswith(root_path):
            path = path[len(root_path) :]
        return path in EXEMPT_PATHS

    def _refusal(self, scope: Scope) -> str | None:
        """Why the request is refused, saying what to do; None to let it in."""
        hosts: list[bytes] = []
        sites: list[bytes] = []
        origins: list[bytes] = []
        for header, value in scope["headers"]:
            if header == _HOST:
                hosts.append(value)
            elif header == _SEC_FETCH_SITE:
                sites.append(value)
            elif header == _ORIGIN:
                origins.append(value)
        if len(hosts) != 1:
            return (
                f"the request has {len(hosts) or 'no'} Host headers: send exactly one, "
                "such as 'localhost:8000', or configure API keys"
            )
        verdict = self._host_verdicts.get(hosts[0])
        if verdict is None:
            verdict = self._judge_host(hosts[0].decode("latin-1"))
            if len(self._host_verdicts) >= _HOST_CACHE_SIZE:
                self._host_verdicts.clear()
            self._host_verdicts[hosts[0]] = verdict
        if isinstance(verdict, str):
            return verdict
        if origins and all(o.decode("latin-1") in self.cors_origins for o in origins):
            return None  # a UI the operator allowed (CORS)
        for site in sites:
            text = site.decode("latin-1")
            if text.strip().lower() not in SAME_ORIGIN_SITES:
                return f"Sec-Fetch-Site is {_shown(text)}: {_WHAT_TO_DO_CROSS_SITE}"
        if origins:
            name, port = verdict
            scheme: str = scope.get("scheme", "http")
            own = (scheme, name, port if port is not None else DEFAULT_PORTS.get(scheme))
            for raw_origin in origins:
                origin = raw_origin.decode("latin-1")
                if _origin_tuple(origin) != own:
                    own_text = f"{scheme}://{hosts[0].decode('latin-1')}"
                    return (
                        f"Origin {_shown(origin)} is not this service's origin "
                        f"{_shown(own_text)}: {_WHAT_TO_DO_CROSS_SITE}"
                    )
        return None

    def _judge_host(self, host: str) -> HostVerdict:
        parsed = split_host(host)
        if parsed is None:
            return (
                f"Host {_shown(host)} is not a valid host name: send one such as "
                "'localhost:8000', or configure API keys"
            )
        if not self.any_host and parsed[0] not in self.allowed_hosts:
            return (
                f"Host {_shown(parsed[0])} is not allowed: add it to "
                "SESSION_STATE_ALLOWED_HOSTS, or configure API keys"
            )
        return parsed


def _origin_tuple(origin: str) -> tuple[str, str, int | None] | None:
    """(scheme, canonical host, port) of an Origin header; None for `null`
    or anything malformed."""
    scheme, separator, authority = origin.strip().partition("://")
    scheme = scheme.lower()
    if not separator or scheme not in DEFAULT_PORTS:
        return None
    host = split_host(authority)
    if host is None:
        return None
    name, port = host
    return scheme, name, port if port is not None else DEFAULT_PORTS[scheme]
