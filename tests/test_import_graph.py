"""The server's modules import each other without circles, and each layer
imports only its own and those beneath it (docs/design.md, "Layers"): core,
then db, then http, then the features, then the composition root; among the
features, sessions import no other.

The graph is read from the sources with `ast`, not from what Python happens to
have imported: every `import` and `from ... import` counts, relative ones
resolved, including those inside functions and under `if TYPE_CHECKING:`, since
a late or type-only import is a circle put off, not one avoided."""

import ast
from collections.abc import Mapping, Set
from pathlib import Path

import pytest

APP = Path(__file__).parent.parent / "app"
# The server's package is the folder app/, installed as session_state.
PACKAGE_NAMES = ("app", "session_state")

# The foundation: what every feature and the HTTP layer build on. Every module
# of app.core imports only others of app.core (and libraries): no feature
# module and nothing of app.http.
FOUNDATION_PACKAGE = "app.core"


def foundation(graph: Mapping[str, object]) -> frozenset[str]:
    return frozenset(
        module
        for module in graph
        if module == FOUNDATION_PACKAGE or module.startswith(FOUNDATION_PACKAGE + ".")
    )


Graph = Mapping[str, Set[str]]

FEATURES = frozenset(
    {
        "app.sessions",
        "app.memory",
        "app.streams",
        "app.langgraph",
        "app.lifecycle",
        "app.admin",
        "app.transfer",
        "app.inspector",
        "app.encryption",
    }
)
# Bottom first: a module may import its own layer's modules and those of the
# layers beneath it, never one above.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("core", frozenset({"app.core"})),
    ("db", frozenset({"app.db"})),
    ("http", frozenset({"app.http"})),
    ("features", FEATURES),
    # What wires the rest: the app factory, the store's whole and its
    # backends, the schema's whole, the command line, and the package's own
    # __init__ (its version).
    (
        "composition root",
        frozenset({"app", "app.main", "app.stores", "app.schema", "app.backends", "app.cli"}),
    ),
)
# Every other feature builds on sessions (a memory is of a session's events,
# a stream follows sessions, ...): sessions build on none of them.
BASE_FEATURE = "app.sessions"

# Sessions' imports of other features that are known and allowed: none.
# An entry here must still hold (the test below fails on one that does not).
KNOWN_SESSIONS_IMPORTS: dict[str, frozenset[str]] = {}


def is_in(module: str, package: str) -> bool:
    return module == package or (package != "app" and module.startswith(package + "."))


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the layer holding `module`; None if none does."""
    for index, (_, packages) in enumerate(LAYERS):
        if any(is_in(module, package) for package in packages):
            return index
    return None


def feature_of(module: str) -> str | None:
    return next((package for package in FEATURES if is_in(module, package)), None)


def imports_above(graph: Graph) -> dict[str, list[str]]:
    """Each module's imports of modules in a layer above its own."""
    found = {}
    for module in sorted(graph):
        own = layer_of(module)
        above = sorted(
            target for target in graph[module] if own is not None and (layer_of(target) or 0) > own
        )
        if above:
            found[module] = above
    return found


def sessions_imports_of_other_features(graph: Graph) -> dict[str, frozenset[str]]:
    found = {}
    for module in sorted(graph):
        if not is_in(module, BASE_FEATURE):
            continue
        others = frozenset(
            target for target in graph[module] if feature_of(target) not in (None, BASE_FEATURE)
        )
        if others:
            found[module] = others
    return found


