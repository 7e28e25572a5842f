"""Who may call the API: API keys, and in open mode (no keys) the host names
and browser origins let in."""

from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from ..api_keys import ApiKeys
from ..host_names import split_host
from .group import SettingGroup, split_comma_separated


class AccessSettings(SettingGroup):
    """API keys and the apps each may use; the Host names and browser origins
    accepted."""

    title = "Access control"

    api_keys: dict[str, list[str]] = Field(
        default_factory=dict,
        description='JSON object: API key -> app names it may use, ["*"] for all apps.',
    )
    api_keys_file: Path | None = Field(
        default=None, description="A JSON file of the same shape as api_keys, merged with it."
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Host names (comma-separated) accepted in the Host header in open mode, "
        "besides localhost and the bound address; '*' accepts any.",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Origins (comma-separated, as https://ui.example.com) allowed to call "
        "the API from a browser (CORS); in open mode they also pass the browser guard.",
    )

    @field_validator("api_keys")
    @classmethod
    def _refuse_unsafe_keys(cls, keys: dict[str, list[str]]) -> dict[str, list[str]]:
        ApiKeys(keys)  # its refusal names the rule, never the key
        return keys

    @field_validator("api_keys_file")
    @classmethod
    def _refuse_an_unreadable_keys_file(cls, file: Path | None) -> Path | None:
        if file is not None:
            ApiKeys.from_settings({}, file)
        return file

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        hosts = split_comma_separated(value)
        return [host.lower() for host in hosts] if isinstance(hosts, list) else hosts

    @field_validator("allowed_hosts")
    @classmethod
    def _refuse_what_is_no_host(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if host != "*" and split_host(host) is None:
                raise ValueError(
                    f"{host!r} is not a host name: write names such as api or "
                    "api.example.com (a port may follow), comma-separated, or *"
                )
        return hosts

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        origins = split_comma_separated(value)
        return [origin.rstrip("/") for origin in origins] if isinstance(origins, list) else origins

    @field_validator("cors_origins")
    @classmethod
    def _refuse_what_is_no_origin(cls, origins: list[str]) -> list[str]:
        for origin in origins:
            scheme, separator, rest = origin.partition("://")
            if scheme not in ("http", "https") or not separator or not rest or "/" in rest:
                raise ValueError(
                    f"{origin!r} is not an origin: write scheme://host[:port], as "
                    "https://ui.example.com, comma-separated"
                )
        return origins
