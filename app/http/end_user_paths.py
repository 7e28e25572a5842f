"""What an end-user token may reach, judged from the method and the path
alone (docs/security.md, "End-user tokens"): its own user's paths in the apps
it may use, and the few app paths whose rules are checked further where the
data is (batch appends, LangGraph threads and their batches and store, app state reads). Every
other path under /apps/ is refused, so a route added later is closed to
tokens until someone decides otherwise.

Segments are decoded one by one from the path as sent, as the API key check
and the routes decode them (app.http.encoded_paths)."""

from ..core.end_user_tokens import EndUser
from ..core.errors import Forbidden
from .encoded_paths import decode_segment

PROTECTED_PREFIX = "/apps/"
# App paths open to a token, by their first segment after the app, with the
# methods allowed; what the body names is checked by the feature.
_APP_PATHS: dict[str, frozenset[str]] = {
    "state": frozenset({"GET"}),  # the app's state, already merged into its sessions
    "appends": frozenset({"POST"}),  # each append must be to the token's user
    "threads": frozenset({"GET", "PUT", "POST", "DELETE"}),  # the thread's user must be it
    "thread-operations": frozenset({"POST"}),  # each batch's thread must be the user's
    "checkpoints": frozenset({"GET"}),  # userId must be the token's user
    "store": frozenset({"GET", "PUT", "POST", "DELETE"}),  # namespaces under the user
}
# Threads' paths that act on many threads at once, app-wide.
_THREAD_WIDE = (["prune"],)


def end_user_refusal(user: EndUser, method: str, path: str) -> Forbidden | None:
    """Why the token's user may not send `method` to `path` (under /apps/),
    or None."""
    segments = path[len(PROTECTED_PREFIX) :].split("/")
    app_name = decode_segment(segments[0])
    if not user.may_use(app_name):
        return Forbidden(f"the token is not allowed for app {app_name!r}")
    rest = segments[1:]
    if not rest or rest == [""]:
        return Forbidden("an end-user token may not erase or read an app as a whole")
    if rest[0] == "users":
        if len(rest) < 2 or not rest[1]:
            return Forbidden("an end-user token may not list an app's users")
        if decode_segment(rest[1]) != user.user_id:
            return Forbidden("an end-user token may only reach its own user's data")
        return None
    allowed = _APP_PATHS.get(rest[0])
    if allowed is None:
        return Forbidden(
            "an end-user token may not use app-wide operations (lists of every user's "
            "sessions, LangGraph runs): use an API key"
        )
    if method not in allowed:
        return Forbidden(f"an end-user token may not {method} this path")
    if rest[0] == "threads" and rest[1:] in _THREAD_WIDE and method == "POST":
        return Forbidden("an end-user token may not prune threads app-wide: use an API key")
    return None
