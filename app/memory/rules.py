"""Pure rules of long-term memory: what text an event contributes, the id of
an event given without one, and how a question's terms become full-text
queries."""

import hashlib
from datetime import UTC, datetime
from typing import Any

from ..core import json_codec
from .search_text import QueryTerms


def event_text(document: dict[str, Any]) -> str | None:
    """The text parts of an event's content, joined; None when it has none."""
    content = document.get("content")
    if not isinstance(content, dict):
        return None
    parts = content.get("parts")
    if not isinstance(parts, list):
        return None
    texts = [
        part["text"]
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"].strip()
    ]
    return "\n".join(texts) if texts else None


def without_thoughts(document: dict[str, Any]) -> dict[str, Any]:
    """The event with its content's thought parts left out (a model's
    reasoning, not what was said): what memory keeps of an event, as ADK's
    memory services (2.15) keep it."""
    content = document.get("content")
    if not isinstance(content, dict):
        return document
    parts = content.get("parts")
    if not isinstance(parts, list) or not any(_is_thought(part) for part in parts):
        return document
    visible = [part for part in parts if not _is_thought(part)]
    return {**document, "content": {**content, "parts": visible}}


def _is_thought(part: object) -> bool:
    return isinstance(part, dict) and part.get("thought") is True


def event_role(document: dict[str, Any]) -> str | None:
    content = document.get("content")
    role = content.get("role") if isinstance(content, dict) else None
    return role if isinstance(role, str) else None


def event_memory_id(document: dict[str, Any]) -> str:
    """The event's id; for an event without one, as ADK's SqliteMemoryService
    names it: a hash of author, timestamp and content, so that adding the same
    event twice stores it once."""
    event_id = document.get("id")
    if isinstance(event_id, str) and event_id:
        return event_id
    content = json_codec.dumps_text(document.get("content"))
    payload = f"{document.get('author') or ''}:{document.get('timestamp')}:{content}"
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def parse_iso_timestamp(text: str) -> float | None:
    """Epoch seconds of an ISO 8601 time (UTC when it names no zone), as
    MemoryEntry.timestamp carries it; None when it is not one."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.timestamp()
    except (OverflowError, OSError, ValueError):
        return None


# The keyword side ranks, per term of a question, only the user's
# KEYWORD_HITS_PER_TERM memories stored last (highest row id) that hold it.
# A term a user wrote in thousands of memories ("coffee" in a diary) would
# otherwise have each of its hits scored on every search (docs/performance.md,
# "Smaller memory figures behind the code"); beyond this many, memories
# stored earlier holding only that term are not keyword matches of the
# question. A rare term (a name, a place, an order number) has fewer hits
# than this, all ranked, so it still comes first; meaning (hybrid search)
# still finds the earlier ones.
KEYWORD_HITS_PER_TERM = 1_000


def fts5_queries(terms: QueryTerms) -> list[str]:
    """One SQLite FTS5 query per term: a quoted string (so no FTS5 operator in
    user input is ever interpreted), a prefix for a single character."""

    def quoted(term: str) -> str:
        return '"' + term.replace('"', '""') + '"'

    return [quoted(term) for term in (*terms.words, *terms.grams)] + [
        f"{quoted(prefix)} *" for prefix in terms.prefixes
    ]


def iso_timestamp(timestamp: float) -> str:
    """ISO 8601, as ADK's memory entries carry it for the model to read.
    Times outside what datetime shows (only in data stored before timestamps
    were checked) are shown as the nearest one it can."""
    try:
        return datetime.fromtimestamp(timestamp, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return (
            datetime.max.replace(tzinfo=UTC).isoformat()
            if timestamp > 0
            else (datetime.fromtimestamp(0, UTC).isoformat())
        )