def module_name(path: Path, root: Path = APP) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _own_module(name: str, modules: Set[str]) -> str | None:
    """The server's module that importing `name` runs: `name` itself, else the
    module holding it (`app.sessions.tables.sessions` is `app.sessions.tables`); None for
    a library."""
    first, _, rest = name.partition(".")
    if first not in PACKAGE_NAMES:
        return None
    name = ".".join(["app", rest]) if rest else "app"
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, is_package: bool, source: str, modules: Set[str]) -> set[str]:
    """The server's modules that `module` imports, anywhere in its source."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            # `from package import module` imports the module; any other name
            # comes from the module `origin` names.
            names = [f"{origin}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            target = _own_module(name, modules)
            if target is not None and target != module:
                found.add(target)
    return found


def import_graph(root: Path = APP) -> dict[str, set[str]]:
    paths = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    return {
        module: imports_of(module, path.name == "__init__.py", path.read_text(), set(paths))
        for module, path in paths.items()
    }


def find_circles(graph: Graph) -> list[list[str]]:
    """One circle (first module repeated last) for each group of modules that
    reach each other (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                lowest[module] = min(lowest[module], lowest[target])
            elif target in on_stack:
                lowest[module] = min(lowest[module], index[target])
        if lowest[module] == index[module]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(group)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(_circle_in(group, graph) for group in groups)


def _circle_in(group: set[str], graph: Graph) -> list[str]:
    """The shortest way from the group's first module back to itself."""
    start = min(group)
    paths = {target: [start, target] for target in graph[start] if target in group}
    while start not in paths:
        paths = {
            target: [*path, target]
            for module, path in sorted(paths.items(), reverse=True)
            for target in graph[module]
            if target in group
        }
    return paths[start]


def test_every_form_of_import_is_read() -> None:
    modules = {"app", "app.a", "app.b", "app.e", "app.f", "app.pkg", "app.pkg.c", "app.pkg.d"}
    source = """
from typing import TYPE_CHECKING
import json
import app.a
from session_state.b import something
from . import c
from .d import name as other_name

if TYPE_CHECKING:
    from ..e import OnlyATypeHere


def later() -> None:
    from ..f import late
"""
    assert imports_of("app.pkg.x", False, source, modules) == {
        "app.a",
        "app.b",
        "app.pkg.c",
        "app.pkg.d",
        "app.e",
        "app.f",
    }
    # A package's own __init__ is one level up from itself, not from its parent.
    assert imports_of("app.pkg", True, "from .c import z", modules) == {"app.pkg.c"}
    # A name that is no module comes from the package that holds it.
    assert imports_of("app.pkg.x", False, "from . import helper", modules) == {"app.pkg"}


def test_a_circle_is_found_and_shown_whole() -> None:
    graph = {
        "app.a": {"app.b"},
        "app.b": {"app.c", "app.d"},
        "app.c": {"app.a"},
        "app.d": set(),
        "app.e": {"app.a", "app.f"},
        "app.f": {"app.e"},
    }
    assert find_circles(graph) == [
        ["app.a", "app.b", "app.c", "app.a"],
        ["app.e", "app.f", "app.e"],
    ]
    assert find_circles({"app.a": {"app.b"}, "app.b": set()}) == []


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_server_has_no_import_circles(graph: dict[str, set[str]]) -> None:
    # The graph is the server's: every module, with the imports that wire them.
    assert len(graph) > 100
    assert sum(map(len, graph.values())) > 500
    assert "app.core.config" in graph["app.main"]
    circles = find_circles(graph)
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_foundation_imports_only_the_foundation(graph: dict[str, set[str]]) -> None:
    FOUNDATION = foundation(graph)
    assert {"app.core.config", "app.core.errors", "app.core.json_rules"} <= FOUNDATION
    above = {
        module: sorted(graph[module] - FOUNDATION)
        for module in sorted(FOUNDATION)
        if graph[module] - FOUNDATION
    }
    assert not above, f"foundation modules importing modules above the foundation: {above}"


def test_layers_are_read_as_written() -> None:
    assert layer_of("app.core.config") == 0
    assert layer_of("app.db.engine") == 1
    assert layer_of("app.http.problems") == 2
    assert layer_of("app.langgraph.store.routes") == 3
    assert layer_of("app.cli.main") == layer_of("app") == layer_of("app.stores") == 4
    # "app" is the package's own module, not a prefix of every module.
    assert layer_of("app.elsewhere") is None
    graph = {
        "app.core.a": {"app.http.b"},
        "app.http.b": {"app.core.a", "app.sessions.c"},
        "app.sessions.c": {"app.http.b", "app.memory.d"},
        "app.memory.d": {"app.sessions.c", "app.main"},
        "app.main": {"app.memory.d"},
    }
    assert imports_above(graph) == {
        "app.core.a": ["app.http.b"],
        "app.http.b": ["app.sessions.c"],
        "app.memory.d": ["app.main"],
    }
    assert sessions_imports_of_other_features(graph) == {"app.sessions.c": {"app.memory.d"}}


def test_every_module_has_a_layer(graph: dict[str, set[str]]) -> None:
    assert [module for module in sorted(graph) if layer_of(module) is None] == []


def test_no_layer_imports_a_layer_above_it(graph: dict[str, set[str]]) -> None:
    above = imports_above(graph)
    assert not above, "imports of a layer above the importer's:\n" + "\n".join(
        f"{module} -> {', '.join(targets)}" for module, targets in above.items()
    )


def test_sessions_import_no_other_feature(graph: dict[str, set[str]]) -> None:
    found = sessions_imports_of_other_features(graph)
    unknown = {
        module: sorted(targets - KNOWN_SESSIONS_IMPORTS.get(module, frozenset()))
        for module, targets in found.items()
        if targets - KNOWN_SESSIONS_IMPORTS.get(module, frozenset())
    }
    assert not unknown, f"sessions modules importing other features: {unknown}"


def test_the_known_exceptions_still_hold(graph: dict[str, set[str]]) -> None:
    """An exception whose import is gone is struck from the list, so that the
    import cannot come back unnoticed."""
    found = sessions_imports_of_other_features(graph)
    gone = {
        module: sorted(targets - found.get(module, frozenset()))
        for module, targets in KNOWN_SESSIONS_IMPORTS.items()
        if targets - found.get(module, frozenset())
    }
    assert not gone, f"no longer imported, strike from KNOWN_SESSIONS_IMPORTS: {gone}"
