"""PostgreSQL URLs as operators write them, libpq's multi-host forms included,
and what each driver is given for them.

libpq names several servers (a primary and its standbys) in one URL:
`postgresql://u@h1:5432,h2:5432/db?target_session_attrs=read-write`, or
`postgresql://u@/db?host=h1:5432&host=h2:5432`, or `?host=h1,h2&port=5432`;
a client connects to the first that answers and matches
`target_session_attrs`. SQLAlchemy's URL parser refuses the first form (a
port of "5432,h2:5432") and its asyncpg dialect cannot split an IPv6 host in
the others, so the service parses the URL here, once: asyncpg gets the
libpq form, SQLAlchemy a URL without hosts and the host list as connect
arguments (`engine_arguments`).
"""

import urllib.parse
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

POSTGRESQL_DRIVER = "postgresql+asyncpg"
# libpq's spellings of the same URL: the service reads them with asyncpg.
POSTGRESQL_SCHEMES = ("postgresql", "postgres", POSTGRESQL_DRIVER)
DEFAULT_PORT = 5432
# asyncpg's (and libpq's) values; a test fails when asyncpg's list changes.
TARGET_SESSION_ATTRS = (
    "any",
    "primary",
    "standby",
    "prefer-standby",
    "read-write",
    "read-only",
)


class DatabaseUrlError(ValueError):
    """A URL that names no PostgreSQL server clearly; the message is one line
    and never repeats the URL (it may hold a password)."""


