"""Request ids and JSON logs.

The request id lives in a context variable for the duration of a request, so
every log line and every problem body of that request carries it.
"""

import json
import logging
import re
import time
import traceback
import uuid
from contextvars import ContextVar
from typing import Any

from fastapi.telemetry import TelemetryConfig
from opentelemetry import _logs, metrics, trace

REQUEST_ID_HEADER = "X-Request-ID"
# Accept a caller's id only if it is short and printable: it ends up in logs.
_ACCEPTABLE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")

current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)


# What OpenTelemetry's global getters answer until a provider is set: the
# API has no public "is configured" query (FastAPI asks the same way).
_UNSET_PROVIDERS = frozenset({"ProxyTracerProvider", "_ProxyMeterProvider", "ProxyLoggerProvider"})


def fastapi_telemetry() -> TelemetryConfig:
    """FastAPI's own OpenTelemetry (spans, metrics, logs per request), left
    on when this process has a provider when the app is made (as
    `opentelemetry-instrument` sets them, before any app), off otherwise:
    left to decide, FastAPI looks for providers on every request, a cost
    on the hot path (docs/performance.md, "Server CPU per append")."""
    providers = (trace.get_tracer_provider(), metrics.get_meter_provider())
    if any(
        type(p).__name__ not in _UNSET_PROVIDERS for p in (*providers, _logs.get_logger_provider())
    ):
        return {}
    return {"tracing": False, "metrics": False, "logs": False}


def request_id_from(header_value: str | None) -> str:
    if header_value and _ACCEPTABLE_REQUEST_ID.match(header_value):
        return header_value
    return uuid.uuid4().hex


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, extras."""

    # uvicorn adds `color_message`, the message with terminal colour codes.
    _RESERVED = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
        "message",
        "color_message",
    }

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = current_request_id.get()
        if request_id is not None:
            line["request_id"] = request_id
        for key, value in record.__dict__.items():
            if key not in self._RESERVED and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def logging_config(level: str, json_logs: bool) -> dict[str, Any]:
    """A dictConfig for our loggers and uvicorn's (whose access log we replace)."""
    formatter = (
        {"()": JsonFormatter} if json_logs else {"format": "%(levelname)s %(name)s %(message)s"}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "handlers": {
            "default": {
                "class": "logging.StreamHandler",
                "formatter": "default",
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            "session_state": {"handlers": ["default"], "level": level.upper(), "propagate": False},
            # The audit trail is kept whatever the level (app.core.audit).
            "session_state.audit": {"level": "INFO"},
            "uvicorn": {"handlers": ["default"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            # Drivers log statements with their parameters (users' data) at
            # debug: never at a level we emit, whatever ours is.
            "aiosqlite": {"level": "WARNING"},
            "asyncpg": {"level": "WARNING"},
            "sqlalchemy": {"level": "WARNING"},
        },
    }


def trace_without_data(error: BaseException) -> str:
    """Where an error happened: exception types and frames, never messages.

    Database drivers put statement parameters and offending values in their
    messages (SQLAlchemy's "[parameters: ...]", PostgreSQL's DETAIL), and
    those are users' data: state, memory text, queries.
    """
    lines: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        lines.append(f"{type(current).__module__}.{type(current).__qualname__}")
        for frame in traceback.extract_tb(current.__traceback__):
            lines.append(f"  {frame.filename}:{frame.lineno} in {frame.name}")
        current = current.__cause__ or current.__context__
    return "\n".join(lines)
