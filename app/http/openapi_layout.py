"""How the spec reads in Swagger UI and ReDoc: the tags in the order a
newcomer needs them, each described; a session's create first among the
sessions' operations; no titles pydantic makes up from field names
("Ttlseconds"), which say nothing the name does not."""

from typing import Any

# In this order, sessions first; a tag not listed comes after them.
TAGS: list[dict[str, str]] = [
    {
        "name": "sessions",
        "description": "Create, read, list, fork and delete sessions; append events, "
        "whose state deltas change the session's, app: and user: state.",
    },
    {"name": "streams", "description": "Follow sessions' changes live (Server-Sent Events)."},
    {"name": "memory", "description": "Long-term memory: add, search by meaning, delete."},
    {"name": "apps and users", "description": "Which apps and users have live sessions."},
    {"name": "erasure", "description": "Erase everything stored of a user or an app."},
    {"name": "langgraph", "description": "LangGraph's checkpointer: threads and checkpoints."},
    {"name": "langgraph store", "description": "LangGraph's BaseStore: namespaced items."},
    {"name": "health", "description": "Liveness and readiness, for orchestrators."},
    {"name": "operations", "description": "Metrics and the documentation itself."},
]
# The sessions' collection path: its create is the first operation shown.
_SESSIONS_PATH = "/apps/{app_name}/users/{user_id}/sessions"


def laid_out(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with the tags described and ordered, the paths in tag order
    (Swagger UI lists a tag's operations in path order) and no generated
    property or parameter titles."""
    rank = {tag["name"]: index for index, tag in enumerate(TAGS)}
    used = {tag for item in spec["paths"].values() for op in item.values() for tag in op["tags"]}
    spec["tags"] = [tag for tag in TAGS if tag["name"] in used] + [
        {"name": name} for name in sorted(used - rank.keys())
    ]

    def path_rank(entry: tuple[int, tuple[str, Any]]) -> tuple[int, int, int]:
        index, (path, item) = entry
        tags = [tag for op in item.values() for tag in op["tags"]]
        first = min((rank.get(tag, len(rank)) for tag in tags), default=len(rank))
        return first, 0 if path == _SESSIONS_PATH else 1, index

    ordered = sorted(enumerate(spec["paths"].items()), key=path_rank)
    spec["paths"] = {path: item for _index, (path, item) in ordered}
    collection = spec["paths"].get(_SESSIONS_PATH)
    if collection is not None and "post" in collection:
        spec["paths"][_SESSIONS_PATH] = {"post": collection["post"]} | collection
    _drop_generated_titles(spec)
    return spec


def _drop_generated_titles(node: Any) -> None:
    if isinstance(node, dict):
        for schema in (node.get("properties") or {}).values():
            if isinstance(schema, dict):
                schema.pop("title", None)
        if "in" in node and isinstance(node.get("schema"), dict):  # a parameter
            node["schema"].pop("title", None)
        for value in node.values():
            _drop_generated_titles(value)
    elif isinstance(node, list):
        for item in node:
            _drop_generated_titles(item)