@dataclass(frozen=True)
class Endpoint:
    """One server of the URL: a host name, an IP address or a Unix socket's
    folder, and its port (None: the driver's default, PGPORT or 5432)."""

    host: str
    port: int | None

    @property
    def is_socket(self) -> bool:
        return self.host.startswith("/")

    def shown(self) -> str:
        """`host:port`, an IPv6 address in brackets, the port always written."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port or DEFAULT_PORT}"

    def in_query(self) -> str:
        """As a host= parameter writes it (SQLAlchemy's multi-host form)."""
        if self.is_socket:
            return self.host if self.port is None else f"{self.host}:{self.port}"
        return self.shown() if self.port is not None else self.shown().rsplit(":", 1)[0]

    def in_authority(self) -> str:
        """As libpq writes it in a URL's host list."""
        host = urllib.parse.quote(self.host, safe="") if self.is_socket else self.host
        host = f"[{host}]" if ":" in host else host
        return host if self.port is None else f"{host}:{self.port}"


@dataclass(frozen=True)
class PostgresqlAddress:
    """Where a PostgreSQL URL points: `url` holds everything but the servers
    (user, password, database, options such as target_session_attrs), with
    the asyncpg driver; `endpoints` the servers, in the order to try them
    (none: asyncpg's defaults, PGHOST or the local socket)."""

    url: URL
    endpoints: tuple[Endpoint, ...]

    @property
    def target_session_attrs(self) -> str | None:
        value = self.url.query.get("target_session_attrs")
        return value if isinstance(value, str) else None

    def canonical(self) -> str:
        """The URL as SQLAlchemy's parser reads it, password included (for
        the settings, not for display): one server in the host part, several
        as host= parameters."""
        if len(self.endpoints) == 1 and not self.endpoints[0].is_socket:
            (endpoint,) = self.endpoints
            url = self.url.set(host=endpoint.host, port=endpoint.port)
        elif self.endpoints:
            hosts = [("host", endpoint.in_query()) for endpoint in self.endpoints]
            url = self.url.set(query=_grouped(hosts + self._options()))
        else:
            url = self.url
        return url.render_as_string(hide_password=False)

    def asyncpg_dsn(self, database: str | None = None) -> str:
        """The URL in libpq's form, for asyncpg; `database` replaces the URL's."""
        url = self.url.set(drivername="postgresql")
        if database is not None:
            url = url.set(database=database)
        # Rendered without a host, which is then written in libpq's list.
        text = url.render_as_string(hide_password=False)
        scheme, _, rest = text.partition("://")
        userinfo, at, after = rest.rpartition("@")
        hosts = ",".join(endpoint.in_authority() for endpoint in self.endpoints)
        return f"{scheme}://{userinfo}{at}{hosts}{after}"

    def engine_arguments(self) -> tuple[URL, dict[str, Any]]:
        """What SQLAlchemy's create_async_engine takes for this address: the
        URL, and the connect arguments (merged with the caller's) naming
        the servers when there are several."""
        if len(self.endpoints) <= 1:
            return make_url(self.canonical()), {}
        hosts = [endpoint.host for endpoint in self.endpoints]
        ports = [endpoint.port or DEFAULT_PORT for endpoint in self.endpoints]
        return self.url, {"host": hosts, "port": ports}

    def shown(self) -> str:
        """`host:port,host:port/database`, and the target_session_attrs
        when the URL sets them: never the user or password."""
        servers = ",".join(endpoint.shown() for endpoint in self.endpoints) or "localhost:5432"
        attributes = self.target_session_attrs
        suffix = f"?target_session_attrs={attributes}" if attributes else ""
        return f"{servers}/{self.url.database or ''}{suffix}"

    def servers_shown(self) -> str:
        return ", ".join(endpoint.shown() for endpoint in self.endpoints) or "localhost:5432"

    def _options(self) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = []
        for name, value in self.url.query.items():
            values = value if isinstance(value, tuple) else (value,)
            pairs += [(name, one) for one in values]
        return pairs


def _grouped(pairs: list[tuple[str, str]]) -> dict[str, str | tuple[str, ...]]:
    """URL query pairs as SQLAlchemy holds them: a repeated name as a tuple."""
    grouped: dict[str, list[str]] = {}
    for name, value in pairs:
        grouped.setdefault(name, []).append(value)
    return {
        name: values[0] if len(values) == 1 else tuple(values) for name, values in grouped.items()
    }


def is_postgresql_url(text: str) -> bool:
    return text.partition("://")[0] in POSTGRESQL_SCHEMES and "://" in text


def parse_postgresql_url(text: str) -> PostgresqlAddress:
    """The address a postgresql://, postgres:// or postgresql+asyncpg:// URL
    names, in any of libpq's host forms; DatabaseUrlError for one that
    names no server clearly."""
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError as error:
        raise DatabaseUrlError(f"not a URL ({error})") from None
    if parts.scheme not in POSTGRESQL_SCHEMES:
        raise DatabaseUrlError(f"not a PostgreSQL URL (scheme {parts.scheme!r})")
    userinfo, at, host_list = parts.netloc.rpartition("@")
    in_authority = _authority_endpoints(host_list) if host_list else []
    options, in_query = _query_endpoints(parts.query)
    if in_authority and in_query:
        raise DatabaseUrlError(
            "the servers are named twice, in the URL's host part and in host= parameters: "
            "name them in one place"
        )
    # Everything but the servers, read by SQLAlchemy (it decodes the user,
    # password and database).
    query = f"?{urllib.parse.urlencode(options)}" if options else ""
    rest = f"{POSTGRESQL_DRIVER}://{userinfo}{at}{parts.path}{query}"
    try:
        url = make_url(rest)
    except (ArgumentError, ValueError) as error:
        raise DatabaseUrlError(f"not a database URL ({type(error).__name__})") from None
    attributes = url.query.get("target_session_attrs")
    if attributes is not None and attributes not in TARGET_SESSION_ATTRS:
        raise DatabaseUrlError(
            f"target_session_attrs={attributes!r} is none of {', '.join(TARGET_SESSION_ATTRS)}"
        )
    return PostgresqlAddress(url, tuple(in_authority or in_query))


def _authority_endpoints(host_list: str) -> list[Endpoint]:
    """The servers of the URL's host part: `h1:p1,h2:p2`, IPv6 in brackets."""
    specs = host_list.split(",")
    return [_endpoint(spec, index, len(specs)) for index, spec in enumerate(specs)]


def _endpoint(spec: str, index: int, count: int, default_port: int | None = None) -> Endpoint:
    where = f"host {index + 1} of {count}" if count > 1 else "the host"
    if not spec:
        raise DatabaseUrlError(f"{where} is empty: write host:port, separated by commas")
    if spec.startswith("/"):
        # A Unix socket's folder, a port after its last colon (SQLAlchemy's form).
        folder, colon, port_text = spec.rpartition(":")
        if colon and port_text.isdecimal():
            return Endpoint(folder, _port_number(port_text))
        return Endpoint(spec, default_port)
    try:
        # The standard library reads host:port, and [IPv6]:port.
        parsed = urllib.parse.urlsplit(f"//{spec}")
        port = parsed.port
    except ValueError:
        raise DatabaseUrlError(
            f"the port of {where} ({spec!r}) is not a number from 1 to 65535 "
            "(an IPv6 address goes in brackets: [::1]:5432)"
        ) from None
    host = parsed.hostname
    if not host or parsed.username is not None or parsed.path:
        raise DatabaseUrlError(f"{where} ({spec!r}) is not host or host:port")
    if port == 0:
        raise DatabaseUrlError(f"the port of {where} ({spec!r}) is not a number from 1 to 65535")
    # A socket folder may be written percent-encoded in the host part.
    return Endpoint(urllib.parse.unquote(host), port if port is not None else default_port)


def _query_endpoints(query: str) -> tuple[list[tuple[str, str]], list[Endpoint]]:
    """The query's options other than host and port, and the servers its
    host= parameters name: repeated (`host=h1:p1&host=h2:p2`, SQLAlchemy's
    form) or comma-separated with ports apart (`host=h1,h2&port=p1,p2`, libpq's)."""
    try:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise DatabaseUrlError("the query (after ?) is not name=value pairs") from None
    options = [(name, value) for name, value in pairs if name not in ("host", "port")]
    specs = [spec for name, value in pairs if name == "host" for spec in value.split(",")]
    ports = [port for name, value in pairs if name == "port" for port in value.split(",")]
    if not specs:
        if ports:
            raise DatabaseUrlError("port= without host=: write the port in the host part")
        return options, []
    endpoints = [_endpoint(spec, index, len(specs)) for index, spec in enumerate(specs)]
    if not ports:
        return options, endpoints
    if any(endpoint.port is not None for endpoint in endpoints):
        raise DatabaseUrlError(
            "ports written both in host= and in port=: write host=h1:p1&host=h2:p2, "
            "or host=h1,h2&port=p1,p2"
        )
    if len(ports) not in (1, len(endpoints)):
        raise DatabaseUrlError(
            f"{len(ports)} ports for {len(endpoints)} hosts: give one port for all, or one each"
        )
    numbers = [_port_number(port) for port in ports]
    if len(numbers) == 1:
        numbers *= len(endpoints)
    return options, [Endpoint(e.host, n) for e, n in zip(endpoints, numbers, strict=True)]


def _port_number(text: str) -> int:
    if not text.isdecimal() or not 1 <= int(text) <= 65535:
        raise DatabaseUrlError(f"port={text!r} is not a number from 1 to 65535")
    return int(text)
