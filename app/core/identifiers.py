"""Which strings are identifiers (app names, user ids, session ids): the one
rule, read by the path parameters, the request bodies, the append fast path and
the OpenAPI document.

ADK's session services take any string. This service refuses only what it
cannot store and give back exactly, or what names nothing:

- the empty string (and so an empty path segment);
- more than 128 characters (code points: the columns are VARCHAR(128));
- control characters (C0 with NUL, DEL, C1): PostgreSQL cannot store NUL, and
  the others are never meant as part of a name;
- lone surrogates (U+D800 to U+DFFF), which have no UTF-8 encoding.

App names and user ids are taken as given, surrounding spaces included, as ADK
takes them. ADK strips surrounding whitespace from a session id (its
`'order-42\\n'` is `'order-42'`); here such an id is refused rather than
stripped, so that two different ids never name one stored row, and ADK's
clients (session_state_client.adk) strip before they send.
"""

import re
from dataclasses import dataclass

IDENTIFIER_MAX_LENGTH = 128

_CHARACTER = r"[^\x00-\x1f\x7f-\x9f\ud800-\udfff]"
# In Python's `re` (the engine that checks), `\s` is exactly what str.strip()
# removes.
_CHARACTER_NOT_SPACE = r"[^\s\x00-\x1f\x7f-\x9f\ud800-\udfff]"
NAME_PATTERN = f"^{_CHARACTER}{{1,{IDENTIFIER_MAX_LENGTH}}}$"
SESSION_ID_PATTERN = (
    f"^{_CHARACTER_NOT_SPACE}"
    f"(?:{_CHARACTER}{{0,{IDENTIFIER_MAX_LENGTH - 2}}}{_CHARACTER_NOT_SPACE})?$"
)
NAME_RULE = "1 to 128 characters, none of them a control character"
SESSION_ID_RULE = f"{NAME_RULE}, without surrounding whitespace"

# fullmatch, not match: `$` also matches before a final newline.
_NAME = re.compile(NAME_PATTERN)
_SESSION_ID = re.compile(SESSION_ID_PATTERN)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def name_problem(text: str) -> str | None:
    """Why `text` is not an app name or user id, or None."""
    if _NAME.fullmatch(text):
        return None
    return _problem(text)


def session_id_problem(text: str) -> str | None:
    """Why `text` is not a session id, or None."""
    if _SESSION_ID.fullmatch(text):
        return None
    problem = _problem(text)
    if problem is None:
        return "a session id has no surrounding whitespace (ADK strips it)"
    return problem


def _problem(text: str) -> str | None:
    if not text:
        return "an identifier is at least 1 character"
    if len(text) > IDENTIFIER_MAX_LENGTH:
        return f"an identifier is at most {IDENTIFIER_MAX_LENGTH} characters"
    if _CONTROL.search(text):
        return "an identifier holds no control characters (U+0000 to U+001F, U+007F to U+009F)"
    if _SURROGATE.search(text):
        return "an identifier holds no lone surrogate (U+D800 to U+DFFF)"
    return None


@dataclass(frozen=True)
class SessionKey:
    """A session's name: the app, the user and the session id together."""

    app_name: str
    user_id: str
    session_id: str
