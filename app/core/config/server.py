"""Where and how `serve` listens."""

import ipaddress
from typing import Literal

from pydantic import Field, field_validator

from ..host_names import split_host
from .group import SettingGroup

DEFAULT_REQUEST_HEAD_TIMEOUT_SECONDS = 10.0
MAX_REQUEST_HEAD_TIMEOUT_SECONDS = 30.0


class ServerSettings(SettingGroup):
    """The address, port and worker processes of `serve`, how long a
    connection may take to send a request head, and whether it serves the
    inspector (/ui)."""

    title = "HTTP server"

    host: str = Field(default="127.0.0.1", description="The address `serve` binds.")
    port: int = Field(default=8000, ge=1, le=65535, description="The port `serve` binds.")
    workers: int = Field(default=1, ge=1, description="Worker processes of `serve`.")
    request_head_timeout_seconds: float = Field(
        default=DEFAULT_REQUEST_HEAD_TIMEOUT_SECONDS,
        gt=0,
        le=MAX_REQUEST_HEAD_TIMEOUT_SECONDS,
        description="A connection that has not sent a whole request head by then is closed.",
    )
    ui: Literal["on", "off"] = Field(
        default="on",
        description="The web inspector at /ui: `off` leaves it out (404).",
    )

    @field_validator("host")
    @classmethod
    def _refuse_a_port_or_scheme(cls, host: str) -> str:
        # Empty binds every interface, as 0.0.0.0 does.
        if not host or _is_ip_address(host) or split_host(host) == (host.lower(), None):
            return host
        raise ValueError(
            f"{host!r} is not an address or a host name: write one such as 127.0.0.1, "
            "0.0.0.0 or ::, without a scheme or port (the port is SESSION_STATE_PORT)"
        )


def _is_ip_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
