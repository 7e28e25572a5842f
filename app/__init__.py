"""session-state: sessions, events and scoped state of AI agents behind a REST API."""

__version__ = "0.1.0"
