"""How a Host header names a host: `name[:port]` or `[ipv6][:port]`. The
browser guard (app.http.browser_guard) reads requests' Hosts and Origins with
it, and the settings (app.core.config) check SESSION_STATE_ALLOWED_HOSTS with it,
so that a name they accept is one the guard can match."""

import ipaddress


def canonical_name(name: str) -> str:
    """Lower case; an IP address in its canonical form (`0::1` is `::1`)."""
    name = name.lower()
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def split_host(authority: str) -> tuple[str, int | None] | None:
    """`name[:port]` or `[ipv6][:port]` as (canonical name, port); None when
    it is not a well-formed host."""
    if authority.startswith("["):
        name, bracket, rest = authority[1:].partition("]")
        if not bracket or not is_ipv6(name):
            return None
    else:
        name, colon, port_text = authority.partition(":")
        rest = colon + port_text
    port = None
    if rest:
        port_text = rest[1:]
        if not rest.startswith(":") or not port_text.isascii() or not port_text.isdigit():
            return None
        port = int(port_text)
    if not name or not all(c.isascii() and (c.isalnum() or c in "-._:") for c in name):
        return None
    return canonical_name(name), port


def is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True
